#include "engine/presets/backend_ops.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>

#include "engine/cpu/quant.h"
#include "engine/gguf_writer.h"
#include "engine/kv_cache.h"
#include "engine/kv_policy.h"
#include "engine/kv_quant.h"
#include "engine/presets/reference_ops.h"
#include "engine/sampling.h"

namespace kakeya::engine {
namespace {

// Deterministic inputs: splitmix64, uniform in [-scale, scale).
class Rng {
 public:
  explicit Rng(uint64_t seed) : s_(seed) {}
  uint64_t next() {
    uint64_t z = (s_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  float uniform(float scale = 1.0f) {
    return scale * (static_cast<float>(next() >> 40) / static_cast<float>(1ull << 24) * 2.0f - 1.0f);
  }
  std::vector<float> vec(size_t n, float scale = 1.0f) {
    std::vector<float> v(n);
    for (float& x : v) x = uniform(scale);
    return v;
  }

 private:
  uint64_t s_;
};

// Row-major bytes of an [n_out][n_in] matrix of `type` with values of about unit scale.
std::vector<uint8_t> random_rows(GgmlType type, int64_t n_in, int64_t n_out, Rng& rng) {
  const size_t row_bytes = ggml_row_bytes(type, n_in);
  std::vector<uint8_t> out(row_bytes * static_cast<size_t>(n_out));
  if (type == GgmlType::Q4_K || type == GgmlType::Q6_K) {
    // Random blocks whose scales keep the values within about [-1, 1].
    for (uint8_t& b : out) b = static_cast<uint8_t>(rng.next());
    const size_t blocks = out.size() / ggml_block_bytes(type);
    for (size_t i = 0; i < blocks; ++i) {
      uint8_t* blk = out.data() + i * ggml_block_bytes(type);
      if (type == GgmlType::Q4_K) {
        auto* b = reinterpret_cast<BlockQ4_K*>(blk);
        b->d = fp32_to_fp16(1.0f / (63 * 15) * (1.0f + 0.5f * rng.uniform()));
        b->dmin = fp32_to_fp16(1.0f / (63 * 15) * (1.0f + 0.5f * rng.uniform()));
      } else {
        auto* b = reinterpret_cast<BlockQ6_K*>(blk);
        for (int8_t& s : b->scales) s = static_cast<int8_t>(static_cast<int>(rng.next() % 65) - 32);
        b->d = fp32_to_fp16(1.0f / (32 * 32) * (1.0f + 0.5f * rng.uniform()));
      }
    }
    return out;
  }
  for (int64_t r = 0; r < n_out; ++r) {
    const std::vector<float> row = rng.vec(static_cast<size_t>(n_in));
    (void)convert_row(type, row.data(), out.data() + static_cast<size_t>(r) * row_bytes, n_in);
  }
  return out;
}

// The table being filled, and the helpers every case uses.
class Table {
 public:
  explicit Table(Backend& b) : b_(b) {}

  Result<Tensor> f32(int64_t rows, int64_t cols, const std::vector<float>& data = {}) {
    KAKEYA_ASSIGN_OR_RETURN(auto buf, b_.alloc(static_cast<size_t>(rows * cols) * sizeof(float)));
    const Tensor t{buf.get(), 0, GgmlType::F32, cols, rows};
    if (!data.empty()) b_.write(t, data);
    buffers_.push_back(std::move(buf));
    return t;
  }
  Result<Tensor> weight(const WeightMatrix& w, WeightUse use) {
    KAKEYA_ASSIGN_OR_RETURN(UploadedWeight u, b_.upload_weight(w, use, nullptr));
    buffers_.push_back(std::move(u.buffer));
    return u.tensor;
  }
  std::vector<float> read(const Tensor& t) {
    std::vector<float> out(static_cast<size_t>(t.rows * t.cols));
    b_.read(t, out);
    b_.sync();
    return out;
  }
  void add(std::string op, std::string type, std::string shape, const std::vector<float>& got,
           const std::vector<float>& want, double tol_nmse, double tol_abs) {
    const OpError e = op_error(got, want);
    out_.push_back({std::move(op), std::move(type), std::move(shape), e.nmse, e.max_abs, tol_nmse, tol_abs,
                    e.nmse <= tol_nmse && e.max_abs <= tol_abs});
  }
  Backend& backend() { return b_; }
  std::vector<BackendOpResult> results() { return std::move(out_); }

 private:
  Backend& b_;
  std::vector<std::unique_ptr<BackendBuffer>> buffers_;  // alive until the table is done
  std::vector<BackendOpResult> out_;
};

std::string dims(std::initializer_list<std::pair<const char*, long long>> kv) {
  std::string s;
  for (const auto& [k, v] : kv) s += (s.empty() ? "" : " ") + std::string(k) + "=" + std::to_string(v);
  return s;
}

struct MatmulTol {
  double nmse, abs;
};
MatmulTol matmul_tolerance(GgmlType type) {
  switch (type) {
    case GgmlType::F32: return {1e-10, 1e-3};
    case GgmlType::F16: return {1e-6, 1e-2};
    case GgmlType::BF16: return {1e-4, 5e-2};
    default: return {1e-3, 0.25};  // 8-bit activations
  }
}

// One matmul row of the table: random weights [n_out][n_in] of `type` and activations
// [tokens][n_in], drawn from `rng` in that order, through the backend against the float64
// reference mat-vec of each token.
Status matmul_case(Table& t, GgmlType type, int64_t n_in, int64_t n_out, int64_t tokens, Rng& rng,
                   const MatmulTol& tol) {
  const auto bytes = random_rows(type, n_in, n_out, rng);
  const WeightMatrix w{"op.weight", type, bytes.data(), n_in, n_out, ggml_row_bytes(type, n_in)};
  KAKEYA_ASSIGN_OR_RETURN(Tensor wt, t.weight(w, WeightUse::kMatmul));
  const std::vector<float> x = rng.vec(static_cast<size_t>(tokens * n_in));
  KAKEYA_ASSIGN_OR_RETURN(Tensor xt, t.f32(tokens, n_in, x));
  KAKEYA_ASSIGN_OR_RETURN(Tensor yt, t.f32(tokens, n_out));
  const MatmulOut outs[] = {{&wt, yt}};
  t.backend().matmul(outs, xt);
  std::vector<float> want(static_cast<size_t>(tokens * n_out));
  for (int64_t k = 0; k < tokens; ++k) reference::matvec_f32(w, x.data() + k * n_in, want.data() + k * n_out);
  t.add("matmul", ggml_type_name(type), dims({{"n_in", n_in}, {"n_out", n_out}, {"tokens", tokens}}), t.read(yt), want,
        tol.nmse, tol.abs);
  return ok_status();
}

Status matmul_cases(Table& t) {
  Rng rng(1);
  // Every storage type: rows of one block and of several.
  std::vector<std::pair<GgmlType, std::vector<int64_t>>> types;
  for (GgmlType type : ggml_storage_types())
    types.push_back({type, ggml_block_size(type) == 256 ? std::vector<int64_t>{256, 512} : std::vector<int64_t>{32, 96}});
  for (const auto& [type, n_ins] : types) {
    const MatmulTol tol = matmul_tolerance(type);
    for (int64_t n_in : n_ins) {
      for (int64_t n_out : {int64_t{1}, int64_t{33}}) {
        // 33 output rows: two packed groups of 16 and one row; 33 tokens: a batched path (the CPU
        // backend's GEMM kernels from kMinBatchedTokens = 32 on: micro-kernel token tiles of 4, 6 or 8
        // plus a remainder).
        for (int64_t tokens : {int64_t{1}, int64_t{5}, int64_t{33}}) {
          KAKEYA_TRY(matmul_case(t, type, n_in, n_out, tokens, rng, tol));
        }
      }
      // Two weights over one input (a backend may fuse them): q/k/v-like outputs of 33 and 17 rows.
      const auto b1 = random_rows(type, n_in, 33, rng), b2 = random_rows(type, n_in, 17, rng);
      const WeightMatrix w1{"op.w1", type, b1.data(), n_in, 33, ggml_row_bytes(type, n_in)};
      const WeightMatrix w2{"op.w2", type, b2.data(), n_in, 17, ggml_row_bytes(type, n_in)};
      KAKEYA_ASSIGN_OR_RETURN(Tensor t1, t.weight(w1, WeightUse::kMatmul));
      KAKEYA_ASSIGN_OR_RETURN(Tensor t2, t.weight(w2, WeightUse::kMatmul));
      const int64_t tokens = 3;
      const std::vector<float> x = rng.vec(static_cast<size_t>(tokens * n_in));
      KAKEYA_ASSIGN_OR_RETURN(Tensor xt, t.f32(tokens, n_in, x));
      KAKEYA_ASSIGN_OR_RETURN(Tensor y1, t.f32(tokens, 33));
      KAKEYA_ASSIGN_OR_RETURN(Tensor y2, t.f32(tokens, 17));
      const MatmulOut outs[] = {{&t1, y1}, {&t2, y2}};
      t.backend().matmul(outs, xt);
      std::vector<float> got = t.read(y1), got2 = t.read(y2), want(tokens * 33), want2(tokens * 17);
      for (int64_t k = 0; k < tokens; ++k) {
        reference::matvec_f32(w1, x.data() + k * n_in, want.data() + k * 33);
        reference::matvec_f32(w2, x.data() + k * n_in, want2.data() + k * 17);
      }
      got.insert(got.end(), got2.begin(), got2.end());
      want.insert(want.end(), want2.begin(), want2.end());
      t.add("matmul_fused", ggml_type_name(type), dims({{"n_in", n_in}, {"n_out", 33 + 17}, {"tokens", tokens}}), got,
            want, tol.nmse, tol.abs);
    }
  }
  // A batch through the GEMM kernels with a reduction over several panels: n_in of two whole
  // 256-value panels and part of a third (K-quants: three whole super-block panels), 37 rows (two
  // packed groups and a partial one), 45 tokens (token tiles of 4, 6 or 8 and a rest). Its own
  // random stream, so the cases above keep their inputs.
  Rng wide(11);
  for (const auto& [type, n_ins] : types) {
    const MatmulTol tol = matmul_tolerance(type);
    const int64_t n_in = ggml_block_size(type) == 256 ? 768 : 544, n_out = 37, tokens = 45;
    KAKEYA_TRY(matmul_case(t, type, n_in, n_out, tokens, wide, tol));
  }
  // A long batch of the float types: 300 tokens, which the CPU backend splits into blocks of 160
  // (whole tiles of 32 tokens: the tokens-in-lanes kernels) and 140 (rows in the lanes).
  for (GgmlType type : {GgmlType::F32, GgmlType::F16, GgmlType::BF16})
    KAKEYA_TRY(matmul_case(t, type, 544, 37, 300, wide, matmul_tolerance(type)));
  // Many rows: 4200 rows x 256 tokens of outputs, more than the CPU backend's 2 threads x 4 tasks
  // of at most 512 KiB of outputs each hold, so its split of the rows follows the outputs' size.
  for (GgmlType type : {GgmlType::F32, GgmlType::F16, GgmlType::BF16})
    KAKEYA_TRY(matmul_case(t, type, 32, 4200, 256, wide, matmul_tolerance(type)));
  return ok_status();
}

Status embed_cases(Table& t) {
  Rng rng(2);
  for (GgmlType type : ggml_storage_types()) {
    const int64_t cols = ggml_block_size(type) == 256 ? 256 : 96, rows = 7;
    const auto bytes = random_rows(type, cols, rows, rng);
    const WeightMatrix w{"op.table", type, bytes.data(), cols, rows, ggml_row_bytes(type, cols)};
    KAKEYA_ASSIGN_OR_RETURN(Tensor table, t.weight(w, WeightUse::kRows));
    const std::vector<int32_t> tokens = {0, 6, 3, 3, 1};
    KAKEYA_ASSIGN_OR_RETURN(Tensor out, t.f32(static_cast<int64_t>(tokens.size()), cols));
    t.backend().embed(table, tokens, out);
    const std::vector<float> all = reference::dequantize(w);
    std::vector<float> want;
    for (int32_t id : tokens) want.insert(want.end(), all.begin() + id * cols, all.begin() + (id + 1) * cols);
    t.add("embed", ggml_type_name(type), dims({{"cols", cols}, {"rows", rows}, {"tokens", 5}}), t.read(out), want, 0, 0);
  }
  // Subnormal f16 block scales (real Q6_K/Q8_0 files of small weights have them): every block's
  // d set to a subnormal, read back exactly.
  for (GgmlType type : {GgmlType::Q8_0, GgmlType::Q6_K}) {
    const int64_t cols = ggml_block_size(type) == 256 ? 256 : 96, rows = 3;
    auto bytes = random_rows(type, cols, rows, rng);
    const size_t d_at = type == GgmlType::Q6_K ? 208 : 0, block = ggml_block_bytes(type);
    for (size_t b = 0; b < bytes.size() / block; ++b) {
      const uint16_t sub = static_cast<uint16_t>(0x0001 + 37 * b % 0x03FF);  // exponent 0: subnormal
      std::memcpy(bytes.data() + b * block + d_at, &sub, sizeof sub);
    }
    const WeightMatrix w{"op.table", type, bytes.data(), cols, rows, ggml_row_bytes(type, cols)};
    KAKEYA_ASSIGN_OR_RETURN(Tensor table, t.weight(w, WeightUse::kRows));
    const std::vector<int32_t> tokens = {2, 0, 1};
    KAKEYA_ASSIGN_OR_RETURN(Tensor out, t.f32(3, cols));
    t.backend().embed(table, tokens, out);
    const std::vector<float> all = reference::dequantize(w);
    std::vector<float> want;
    for (int32_t id : tokens) want.insert(want.end(), all.begin() + id * cols, all.begin() + (id + 1) * cols);
    t.add("embed", ggml_type_name(type), dims({{"cols", cols}, {"rows", rows}, {"tokens", 3}}) + " subnormal_scales",
          t.read(out), want, 0, 0);
  }
  return ok_status();
}

// The RoPE variants of engine/rope.h: both layouts, partial rotation, frequency factors, linear
// and YaRN scaling (with a magnitude), at positions far past any context.
Status rope_cases(Table& t, Rng& rng) {
  const std::vector<int32_t> positions = {0, 1, 17, 4095, 65000};
  struct Variant {
    const char* name;
    RopeScaling scaling;
    float freq_scale, ext_factor, attn_factor;
    bool freq_factors;
  };
  const Variant variants[] = {{"plain", RopeScaling::kNone, 1.0f, 0.0f, 1.0f, false},
                              {"freq_factors", RopeScaling::kNone, 1.0f, 0.0f, 1.0f, true},
                              {"linear", RopeScaling::kLinear, 0.25f, 0.0f, 1.0f, false},
                              {"yarn", RopeScaling::kYarn, 0.25f, 1.0f, 0.9f, false}};
  for (RopeLayout layout : {RopeLayout::kNormal, RopeLayout::kNeox}) {
    for (const Variant& var : variants) {
      for (int64_t n_heads : {int64_t{1}, int64_t{3}}) {
        for (int64_t hd : {int64_t{8}, int64_t{64}}) {
          for (int64_t n_dims : {hd, hd / 2}) {
            RopeParams p;
            p.layout = layout;
            p.n_dims = n_dims;
            p.freq_base = 10000.0f;
            p.freq_scale = var.freq_scale;
            p.ext_factor = var.ext_factor;
            p.attn_factor = var.attn_factor;
            p.n_ctx_orig = 4096;
            p.scaling = var.scaling;
            RopeArgs args{n_heads, hd, p, nullptr};
            std::vector<float> ff;
            Tensor fft;
            if (var.freq_factors) {
              ff = rng.vec(static_cast<size_t>(n_dims / 2), 3.5f);
              for (float& f : ff) f = 4.5f + f;  // factors in [1, 8), as Llama-3.1's
              const WeightMatrix fm{"op.rope_freqs", GgmlType::F32, reinterpret_cast<const uint8_t*>(ff.data()),
                                    n_dims / 2, 1, static_cast<size_t>(n_dims / 2) * sizeof(float)};
              KAKEYA_ASSIGN_OR_RETURN(fft, t.weight(fm, WeightUse::kVector));
              args.freq_factors = &fft;
            }
            const int64_t n = static_cast<int64_t>(positions.size()), cols = n_heads * hd;
            const std::vector<float> x = rng.vec(static_cast<size_t>(n * cols));
            KAKEYA_ASSIGN_OR_RETURN(Tensor xt, t.f32(n, cols, x));
            t.backend().rope(xt, args, positions);
            std::vector<float> want = x;
            for (int64_t r = 0; r < n; ++r) {
              reference::rope(want.data() + r * cols, n_heads, hd, p, var.freq_factors ? ff.data() : nullptr,
                              positions[static_cast<size_t>(r)]);
            }
            t.add("rope", std::string(rope_layout_name(layout)) + "_" + var.name,
                  dims({{"heads", n_heads}, {"head_dim", hd}, {"n_dims", n_dims}, {"max_pos", 65000}}), t.read(xt),
                  want, 1e-10, 1e-4);
          }
        }
      }
    }
  }
  return ok_status();
}

Status elementwise_cases(Table& t) {
  Rng rng(3);
  for (int64_t rows : {int64_t{1}, int64_t{5}}) {
    for (int64_t cols : {int64_t{64}, int64_t{67}}) {
      const std::vector<float> x = rng.vec(static_cast<size_t>(rows * cols), 3.0f);
      std::vector<float> w = rng.vec(static_cast<size_t>(cols));
      const WeightMatrix wm{"op.norm", GgmlType::F32, reinterpret_cast<const uint8_t*>(w.data()), cols, 1,
                            static_cast<size_t>(cols) * sizeof(float)};
      KAKEYA_ASSIGN_OR_RETURN(Tensor wt, t.weight(wm, WeightUse::kVector));
      KAKEYA_ASSIGN_OR_RETURN(Tensor xt, t.f32(rows, cols, x));
      KAKEYA_ASSIGN_OR_RETURN(Tensor yt, t.f32(rows, cols));
      t.backend().rms_norm(xt, wt, 1e-5f, yt);
      std::vector<float> want(x.size());
      for (int64_t r = 0; r < rows; ++r) reference::rms_norm(x.data() + r * cols, w.data(), cols, 1e-5f, want.data() + r * cols);
      t.add("rms_norm", "f32", dims({{"rows", rows}, {"cols", cols}}), t.read(yt), want, 1e-10, 1e-4);
    }
  }
  KAKEYA_TRY(rope_cases(t, rng));
  for (int64_t rows : {int64_t{1}, int64_t{5}, int64_t{33}}) {
    for (int64_t cols : {int64_t{67}, int64_t{256}}) {
      const std::vector<float> x = rng.vec(static_cast<size_t>(rows * cols), 3.0f);
      std::vector<float> b = rng.vec(static_cast<size_t>(cols));
      const WeightMatrix bm{"op.bias", GgmlType::F32, reinterpret_cast<const uint8_t*>(b.data()), cols, 1,
                            static_cast<size_t>(cols) * sizeof(float)};
      KAKEYA_ASSIGN_OR_RETURN(Tensor bt, t.weight(bm, WeightUse::kVector));
      KAKEYA_ASSIGN_OR_RETURN(Tensor xt, t.f32(rows, cols, x));
      t.backend().add_bias(xt, bt);
      std::vector<float> want = x;
      for (int64_t r = 0; r < rows; ++r) reference::add_bias(want.data() + r * cols, b.data(), static_cast<size_t>(cols));
      t.add("add_bias", "f32", dims({{"rows", rows}, {"cols", cols}}), t.read(xt), want, 0, 0);
    }
  }
  for (int64_t n : {int64_t{1}, int64_t{1000}, int64_t{40000}}) {
    const std::vector<float> g = rng.vec(static_cast<size_t>(n), 4.0f), u = rng.vec(static_cast<size_t>(n), 4.0f);
    KAKEYA_ASSIGN_OR_RETURN(Tensor gt, t.f32(1, n, g));
    KAKEYA_ASSIGN_OR_RETURN(Tensor ut, t.f32(1, n, u));
    t.backend().swiglu(gt, ut);
    std::vector<float> want = g;
    reference::swiglu(want.data(), u.data(), want.size());
    t.add("swiglu", "f32", dims({{"n", n}}), t.read(gt), want, 1e-10, 1e-4);

    KAKEYA_ASSIGN_OR_RETURN(Tensor at, t.f32(1, n, g));
    t.backend().add(at, ut);
    std::vector<float> sum(g.size());
    for (size_t i = 0; i < g.size(); ++i) sum[i] = g[i] + u[i];
    t.add("add", "f32", dims({{"n", n}}), t.read(at), sum, 0, 0);
  }
  // argmax: rows with ties (the lowest index wins) and a maximum in the last column.
  {
    const int64_t rows = 3, cols = 1000;
    std::vector<float> x = rng.vec(static_cast<size_t>(rows * cols));
    x[5] = x[700] = 2.0f;        // row 0: tie between 5 and 700
    x[cols + 999] = 3.0f;        // row 1: the last column
    x[2 * cols + 0] = 2.5f;      // row 2: the first column
    KAKEYA_ASSIGN_OR_RETURN(Tensor xt, t.f32(rows, cols, x));
    std::vector<int32_t> ids(rows);
    t.backend().argmax_rows(xt, ids);
    t.backend().sync();
    t.add("argmax", "f32", dims({{"rows", rows}, {"cols", cols}}), std::vector<float>(ids.begin(), ids.end()),
          {5.0f, 999.0f, 0.0f}, 0, 0);
  }
  // accept_greedy against the host rule (greedy_acceptance over the reference argmax): rows built
  // with ties so that argmax's lowest-index rule decides acceptance; drafts all accepted, none,
  // one short of all, a tie decided against the draft, and a block without drafts.
  {
    const int64_t k = 5, cols = 300;
    std::vector<float> x = rng.vec(static_cast<size_t>((k + 1) * cols));
    std::vector<int32_t> ids(static_cast<size_t>(k + 1));
    for (int64_t r = 0; r <= k; ++r) {
      const int32_t lo = static_cast<int32_t>((r * 37) % cols), hi = static_cast<int32_t>((r * 37 + 101) % cols);
      x[static_cast<size_t>(r * cols + lo)] = x[static_cast<size_t>(r * cols + hi)] = 2.0f;  // a tie
      ids[static_cast<size_t>(r)] = std::min(lo, hi);
    }
    KAKEYA_ASSIGN_OR_RETURN(Tensor xt, t.f32(k + 1, cols, x));
    const auto drafts_with = [&](int64_t n_match, int32_t mismatch) {
      std::vector<int32_t> d(ids.begin(), ids.begin() + k);
      if (n_match < k) d[static_cast<size_t>(n_match)] = mismatch;
      return d;
    };
    struct Case {
      const char* name;
      std::vector<int32_t> drafts;
    };
    const int32_t tie_loser = static_cast<int32_t>((2 * 37 + 101) % cols);  // row 2's higher tied index
    const Case cases[] = {{"all_accepted", drafts_with(k, 0)},
                          {"none_accepted", drafts_with(0, ids[0] + 1)},
                          {"last_rejected", drafts_with(k - 1, ids[static_cast<size_t>(k - 1)] + 1)},
                          {"tie_loser_rejected", drafts_with(2, tie_loser)},
                          {"no_drafts", {}}};
    for (const Case& c : cases) {
      const size_t kd = c.drafts.size();
      const Tensor rows = xt.row_range(0, static_cast<int64_t>(kd) + 1);
      std::vector<int32_t> got(kd + 2, -7);
      t.backend().accept_greedy(rows, c.drafts, got);
      t.backend().sync();
      std::vector<int32_t> row_ids(kd + 1);
      for (size_t r = 0; r <= kd; ++r)
        row_ids[r] = argmax(std::span<const float>(x.data() + r * cols, static_cast<size_t>(cols)));
      std::vector<int32_t> want(kd + 2);
      greedy_acceptance(row_ids, c.drafts, want);
      t.add("accept_greedy", c.name, dims({{"k", static_cast<int64_t>(kd)}, {"cols", cols}}),
            std::vector<float>(got.begin(), got.end()), std::vector<float>(want.begin(), want.end()), 0, 0);
    }
  }
  return ok_status();
}

const char* kv_type_name(int bits) { return bits == 32 ? "kv_f32" : bits == 8 ? "kv_q8" : "kv_q4"; }

// Appends positions [from, to) of the rows k, v ([n][width]) to every layer of `cache`,
// committing in chunks of `chunk` (evictions happen at each commit) unless commit is false.
Status append_rows(Table& t, KvCache& cache, const std::vector<float>& k, const std::vector<float>& v, int32_t from,
                   int32_t to, int32_t chunk, bool commit) {
  const int64_t width = static_cast<int64_t>(cache.shape().n_head_kv * cache.shape().head_dim);
  for (int32_t p = from; p < to; p += chunk) {
    const int32_t n = std::min(chunk, to - p);
    std::vector<int32_t> pos(static_cast<size_t>(n));
    std::iota(pos.begin(), pos.end(), p);
    const auto slice = [&](const std::vector<float>& rows) {
      return std::vector<float>(rows.begin() + p * width, rows.begin() + (p + n) * width);
    };
    KAKEYA_ASSIGN_OR_RETURN(Tensor kt, t.f32(n, width, slice(k)));
    KAKEYA_ASSIGN_OR_RETURN(Tensor vt, t.f32(n, width, slice(v)));
    for (size_t il = 0; il < cache.n_layer(); ++il) KAKEYA_TRY(cache.layer(il).append(kt, vt, pos));
    if (commit) KAKEYA_TRY(cache.commit(static_cast<size_t>(n)));
  }
  return ok_status();
}

Status attention_cases(Table& t) {
  Rng rng(4);
  struct Heads {
    int64_t n_head, n_head_kv;
  };
  const Heads heads[] = {{4, 4}, {4, 2}, {4, 1}};  // MHA, GQA, MQA
  const int32_t slots = 40;                       // positions 0..39, far past a window of 5
  for (const Heads& hh : heads) {
    for (int64_t hd : {int64_t{8}, int64_t{64}}) {
      for (int32_t n : {1, 4, 33}) {
        for (int policy_kind = 0; policy_kind < 3; ++policy_kind) {
          for (int bits : {32, 8, 4}) {
            KvPolicy p;
            p.kv_bits = bits;
            std::string policy_name = "full";
            if (policy_kind > 0) {
              p.sink = 2;
              p.window = 5;
              p.tail = 2;
              policy_name = "sink2+window5+tail2";
              if (policy_kind == 2) {
                p.exact_heads = {{0, 0}};
                policy_name += "+exact_head0";
              }
            }
            const size_t width = static_cast<size_t>(hh.n_head_kv * hd);
            KvCache cache(t.backend(), KvCacheShape{1, static_cast<size_t>(hh.n_head_kv), static_cast<size_t>(hd),
                                                    static_cast<size_t>(slots)});
            KAKEYA_TRY(apply_kv_policy(cache, p));
            const std::vector<float> k = rng.vec(slots * width), v = rng.vec(slots * width);
            // Committed history in chunks (evicting), then the batch appended as a forward pass does.
            KAKEYA_TRY(append_rows(t, cache, k, v, 0, slots - n, 7, true));
            KAKEYA_TRY(append_rows(t, cache, k, v, slots - n, slots, n, false));
            std::vector<KvHeadView> views;
            cache.layer(0).head_views(views);
            std::vector<int32_t> qpos(static_cast<size_t>(n));
            std::iota(qpos.begin(), qpos.end(), slots - n);
            const int64_t q_width = hh.n_head * hd;
            const std::vector<float> q = rng.vec(static_cast<size_t>(n * q_width), 2.0f);
            KAKEYA_ASSIGN_OR_RETURN(Tensor qt, t.f32(n, q_width, q));
            KAKEYA_ASSIGN_OR_RETURN(Tensor ot, t.f32(n, q_width));
            t.backend().attention(qt, AttentionArgs{hh.n_head, hh.n_head_kv, hd, views, qpos}, ot);
            const std::vector<float> got = t.read(ot);
            // The reference reads the stored KV back (decoded), with the host's slot positions.
            std::vector<std::vector<int32_t>> pos(static_cast<size_t>(hh.n_head_kv));
            std::vector<std::vector<float>> hk(pos.size()), hv(pos.size());
            for (size_t g = 0; g < pos.size(); ++g) cache.layer(0).read_head(g, &pos[g], &hk[g], &hv[g]);
            std::vector<float> want(got.size());
            const int64_t gqa = hh.n_head / hh.n_head_kv;
            for (int32_t i = 0; i < n; ++i) {
              for (int64_t h = 0; h < hh.n_head; ++h) {
                const size_t g = static_cast<size_t>(h / gqa);
                const KvSlots s{pos[g].size(), static_cast<size_t>(hd), pos[g].data(), hk[g].data(), hv[g].data(),
                                views[g].sink, views[g].window};
                reference::attention_head(q.data() + i * q_width + h * hd, s, qpos[static_cast<size_t>(i)], hd,
                                          want.data() + i * q_width + h * hd);
              }
            }
            t.add("attention", kv_type_name(bits),
                  dims({{"heads", hh.n_head}, {"kv_heads", hh.n_head_kv}, {"head_dim", hd}, {"tokens", n}, {"slots", slots}}) +
                      " policy=" + policy_name,
                  got, want, 1e-10, 1e-4);
          }
        }
      }
    }
  }
  return ok_status();
}

// kv_store: rows written (and grown past the first 64-slot storage) read back as the host codec
// decodes them; kv_copy: a bounded layer's compaction keeps exactly the sink and the recent
// positions, rows moved with them.
Status kv_storage_cases(Table& t) {
  Rng rng(5);
  const size_t n_kv = 3, hd = 24, width = n_kv * hd;  // 72 values: affine groups of 64 and 8
  for (int bits : {32, 8, 4}) {
    const int32_t n = 70;
    KvCache cache(t.backend(), KvCacheShape{1, n_kv, hd, 128});
    KvPolicy p;
    p.kv_bits = bits;
    KAKEYA_TRY(apply_kv_policy(cache, p));
    const std::vector<float> k = rng.vec(n * width, 2.0f), v = rng.vec(n * width, 2.0f);
    KAKEYA_TRY(append_rows(t, cache, k, v, 0, n, 9, true));
    std::vector<float> got, want;
    const AffineRowCodec codec(width, 64, bits == 32 ? 8 : bits);
    std::vector<uint8_t> code(codec.bytes_per_row());
    std::vector<float> row(width);
    for (size_t h = 0; h < n_kv; ++h) {
      std::vector<float> hk, hv;
      cache.layer(0).read_head(h, nullptr, &hk, &hv);
      got.insert(got.end(), hk.begin(), hk.end());
      got.insert(got.end(), hv.begin(), hv.end());
      for (const std::vector<float>* src : {&k, &v}) {
        for (int32_t s = 0; s < n; ++s) {
          const float* x = src->data() + static_cast<size_t>(s) * width;
          if (bits == 32) {
            std::copy_n(x, width, row.data());
          } else {
            codec.encode(x, code.data());
            codec.decode(code.data(), row.data());
          }
          want.insert(want.end(), row.begin() + static_cast<long>(h * hd), row.begin() + static_cast<long>((h + 1) * hd));
        }
      }
    }
    t.add("kv_store", kv_type_name(bits), dims({{"kv_heads", 3}, {"head_dim", 24}, {"slots", n}}), got, want, 0, 0);
  }
  {
    const int32_t n = 30;
    KvCache cache(t.backend(), KvCacheShape{1, n_kv, hd, 64});
    KvPolicy p;
    p.sink = 2;
    p.window = 4;
    p.tail = 1;
    KAKEYA_TRY(apply_kv_policy(cache, p));
    const std::vector<float> k = rng.vec(n * width), v = rng.vec(n * width);
    KAKEYA_TRY(append_rows(t, cache, k, v, 0, n, 3, true));
    std::vector<float> got, want;
    for (size_t h = 0; h < n_kv; ++h) {
      std::vector<int32_t> pos;
      std::vector<float> hk, hv;
      cache.layer(0).read_head(h, &pos, &hk, &hv);
      got.insert(got.end(), pos.begin(), pos.end());
      got.insert(got.end(), hk.begin(), hk.end());
      got.insert(got.end(), hv.begin(), hv.end());
      // Kept: positions < sink and > n - window - tail.
      std::vector<int32_t> keep;
      for (int32_t s = 0; s < n; ++s)
        if (s < p.sink || s > n - p.window - p.tail) keep.push_back(s);
      want.insert(want.end(), keep.begin(), keep.end());
      for (const std::vector<float>* src : {&k, &v})
        for (int32_t s : keep) {
          const float* x = src->data() + static_cast<size_t>(s) * width + h * hd;
          want.insert(want.end(), x, x + hd);
        }
    }
    t.add("kv_copy", "kv_f32", dims({{"kv_heads", 3}, {"head_dim", 24}, {"appended", n}}) + " policy=sink2+window4+tail1",
          got, want, 0, 0);
  }
  return ok_status();
}

}  // namespace

OpError op_error(const std::vector<float>& got, const std::vector<float>& want) {
  if (got.size() != want.size()) {
    return {std::numeric_limits<double>::infinity(), std::numeric_limits<double>::infinity()};
  }
  double err = 0, energy = 0, mx = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double d = static_cast<double>(got[i]) - want[i];
    err += d * d;
    energy += static_cast<double>(want[i]) * want[i];
    mx = std::max(mx, std::fabs(d));
    if (std::isnan(got[i]) != std::isnan(want[i])) mx = std::numeric_limits<double>::infinity();
  }
  return {energy > 0 ? err / energy : err, mx};
}

Result<std::vector<BackendOpResult>> run_backend_ops(Backend& backend) {
  Table t(backend);
  KAKEYA_TRY(embed_cases(t));
  KAKEYA_TRY(elementwise_cases(t));
  KAKEYA_TRY(matmul_cases(t));
  KAKEYA_TRY(attention_cases(t));
  KAKEYA_TRY(kv_storage_cases(t));
  return t.results();
}

nlohmann::json backend_ops_json(const Backend& backend, const std::vector<BackendOpResult>& results) {
  nlohmann::json cases = nlohmann::json::array();
  size_t failed = 0;
  for (const BackendOpResult& r : results) {
    failed += r.passed ? 0 : 1;
    cases.push_back({{"op", r.op},
                     {"type", r.type},
                     {"shape", r.shape},
                     {"nmse", r.nmse},
                     {"max_abs", r.max_abs},
                     {"tol_nmse", r.tol_nmse},
                     {"tol_abs", r.tol_abs},
                     {"passed", r.passed}});
  }
  return {{"backend", to_json(backend.info())}, {"cases", cases}, {"passed", failed == 0}, {"failed", failed}};
}

}  // namespace kakeya::engine
