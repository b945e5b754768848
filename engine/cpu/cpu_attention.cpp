// The CPU backend's attention and KV storage (cpu_backend.h, kv_cache.h): slots in host memory,
// f32 or affine-coded rows; attention per token (the query heads of a KV head together: kernel-set
// dot, then gemm_f32) or batched (per head and block of queries: scores and values as f32 matrix
// products, gemm_f32 or OpenBLAS).
#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "engine/cpu/cpu_backend.h"
#include "engine/kv_quant.h"

namespace kakeya::engine {
namespace {

// Least multiply-adds per attention job worth handing to another thread.
constexpr size_t kMinParallelAttentionMacs = size_t{64} << 10;
// Queries per task of batched attention (with the heads, the tasks that keep both cores busy).
constexpr size_t kAttentionQueryBlock = 64;

AffineRowCodec codec_of(const KvRowFormat& f) { return AffineRowCodec(f.values, f.group, f.bits); }

// Softmax in place over a row's visible slots [0, a) and [b, c) (the others are left as they are):
// shift by their maximum, e^x and the float64 sum of exp_sum_f32, then times 1/sum in f32
// (scale_f32: the kernel set's width; the loop here had compiled to one scalar multiply and store
// per slot, 1.4% of the samples of a one-thread synth TinyLlama Q4_0 prefill of 1024 tokens and
// decode of 128 after it on the Zen 5 EPYC VM, 0.3% since).
void softmax_visible(float* row, const KvVisibleRanges& r) {
  const float mx = max_f32(row + r.b, r.c - r.b, max_f32(row, r.a, -INFINITY));
  const double sum = exp_sum_f32(row, static_cast<int64_t>(r.a), mx) +
                     exp_sum_f32(row + r.b, static_cast<int64_t>(r.c - r.b), mx);
  const float inv = static_cast<float>(1.0 / sum);
  scale_f32(row, static_cast<int64_t>(r.a), inv);
  scale_f32(row + r.b, static_cast<int64_t>(r.c - r.b), inv);
}

}  // namespace

// ---- storage ----

CpuKvBuffer::CpuKvBuffer(const KvRowFormat& format, size_t capacity, CpuByteCounter counter)
    : KvBuffer(format, capacity), counter_(std::move(counter)) {}

std::unique_ptr<CpuKvBuffer> CpuKvBuffer::allocate(const KvRowFormat& format, size_t capacity, CpuByteCounter counter) {
  std::unique_ptr<CpuKvBuffer> b(new CpuKvBuffer(format, capacity, std::move(counter)));
  const size_t rows = capacity * format.row_bytes();
  b->positions_ = static_cast<int32_t*>(std::malloc(std::max<size_t>(1, capacity) * sizeof(int32_t)));
  b->k_ = static_cast<uint8_t*>(std::malloc(std::max<size_t>(1, rows)));
  b->v_ = static_cast<uint8_t*>(std::malloc(std::max<size_t>(1, rows)));
  if (b->positions_ == nullptr || b->k_ == nullptr || b->v_ == nullptr) return nullptr;
  b->bytes_ = capacity * sizeof(int32_t) + 2 * rows;
  *b->counter_ += b->bytes_;
  return b;
}

CpuKvBuffer::~CpuKvBuffer() {
  *counter_ -= bytes_;
  std::free(positions_);
  std::free(k_);
  std::free(v_);
}

Result<std::unique_ptr<KvBuffer>> CpuBackend::alloc_kv(const KvRowFormat& format, size_t capacity) {
  if (format.bits != 32 && format.bits != 8 && format.bits != 4) {
    return make_error("unsupported_type", "cpu backend: KV storage of " + std::to_string(format.bits) +
                                              " bits (32, 8 or 4)");
  }
  auto b = CpuKvBuffer::allocate(format, capacity, allocated_);
  if (!b) {
    return make_error("out_of_memory", "cpu backend: cannot allocate KV storage of " + std::to_string(capacity) +
                                           " slots x " + std::to_string(format.row_bytes()) + " bytes");
  }
  return std::unique_ptr<KvBuffer>(std::move(b));
}

void CpuBackend::kv_store(KvBuffer& dst, size_t slot0, const Tensor& k, const Tensor& v,
                          std::span<const int32_t> positions, std::span<const size_t> heads, size_t head_dim) {
  auto& d = static_cast<CpuKvBuffer&>(dst);
  const KvRowFormat& f = d.format();
  const size_t row_bytes = f.row_bytes();
  const size_t stride = static_cast<size_t>(k.cols);
  const AffineRowCodec codec = f.bits == 32 ? AffineRowCodec() : codec_of(f);
  auto& gather = s_.gather;
  gather.resize(f.values);
  const float* src_k = f32(k);
  const float* src_v = f32(v);
  for (size_t t = 0; t < positions.size(); ++t) {
    d.positions()[slot0 + t] = positions[t];
    for (int kv = 0; kv < 2; ++kv) {
      const float* src = (kv == 0 ? src_k : src_v) + t * stride;
      for (size_t i = 0; i < heads.size(); ++i)
        std::memcpy(gather.data() + i * head_dim, src + heads[i] * head_dim, head_dim * sizeof(float));
      uint8_t* row = (kv == 0 ? d.k() : d.v()) + (slot0 + t) * row_bytes;
      if (f.bits == 32) {
        std::memcpy(row, gather.data(), row_bytes);
      } else {
        codec.encode(gather.data(), row);
      }
    }
  }
}

void CpuBackend::kv_copy(const KvBuffer& src, size_t src_slot, KvBuffer& dst, size_t dst_slot, size_t n) {
  const auto& s = static_cast<const CpuKvBuffer&>(src);
  auto& d = static_cast<CpuKvBuffer&>(dst);
  const size_t row_bytes = s.format().row_bytes();
  // memmove: compaction within one storage overlaps.
  std::memmove(d.positions() + dst_slot, s.positions() + src_slot, n * sizeof(int32_t));
  std::memmove(d.k() + dst_slot * row_bytes, s.k() + src_slot * row_bytes, n * row_bytes);
  std::memmove(d.v() + dst_slot * row_bytes, s.v() + src_slot * row_bytes, n * row_bytes);
}

void CpuBackend::kv_read(const KvBuffer& src, size_t slot0, size_t n, std::span<float> k, std::span<float> v,
                         std::span<int32_t> positions) {
  const auto& s = static_cast<const CpuKvBuffer&>(src);
  const KvRowFormat& f = s.format();
  const size_t row_bytes = f.row_bytes();
  if (!positions.empty()) std::copy_n(s.positions() + slot0, n, positions.data());
  for (auto [out, rows] : {std::pair{k, s.k()}, std::pair{v, s.v()}}) {
    if (out.empty()) continue;
    for (size_t i = 0; i < n; ++i) {
      const uint8_t* row = rows + (slot0 + i) * row_bytes;
      if (f.bits == 32) {
        std::memcpy(out.data() + i * f.values, row, row_bytes);
      } else {
        codec_of(f).decode(row, out.data() + i * f.values);
      }
    }
  }
}

// ---- attention ----

void CpuBackend::kv_slots(const AttentionArgs& args) {
  auto& views = s_.kv_views;
  views.assign(args.kv.size(), KvSlots{});
  // Quantized storage is decoded once per storage group (several heads share one) into scratch
  // sized before any pointer into it is taken.
  std::vector<const CpuKvBuffer*> decoded;
  size_t total = 0;
  for (const KvHeadView& h : args.kv) {
    const auto* s = static_cast<const CpuKvBuffer*>(h.storage);
    if (s == nullptr || s->format().bits == 32) continue;
    if (std::find(decoded.begin(), decoded.end(), s) != decoded.end()) continue;
    decoded.push_back(s);
    total += 2 * h.n_slots * s->format().values;
  }
  if (total > 0) s_.kv_dequant.resize(total);
  std::vector<const float*> decoded_k(decoded.size()), decoded_v(decoded.size());
  size_t off = 0;
  for (size_t i = 0; i < decoded.size(); ++i) {
    const CpuKvBuffer* s = decoded[i];
    const size_t n_slots = std::find_if(args.kv.begin(), args.kv.end(), [&](const KvHeadView& h) {
                             return h.storage == s;
                           })->n_slots;
    const size_t values = s->format().values;
    float* kd = s_.kv_dequant.data() + off;
    float* vd = kd + n_slots * values;
    kv_read(*s, 0, n_slots, std::span<float>(kd, n_slots * values), std::span<float>(vd, n_slots * values), {});
    decoded_k[i] = kd;
    decoded_v[i] = vd;
    off += 2 * n_slots * values;
  }
  for (size_t h = 0; h < args.kv.size(); ++h) {
    const KvHeadView& hv = args.kv[h];
    KvSlots& out = views[h];
    out.n_slots = hv.n_slots;
    out.sink = hv.sink;
    out.window = hv.window;
    if (hv.storage == nullptr) continue;
    const auto* s = static_cast<const CpuKvBuffer*>(hv.storage);
    const size_t values = s->format().values;
    out.row_stride = values;
    out.positions = s->positions();
    const size_t head_off = hv.index * static_cast<size_t>(args.head_dim);
    if (s->format().bits == 32) {
      out.k = reinterpret_cast<const float*>(s->k()) + head_off;
      out.v = reinterpret_cast<const float*>(s->v()) + head_off;
    } else {
      const size_t i = static_cast<size_t>(std::find(decoded.begin(), decoded.end(), s) - decoded.begin());
      out.k = decoded_k[i] + head_off;
      out.v = decoded_v[i] + head_off;
    }
  }
}

void CpuBackend::attention(const Tensor& q, const AttentionArgs& args, const Tensor& out) {
  kv_slots(args);
  switch (batch_path(args.positions.size())) {
    case BatchPath::kExact: return attention_per_token(f32(q), args, f32(out));
    case BatchPath::kGemm: return attention_batched(f32(q), args, f32(out), false);
    case BatchPath::kSgemm: return attention_batched(f32(q), args, f32(out), true);
  }
}

void CpuBackend::attention_batched(const float* q, const AttentionArgs& args, float* out, bool openblas) {
  // Per query head h and block of queries [t0, t1): S = Q_h·K_g^T over the slots visible to the
  // block's last query (positions ascend, so no earlier query sees more), masked softmax per row,
  // O_h = P·V_g. Each KV head has its own view (bounded policies): a row sees the slots of
  // kv_visible_ranges, the others get probability 0.
  const auto& views = s_.kv_views;
  const size_t n = args.positions.size();
  const size_t hd = static_cast<size_t>(args.head_dim);
  const size_t n_head = static_cast<size_t>(args.n_head);
  const int64_t gqa = args.n_head / args.n_head_kv;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  const size_t q_stride = n_head * hd;
  const size_t n_blocks = (n + kAttentionQueryBlock - 1) / kAttentionQueryBlock;
  // C = alpha · A · B(j, k) (gemm.h's convention) on this thread; OpenBLAS runs single-threaded.
  auto product = [&](size_t m, size_t cols, size_t k, float alpha, const float* a, size_t lda, const float* b,
                     size_t ldb, bool b_rows, float* c, size_t ldc, int thread) {
    if (!openblas) {
      gemm_f32(static_cast<int64_t>(m), static_cast<int64_t>(cols), static_cast<int64_t>(k), alpha, a, lda, b, ldb,
               b_rows, c, ldc, s_.gemm[static_cast<size_t>(thread)]);
      return;
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, b_rows ? CblasTrans : CblasNoTrans, static_cast<int>(m),
                static_cast<int>(cols), static_cast<int>(k), alpha, a, static_cast<int>(lda), b, static_cast<int>(ldb),
                0.0f, c, static_cast<int>(ldc));
  };
  pool_.parallel_for(n_head * n_blocks, [&](size_t task, int thread) {
    const size_t h = task / n_blocks;
    const size_t t0 = (task % n_blocks) * kAttentionQueryBlock, t1 = std::min(n, t0 + kAttentionQueryBlock);
    const KvSlots& slots = views[static_cast<size_t>(static_cast<int64_t>(h) / gqa)];
    const size_t S = kv_visible_ranges(slots, args.positions[t1 - 1]).c;
    auto& scores = s_.thread_scores[static_cast<size_t>(thread)];
    if (scores.size() < (t1 - t0) * std::max<size_t>(S, 1)) scores.resize((t1 - t0) * std::max<size_t>(S, 1));
    product(t1 - t0, S, hd, scale, q + t0 * q_stride + h * hd, q_stride, slots.k, slots.row_stride, true,
            scores.data(), S, thread);
    for (size_t t = t0; t < t1; ++t) {
      float* row = scores.data() + (t - t0) * S;
      const KvVisibleRanges r = kv_visible_ranges(slots, args.positions[t]);
      softmax_visible(row, r);
      std::fill(row + r.a, row + r.b, 0.0f);
      std::fill(row + r.c, row + S, 0.0f);
    }
    product(t1 - t0, hd, S, 1.0f, scores.data(), S, slots.v, slots.row_stride, false, out + t0 * q_stride + h * hd,
            q_stride, thread);
  });
}

void CpuBackend::attention_per_token(const float* q, const AttentionArgs& args, float* out) {
  // Per token t and KV head g, the query heads that share g (grouped-query attention: heads
  // [g·gqa, (g+1)·gqa), adjacent in q and out) on one thread, so that each K and V row is fetched
  // from memory once for the group instead of once per head:
  //   scores  s_h = scale · (q_h · K_s) over the slots [0, a) and [b, c) visible to t
  //           (kv_visible_ranges), dot_f32_rows, key_block slots for every head of the group
  //           before the next block (the block's K rows stay in L1);
  //   softmax per head over those slots, probability 0 in [a, b);
  //   output  O_g = P · V over the slots [0, c) by gemm_f32, every query head at once: each output
  //           element is one chain of rounded multiply-adds in slot order starting from 0 (a 0
  //           probability adds nothing), the same bits as the per-head rows this replaced.
  // Each output depends on its own token's query and view only, so a batch gives, bit for bit, what
  // its tokens give one at a time (BatchPath::kExact). When a token has fewer KV heads than the pool
  // has threads (one decode token of a model with few KV heads), each group is split into parts of
  // its query heads, which changes no output either.
  // On the 2-core AMD EPYC (Zen 4) VM, synth TinyLlama Q4_0 (32 query heads, 4 KV heads), decode of
  // 32 tokens after a 1536-token prompt, alternating with the per-head version (same text): one
  // thread 16.5-17.6 -> 25.8-25.9 tok/s, two 30.3-30.6 -> 34.6-36.0 (llama.cpp c392e50's
  // llama-batched-bench -npp 1536 -ntg 32: 17.7 and 25.4-29.7). Under 1% of a decode from an
  // empty cache was attention, before and after.
  // A key block holds about 4 KiB of one head's K rows, at least 8 rows (one horizontal sum of
  // the AVX sets' dot_f32_rows). A slot's row holds every KV head, so the rows of a block lie a
  // power of two apart and fall into few L1 sets: 64 rows of 64 floats (the block before) did not
  // stay in L1 for the next head of the group. On the 2-core AMD EPYC (Zen 5) VM, the scores of 4
  // query heads over 512 slots (medians of 300): head size 64 with 4 KV heads 10.7 -> 10.0 us (AVX2
  // set) and 7.7 -> 6.8 (AVX-512 set), head size 128 with 8 KV heads 19.2 -> 18.7 and 15.4 -> 12.5.
  const auto& views = s_.kv_views;
  const size_t n = args.positions.size();
  const size_t hd = static_cast<size_t>(args.head_dim);
  const size_t key_block = std::max<size_t>(8, 4096 / (std::max<size_t>(1, hd) * sizeof(float)));
  const size_t n_head = static_cast<size_t>(args.n_head);
  const size_t n_head_kv = static_cast<size_t>(args.n_head_kv);
  const size_t gqa = n_head / n_head_kv;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  const size_t q_stride = n_head * hd;
  const size_t threads = static_cast<size_t>(pool_.n_threads());
  const size_t parts = std::min(gqa, (threads + n * n_head_kv - 1) / (n * n_head_kv));
  const size_t part_heads = (gqa + parts - 1) / parts;
  auto group_task = [&](size_t task, int thread) {
    const size_t t = task / (n_head_kv * parts);
    const size_t g = task / parts % n_head_kv;
    const size_t h0 = g * gqa + task % parts * part_heads;
    const size_t m = std::min(part_heads, (g + 1) * gqa - h0);
    const KvSlots& slots = views[g];
    const KvVisibleRanges r = kv_visible_ranges(slots, args.positions[t]);
    const size_t S = r.c, stride = slots.row_stride;
    auto& scores = s_.thread_scores[static_cast<size_t>(thread)];
    scores.resize(std::max(scores.size(), m * std::max<size_t>(S, 1)));
    const float* qg = q + t * q_stride + h0 * hd;
    for (auto [lo, hi] : {std::pair{size_t{0}, r.a}, std::pair{r.b, r.c}}) {
      for (size_t s0 = lo; s0 < hi; s0 += key_block) {
        const size_t rows = std::min(key_block, hi - s0);
        for (size_t i = 0; i < m; ++i)
          dot_f32_rows(qg + i * hd, slots.k + s0 * stride, stride, rows, static_cast<int64_t>(hd),
                       scores.data() + i * S + s0);
      }
    }
    for (size_t i = 0; i < m; ++i) {
      float* row = scores.data() + i * S;
      for (size_t s = 0; s < r.a; ++s) row[s] *= scale;
      for (size_t s = r.b; s < r.c; ++s) row[s] *= scale;
      softmax_visible(row, r);
      std::fill(row + r.a, row + r.b, 0.0f);
    }
    gemm_f32(static_cast<int64_t>(m), static_cast<int64_t>(hd), static_cast<int64_t>(S), 1.0f, scores.data(), S,
             slots.v, stride, false, out + t * q_stride + h0 * hd, hd, s_.gemm[static_cast<size_t>(thread)]);
  };
  // Work of all jobs: ~2 multiply-adds per visible slot and head dimension (upper bound: every
  // slot of the first head's view).
  const size_t tasks = n * n_head_kv * parts;
  const size_t macs = 2 * n_head * n * views[0].n_slots * hd;
  if (macs < kMinParallelAttentionMacs) {
    for (size_t task = 0; task < tasks; ++task) group_task(task, 0);
  } else {
    pool_.parallel_for(tasks, group_task);
  }
}

}  // namespace kakeya::engine
