#include "engine/llama.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "engine/cpu/quant.h"

namespace kakeya::engine {
namespace {

// Floats of one dequantized weight tile for the sgemm path (8 MiB).
constexpr size_t kTileFloats = size_t{2} << 20;
// Bytes of weight rows reused across the tokens of a quantized-activation batch (about half of
// a typical 1 MiB L2; see matmul_quantized).
constexpr size_t kVerifyTileBytes = size_t{256} << 10;
// Least weight bytes per parallel range of a mat-vec, and least multiply-adds per attention
// job, worth handing to another thread.
constexpr size_t kMinRangeBytes = size_t{32} << 10;
constexpr size_t kMinParallelAttentionMacs = size_t{64} << 10;

// y = x / sqrt(mean(x²) + eps) · w (ggml rms_norm then mul; sum of squares in double).
void rms_norm(const float* x, const float* w, int64_t n, float eps, float* y) {
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(x[i]) * x[i];
  const float mean = static_cast<float>(sum / static_cast<double>(n));
  const float scale = 1.0f / std::sqrt(mean + eps);
  for (int64_t i = 0; i < n; ++i) y[i] = (x[i] * scale) * w[i];
}

// GGML rope mode 0 on n_heads heads of head_dim at one position (ggml_rope_cache_init).
void rope(float* x, int64_t n_heads, int64_t head_dim, int64_t rope_dim, float theta_scale,
          int32_t pos, float* cache) {
  float theta = static_cast<float>(pos);
  for (int64_t i0 = 0; i0 < rope_dim; i0 += 2) {
    cache[i0] = std::cos(theta);
    cache[i0 + 1] = std::sin(theta);
    theta *= theta_scale;
  }
  for (int64_t h = 0; h < n_heads; ++h) {
    float* v = x + h * head_dim;
    for (int64_t i0 = 0; i0 < rope_dim; i0 += 2) {
      const float c = cache[i0];
      const float s = cache[i0 + 1];
      const float x0 = v[i0];
      const float x1 = v[i0 + 1];
      v[i0] = x0 * c - x1 * s;
      v[i0 + 1] = x0 * s + x1 * c;
    }
  }
}

}  // namespace

struct LlamaContext::Scratch {
  size_t cap = 0;  // tokens
  std::vector<float> x, xn, q, k, v, att, tmp, gate, up, logits;
  std::vector<int32_t> positions;
  std::vector<ActivationBuffer> acts;            // [cap]
  std::vector<float> tile;                       // sgemm path: dequantized rows
  std::vector<std::vector<float>> thread_scores;  // per thread: batched attention [n][n_slots]
  std::vector<std::vector<float>> thread_f32;    // per thread: attention scores + rope cache
  std::vector<KvSlots> kv_views;                 // attention: one view per KV head
  std::vector<float> kv_dequant;                 // attention: quantized KV read back as f32
};

LlamaContext::LlamaContext(const LlamaModel& model, ContextOptions options)
    : model_(model), options_(options) {
  const LlamaHparams& hp = model.hparams();
  if (options_.n_ctx == 0) options_.n_ctx = static_cast<size_t>(hp.n_ctx_train);
  options_.n_threads = std::max(1, options_.n_threads);
  options_.n_batch = std::max<size_t>(1, options_.n_batch);
  pool_ = std::make_unique<ThreadPool>(options_.n_threads);
  // OpenBLAS single-threaded: the pool splits every sgemm. OpenBLAS's own threads busy-wait
  // after each call (~0.1 s), which on a host shared with a busy process stole the CPU from the
  // decode that follows a prefill (decode at --threads 2 fell below --threads 1).
  openblas_set_num_threads(1);
  kv_ = std::make_unique<KvCache>(KvCacheShape{static_cast<size_t>(hp.n_layer),
                                               static_cast<size_t>(hp.n_head_kv),
                                               static_cast<size_t>(hp.head_dim), options_.n_ctx});
  s_ = std::make_unique<Scratch>();
  s_->thread_f32.resize(static_cast<size_t>(options_.n_threads));
  s_->thread_scores.resize(static_cast<size_t>(options_.n_threads));
  for (auto& buf : s_->thread_f32) buf.resize(options_.n_ctx + static_cast<size_t>(hp.head_dim));
}

LlamaContext::~LlamaContext() = default;

Result<std::vector<float>> LlamaContext::eval(std::span<const int32_t> tokens, bool all_logits) {
  drop_partial();
  return eval_impl(tokens, all_logits, model_.weights().layers.size());
}

Result<std::vector<float>> LlamaContext::eval_layers(std::span<const int32_t> tokens,
                                                     size_t n_layers, bool all_logits) {
  const size_t n_layer = model_.weights().layers.size();
  if (n_layers < 1 || n_layers > n_layer) {
    return make_error("bad_param", "eval_layers: n_layers " + std::to_string(n_layers) +
                                       " outside [1, " + std::to_string(n_layer) + "]");
  }
  if (partial_tokens_ > 0 && n_layers != partial_layers_) {
    return make_error("bad_param", "eval_layers: n_layers " + std::to_string(n_layers) +
                                       " while " + std::to_string(partial_tokens_) +
                                       " partial tokens of " + std::to_string(partial_layers_) +
                                       " layers are pending");
  }
  if (n_layers == n_layer) return eval(tokens, all_logits);
  if (tokens.size() + partial_tokens_ > kv_->n_free()) {
    return make_error("context_overflow", "eval_layers: " + std::to_string(n_past()) + " past + " +
                                              std::to_string(partial_tokens_) + " partial + " +
                                              std::to_string(tokens.size()) +
                                              " new tokens exceed n_ctx " +
                                              std::to_string(options_.n_ctx));
  }
  partial_layers_ = n_layers;
  return eval_impl(tokens, all_logits, n_layers);
}

void LlamaContext::drop_partial() {
  if (partial_tokens_ == 0) return;
  for (size_t il = 0; il < partial_layers_; ++il) kv_->layer(il).truncate(kv_->n_committed());
  partial_tokens_ = 0;
  partial_layers_ = 0;
}

Result<std::vector<float>> LlamaContext::eval_impl(std::span<const int32_t> tokens, bool all_logits,
                                                   size_t n_layers) {
  if (tokens.empty()) return make_error("empty_input", "eval: no tokens");
  const int64_t n_vocab = model_.hparams().n_vocab;
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i] < 0 || tokens[i] >= n_vocab) {
      return make_error("bad_token", "eval: token " + std::to_string(i) + " has id " +
                                         std::to_string(tokens[i]) + ", outside [0, " +
                                         std::to_string(n_vocab) + ")");
    }
  }
  if (tokens.size() > kv_->n_free()) {
    return make_error("context_overflow",
                      "eval: " + std::to_string(n_past()) + " past + " +
                          std::to_string(tokens.size()) + " new tokens exceed n_ctx " +
                          std::to_string(options_.n_ctx));
  }
  std::vector<float> logits(static_cast<size_t>(n_vocab) * (all_logits ? tokens.size() : 1));
  for (size_t b = 0; b < tokens.size(); b += options_.n_batch) {
    const size_t n = std::min(options_.n_batch, tokens.size() - b);
    const bool last = b + n == tokens.size();
    float* out = all_logits ? logits.data() + b * static_cast<size_t>(n_vocab)
                            : (last ? logits.data() : nullptr);
    forward(tokens.data() + b, n, all_logits, out, n_layers);
  }
  return logits;
}

bool LlamaContext::sgemm_matmul(const WeightMatrix& w, size_t n) const {
  if (!use_sgemm(n)) return false;
  // kAuto: packed weights stay on the packed decode kernels at every batch size, reused from
  // cache across the batch: 1.2-3.7x the prefill throughput of dequantize + sgemm on the
  // TinyLlama shape (bench/README.md).
  return !(options_.batched_matmul == MatmulMode::kAuto && w.packed != nullptr);
}

void LlamaContext::matmul(std::initializer_list<MatmulOut> outs, const float* x, size_t n) {
  // Fuse runs of outputs with the same weight type and path (one activation conversion, one
  // parallel region).
  const MatmulOut* begin = outs.begin();
  while (begin != outs.end()) {
    const bool sgemm = sgemm_matmul(*begin->w, n);
    if (sgemm) {
      matmul_sgemm(*begin->w, x, n, begin->y);
      ++begin;
      continue;
    }
    const MatmulOut* end = begin + 1;
    while (end != outs.end() && end->w->type == begin->w->type && end->w->n_in == begin->w->n_in &&
           (end->w->packed != nullptr) == (begin->w->packed != nullptr) && !sgemm_matmul(*end->w, n))
      ++end;
    matmul_quantized(std::span<const MatmulOut>(begin, end), x, n);
    begin = end;
  }
}

void LlamaContext::matmul_quantized(std::span<const MatmulOut> outs, const float* x, size_t n) {
  const WeightMatrix& w0 = *outs[0].w;
  auto& acts = s_->acts;
  if (acts.size() < n) acts.resize(n);
  if (n == 1) {
    quantize_activations(w0.type, x, w0.n_in, acts[0]);
  } else {
    pool_->parallel_for(n, [&](size_t t, int) {
      quantize_activations(w0.type, x + t * static_cast<size_t>(w0.n_in), w0.n_in, acts[t]);
    });
  }
  // Rows of all outputs, concatenated: [0, rows(out0)) ++ [0, rows(out1)) ++ ..., split in units
  // of `unit` rows: whole packed groups when the weights are packed (the fused outputs share
  // type and n_in, so either all or none are packed), so no range starts inside a group.
  const bool packed = w0.packed != nullptr;
  const size_t unit = packed ? static_cast<size_t>(kPackRows) : 1;
  size_t total = 0;
  for (const MatmulOut& o : outs) total += (static_cast<size_t>(o.w->n_out) + unit - 1) / unit;
  // A range holds at least kMinRangeBytes of weights: tiny matrices (a 260K-parameter model)
  // run inline instead of paying a hand-off per job.
  const size_t min_rows = std::max<size_t>(
      32, kMinRangeBytes / std::max<size_t>(1, ggml_row_bytes(w0.type, w0.n_in)));
  auto rows_dot = [&](const WeightMatrix& w, size_t r0, size_t r1, const ActivationBuffer& act, float* y) {
    if (packed) {
      matvec_packed(w.type, w.packed, w.n_in, static_cast<int64_t>(r0), static_cast<int64_t>(r1), act, y);
    } else {
      matvec(w.type, w.data, w.n_in, static_cast<int64_t>(r0), static_cast<int64_t>(r1), act, y);
    }
  };
  pool_->parallel_ranges(total, (min_rows + unit - 1) / unit, [&](size_t ua, size_t ub, int) {
    size_t base = 0;  // in units
    for (const MatmulOut& o : outs) {
      const size_t rows = static_cast<size_t>(o.w->n_out);
      const size_t units = (rows + unit - 1) / unit;
      const size_t u0 = std::max(ua, base), u1 = std::min(ub, base + units);  // this output's units
      if (u0 < u1) {
        const size_t r0 = (u0 - base) * unit, r1 = std::min(rows, (u1 - base) * unit);
        if (n == 1) {
          rows_dot(*o.w, r0, r1, acts[0], o.y + r0);
        } else {
          // Several tokens (prefill, verify blocks): a tile of rows small enough to stay in L2 is
          // read from memory once and reused for every token, instead of streaming the rows n times.
          const size_t row_bytes = ggml_row_bytes(o.w->type, o.w->n_in);
          const size_t tile = std::max<size_t>(kPackRows, (kVerifyTileBytes / row_bytes) & ~size_t{kPackRows - 1});
          for (size_t t0 = r0; t0 < r1; t0 += tile) {
            const size_t t1 = std::min(r1, t0 + tile);
            for (size_t t = 0; t < n; ++t) rows_dot(*o.w, t0, t1, acts[t], o.y + t * rows + t0);
          }
        }
      }
      base += units;
    }
  });
}

void LlamaContext::matmul_sgemm(const WeightMatrix& w, const float* x, size_t n, float* y) {
  const int M = static_cast<int>(n);
  const int K = static_cast<int>(w.n_in);
  const int N = static_cast<int>(w.n_out);
  // OpenBLAS runs single-threaded (see the constructor); the pool splits the output columns, so
  // each thread multiplies all M tokens by its own rows of W.
  if (w.type == GgmlType::F32) {
    const auto* wf = reinterpret_cast<const float*>(w.data);
    pool_->parallel_ranges(static_cast<size_t>(N), 16, [&](size_t a, size_t b, int) {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, static_cast<int>(b - a), K, 1.0f, x, K,
                  wf + a * static_cast<size_t>(K), K, 0.0f, y + a, N);
    });
    return;
  }
  const size_t tile_rows = std::clamp<size_t>(kTileFloats / static_cast<size_t>(K), 16,
                                              static_cast<size_t>(N));
  auto& tile = s_->tile;
  if (tile.size() < tile_rows * static_cast<size_t>(K)) tile.resize(tile_rows * static_cast<size_t>(K));
  for (size_t r0 = 0; r0 < static_cast<size_t>(N); r0 += tile_rows) {
    const size_t rows = std::min(tile_rows, static_cast<size_t>(N) - r0);
    pool_->parallel_ranges(rows, 16, [&](size_t a, size_t b, int) {
      float* t = tile.data() + a * static_cast<size_t>(K);
      for (size_t r = a; r < b; ++r) {
        if (w.packed != nullptr) {
          dequantize_packed_row(w.type, w.packed, K, static_cast<int64_t>(r0 + r), tile.data() + r * K);
        } else {
          dequantize_row(w.type, w.row(static_cast<int64_t>(r0 + r)), tile.data() + r * K, K);
        }
      }
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, static_cast<int>(b - a), K, 1.0f, x, K, t, K, 0.0f,
                  y + r0 + a, N);
    });
  }
}

void LlamaContext::attention_batched(size_t il, const float* q, size_t n, size_t pos0, float* out) {
  // Per query head: S = Q_h·K_g^T (sgemm), masked softmax per row (pool), O_h = P·V_g (sgemm).
  // Each KV head has its own view (bounded policies): a row sees the slots of
  // kv_visible_ranges, the others get probability 0.
  const LlamaHparams& hp = model_.hparams();
  auto& views = s_->kv_views;
  kv_->layer(il).head_views(static_cast<size_t>(hp.n_head_kv), static_cast<size_t>(hp.head_dim),
                            views, s_->kv_dequant);
  const int hd = static_cast<int>(hp.head_dim);
  const size_t n_head = static_cast<size_t>(hp.n_head);
  const int64_t gqa = hp.n_gqa();
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  const int q_stride = static_cast<int>(n_head) * hd;
  // One task per query head, each with its thread's own score matrix (OpenBLAS is
  // single-threaded; see the constructor).
  pool_->parallel_for(n_head, [&](size_t h, int thread) {
    const KvSlots& slots = views[static_cast<size_t>(static_cast<int64_t>(h) / gqa)];
    const int S = static_cast<int>(slots.n_slots);
    const int ld_kv = static_cast<int>(slots.row_stride);
    auto& scores = s_->thread_scores[static_cast<size_t>(thread)];
    if (scores.size() < n * slots.n_slots) scores.resize(n * slots.n_slots);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(n), S, hd, scale,
                q + h * static_cast<size_t>(hd), q_stride, slots.k, ld_kv, 0.0f,
                scores.data(), S);
    {
      for (size_t t = 0; t < n; ++t) {
        float* row = scores.data() + t * static_cast<size_t>(S);
        const KvVisibleRanges r = kv_visible_ranges(slots, static_cast<int32_t>(pos0 + t));
        float mx = -INFINITY;
        for (size_t s = 0; s < r.a; ++s) mx = std::max(mx, row[s]);
        for (size_t s = r.b; s < r.c; ++s) mx = std::max(mx, row[s]);
        double sum = 0.0;
        for (size_t s = 0; s < r.a; ++s) {
          row[s] = std::exp(row[s] - mx);
          sum += row[s];
        }
        for (size_t s = r.b; s < r.c; ++s) {
          row[s] = std::exp(row[s] - mx);
          sum += row[s];
        }
        const float inv = static_cast<float>(1.0 / sum);
        for (size_t s = 0; s < r.a; ++s) row[s] *= inv;
        std::fill(row + r.a, row + r.b, 0.0f);
        for (size_t s = r.b; s < r.c; ++s) row[s] *= inv;
        std::fill(row + r.c, row + S, 0.0f);
      }
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(n), hd, S, 1.0f,
                scores.data(), S, slots.v, ld_kv, 0.0f, out + h * static_cast<size_t>(hd),
                q_stride);
  });
}

void LlamaContext::attention(size_t il, const float* q, size_t n, size_t pos0, float* out) {
  if (use_sgemm(n)) {
    attention_batched(il, q, n, pos0, out);
    return;
  }
  const LlamaHparams& hp = model_.hparams();
  auto& views = s_->kv_views;
  kv_->layer(il).head_views(static_cast<size_t>(hp.n_head_kv), static_cast<size_t>(hp.head_dim),
                            views, s_->kv_dequant);
  const int64_t hd = hp.head_dim;
  const size_t n_head = static_cast<size_t>(hp.n_head);
  const int64_t gqa = hp.n_gqa();
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  const size_t q_stride = n_head * static_cast<size_t>(hd);
  auto head_task = [&](size_t task, int thread) {
    const size_t t = task / n_head;
    const size_t h = task % n_head;
    const KvSlots& slots = views[static_cast<size_t>(static_cast<int64_t>(h) / gqa)];
    // Slots are in ascending position order: the visible ones are [0, a) and [b, c).
    const KvVisibleRanges r = kv_visible_ranges(slots, static_cast<int32_t>(pos0 + t));
    const float* qh = q + t * q_stride + h * static_cast<size_t>(hd);
    float* scores = s_->thread_f32[static_cast<size_t>(thread)].data();
    float mx = -INFINITY;
    auto score = [&](size_t s) {
      scores[s] = dot_f32(qh, slots.k + s * slots.row_stride, hd) * scale;
      mx = std::max(mx, scores[s]);
    };
    for (size_t s = 0; s < r.a; ++s) score(s);
    for (size_t s = r.b; s < r.c; ++s) score(s);
    double sum = 0.0;
    auto expo = [&](size_t s) {
      scores[s] = std::exp(scores[s] - mx);
      sum += scores[s];
    };
    for (size_t s = 0; s < r.a; ++s) expo(s);
    for (size_t s = r.b; s < r.c; ++s) expo(s);
    const float inv = static_cast<float>(1.0 / sum);
    float* o = out + t * q_stride + h * static_cast<size_t>(hd);
    std::fill(o, o + hd, 0.0f);
    auto acc = [&](size_t s) {
      const float p = scores[s] * inv;
      const float* vs = slots.v + s * slots.row_stride;
      axpy_f32(p, vs, o, hd);
    };
    for (size_t s = 0; s < r.a; ++s) acc(s);
    for (size_t s = r.b; s < r.c; ++s) acc(s);
  };
  // Work of all jobs: ~2 multiply-adds per visible slot and head dimension (upper bound: every
  // slot of the first head's view).
  const size_t macs = 2 * n_head * n * views[0].n_slots * static_cast<size_t>(hd);
  if (macs < kMinParallelAttentionMacs) {
    for (size_t task = 0; task < n_head * n; ++task) head_task(task, 0);
  } else {
    pool_->parallel_for(n_head * n, head_task);
  }
}

void LlamaContext::forward(const int32_t* tokens, size_t n, bool all_logits, float* logits,
                           size_t n_layers) {
  const bool partial = n_layers < model_.weights().layers.size();
  const LlamaHparams& hp = model_.hparams();
  const LlamaWeights& W = model_.weights();
  Scratch& s = *s_;
  const size_t E = static_cast<size_t>(hp.n_embd);
  const size_t F = static_cast<size_t>(hp.n_ff);
  const size_t HD = static_cast<size_t>(hp.head_dim);
  const size_t QD = static_cast<size_t>(hp.n_head) * HD;
  const size_t KD = static_cast<size_t>(hp.n_head_kv) * HD;
  if (s.cap < n) {
    s.cap = n;
    s.x.resize(n * E);
    s.xn.resize(n * E);
    s.tmp.resize(n * E);
    s.q.resize(n * QD);
    s.att.resize(n * QD);
    s.k.resize(n * KD);
    s.v.resize(n * KD);
    s.gate.resize(n * F);
    s.up.resize(n * F);
    s.positions.resize(n);
  }
  const size_t pos0 = kv_->n_committed() + partial_tokens_;
  for (size_t t = 0; t < n; ++t) s.positions[t] = static_cast<int32_t>(pos0 + t);
  const float theta_scale = std::pow(hp.rope_freq_base, -2.0f / static_cast<float>(hp.rope_dim));

  pool_->parallel_ranges(n, 1, [&](size_t a, size_t b, int) {
    for (size_t t = a; t < b; ++t)
      dequantize_row(W.token_embd.type, W.token_embd.row(tokens[t]), s.x.data() + t * E, hp.n_embd);
  });
  auto norm_rows = [&](const std::vector<float>& w) {
    pool_->parallel_ranges(n, 1, [&](size_t a, size_t b, int) {
      for (size_t t = a; t < b; ++t)
        rms_norm(s.x.data() + t * E, w.data(), hp.n_embd, hp.rms_eps, s.xn.data() + t * E);
    });
  };
  auto add_residual = [&]() {
    for (size_t i = 0; i < n * E; ++i) s.x[i] += s.tmp[i];
  };

  for (size_t il = 0; il < n_layers; ++il) {
    const LlamaLayerWeights& L = W.layers[il];
    norm_rows(L.attn_norm);
    matmul({{&L.wq, s.q.data()}, {&L.wk, s.k.data()}, {&L.wv, s.v.data()}}, s.xn.data(), n);
    pool_->parallel_ranges(n, 1, [&](size_t a, size_t b, int thread) {
      float* cache = s.thread_f32[static_cast<size_t>(thread)].data();
      for (size_t t = a; t < b; ++t) {
        rope(s.q.data() + t * QD, hp.n_head, hp.head_dim, hp.rope_dim, theta_scale,
             s.positions[t], cache);
        rope(s.k.data() + t * KD, hp.n_head_kv, hp.head_dim, hp.rope_dim, theta_scale,
             s.positions[t], cache);
      }
    });
    kv_->layer(il).append(s.positions.data(), s.k.data(), s.v.data(), n);
    attention(il, s.q.data(), n, pos0, s.att.data());
    matmul({{&L.wo, s.tmp.data()}}, s.att.data(), n);
    add_residual();

    norm_rows(L.ffn_norm);
    matmul({{&L.w_gate, s.gate.data()}, {&L.w_up, s.up.data()}}, s.xn.data(), n);
    pool_->parallel_ranges(n * F, 16384, [&](size_t a, size_t b, int) {
      for (size_t i = a; i < b; ++i) {
        const float g = s.gate[i];
        s.gate[i] = (g / (1.0f + std::exp(-g))) * s.up[i];
      }
    });
    matmul({{&L.w_down, s.tmp.data()}}, s.gate.data(), n);
    add_residual();
  }
  // Every layer received the n tokens; the capacity was checked by eval().
  if (partial) {
    partial_tokens_ += n;
  } else {
    (void)kv_->commit(n);
  }

  if (logits == nullptr) return;
  const size_t first = all_logits ? 0 : n - 1;
  const size_t rows = n - first;
  for (size_t t = first; t < n; ++t)
    rms_norm(s.x.data() + t * E, W.output_norm.data(), hp.n_embd, hp.rms_eps,
             s.xn.data() + (t - first) * E);
  matmul({{&W.output, logits}}, s.xn.data(), rows);
}

}  // namespace kakeya::engine
