// The CPU backend's matmul paths (cpu_backend.h): the engine's kernels (decode mat-vec for one
// token, the GEMM kernels of cpu/gemm.h for a batch), or dequantize + OpenBLAS sgemm.
#include <cblas.h>

#include <algorithm>

#include "engine/cpu/cpu_backend.h"

namespace kakeya::engine {
namespace {

// Floats of one dequantized weight tile for the sgemm path (8 MiB).
constexpr size_t kTileFloats = size_t{2} << 20;
// Least weight bytes per parallel range of a mat-vec worth handing to another thread.
constexpr size_t kMinRangeBytes = size_t{32} << 10;
// A batch is split into GEMM tasks of at most this many tokens (the activations of a task stay
// in L2 while each converted weight tile is reused for all of them) ...
constexpr size_t kGemmTokenBlock = 256;
// ... in whole multiples of this many tokens but for the last block (two AVX-512 vectors).
constexpr size_t kGemmTokenUnit = 32;
// ... and of at least this many weight rows (whole micro-kernel panels), about kGemmTasksPerThread
// tasks per thread so a descheduled worker holds back little work.
constexpr size_t kGemmRowUnit = 32;
constexpr size_t kGemmTasksPerThread = 4;
// ... and, for F32/F16/BF16 weights in blocks of kGemmTokenUnit tokens and more, of at most this
// many bytes of outputs: their tokens-in-lanes GEMM accumulates a task's rows × tokens outputs in
// f32 scratch swept once per block of k (gemm_x86.h TokensInLanes), which should stay in L2 (half
// of a Zen 4 core's). On the Xeon VM, one thread, TinyLlama's fused FFN up+gate (11264 rows x
// 2048) times 256 tokens in 12 calls (0.9 MiB of outputs each) ran 1.04-1.17x what it ran in 2
// (5.6 MiB each), `kakeya_kernels_bench --gemm-splits` (bench/README.md). Never fewer than 512
// rows a task at 256 tokens. Not for BF16 run by AMX, whose outputs stay in tile registers
// (gemm.h gemm_holds_outputs_in_tiles) and which packs the task's activations once per call: the
// same product in 22 calls ran 0.89x what it ran in 2 there.
constexpr size_t kGemmOutputBytes = size_t{512} << 10;

const uint8_t* weight_rows(const Tensor& w) { return static_cast<const CpuBuffer*>(w.buffer)->data() + w.offset; }
const uint8_t* weight_packed(const Tensor& w) { return static_cast<const CpuBuffer*>(w.buffer)->packed(); }
bool is_float_weight(GgmlType t) { return t == GgmlType::F32 || t == GgmlType::F16 || t == GgmlType::BF16; }

}  // namespace

void CpuBackend::matmul(std::span<const MatmulOut> outs, const Tensor& x) {
  const size_t n = static_cast<size_t>(x.rows);
  const BatchPath path = batch_path(n);
  if (path == BatchPath::kSgemm) {
    for (const MatmulOut& o : outs) matmul_sgemm(*o.w, f32(x), n, f32(o.y));
    return;
  }
  // Fuse runs of outputs with the same weight type, width and layout (one activation conversion,
  // one parallel region).
  const MatmulOut* begin = outs.data();
  const MatmulOut* const end_all = outs.data() + outs.size();
  while (begin != end_all) {
    const Tensor& w0 = *begin->w;
    const MatmulOut* end = begin + 1;
    while (end != end_all && end->w->type == w0.type && end->w->cols == w0.cols &&
           (weight_packed(*end->w) != nullptr) == (weight_packed(w0) != nullptr))
      ++end;
    matmul_kernels(std::span<const MatmulOut>(begin, end), x, path);
    begin = end;
  }
}

void CpuBackend::matmul_kernels(std::span<const MatmulOut> outs, const Tensor& xt, BatchPath path) {
  const Tensor& w0 = *outs[0].w;
  const float* x = f32(xt);
  const size_t n = static_cast<size_t>(xt.rows);
  auto& acts = s_.acts;
  if (acts.size() < n) acts.resize(n);
  if (n == 1) {
    quantize_activations(w0.type, x, w0.cols, acts[0]);
  } else {
    pool_.parallel_for(n, [&](size_t t, int) {
      quantize_activations(w0.type, x + t * static_cast<size_t>(w0.cols), w0.cols, acts[t]);
    });
  }
  // Rows of all outputs, concatenated: [0, rows(out0)) ++ [0, rows(out1)) ++ ..., split in units
  // of `unit` rows (whole packed groups when the weights are packed: the fused outputs share type
  // and n_in, so either all or none are packed), so no range starts inside a group.
  const bool packed = weight_packed(w0) != nullptr;
  const size_t unit = n == 1 ? (packed ? static_cast<size_t>(kPackRows) : 1) : kGemmRowUnit;
  size_t total = 0;
  for (const MatmulOut& o : outs) total += (static_cast<size_t>(o.w->rows) + unit - 1) / unit;
  // Runs fn(output, r0, r1) for the rows of unit range [ua, ub).
  auto each_output = [&](size_t ua, size_t ub, auto&& fn) {
    size_t base = 0;  // in units
    for (const MatmulOut& o : outs) {
      const size_t rows = static_cast<size_t>(o.w->rows);
      const size_t units = (rows + unit - 1) / unit;
      const size_t u0 = std::max(ua, base), u1 = std::min(ub, base + units);  // this output's units
      if (u0 < u1) fn(o, (u0 - base) * unit, std::min(rows, (u1 - base) * unit));
      base += units;
    }
  };
  if (n == 1) {
    // A range holds at least kMinRangeBytes of weights: tiny matrices (a 260K-parameter model)
    // run inline instead of paying a hand-off per job.
    const size_t min_rows = std::max<size_t>(32, kMinRangeBytes / std::max<size_t>(1, w0.row_bytes()));
    pool_.parallel_ranges(total, (min_rows + unit - 1) / unit, [&](size_t ua, size_t ub, int) {
      each_output(ua, ub, [&](const MatmulOut& o, size_t r0, size_t r1) {
        float* y = f32(o.y) + r0;
        if (packed) {
          matvec_packed(o.w->type, weight_packed(*o.w), o.w->cols, static_cast<int64_t>(r0), static_cast<int64_t>(r1),
                        acts[0], y);
        } else {
          matvec(o.w->type, weight_rows(*o.w), o.w->cols, static_cast<int64_t>(r0), static_cast<int64_t>(r1), acts[0],
                 y);
        }
      });
    });
    return;
  }
  // A batch: tasks of (a block of tokens) × (a range of rows), each one gemm call per output it
  // touches. Rows are split first (every task then reuses its weight tiles for the most tokens);
  // blocks of tokens only bound a task's activations.
  // Blocks are whole multiples of kGemmTokenUnit but for the last, so that each takes the float
  // weights' tokens-in-lanes kernels (gemm_x86.h) where the batch is long enough.
  const size_t at_most = (n + kGemmTokenBlock - 1) / kGemmTokenBlock;
  const size_t even = (n + at_most - 1) / at_most;
  const size_t block = std::min(n, (even + kGemmTokenUnit - 1) / kGemmTokenUnit * kGemmTokenUnit);
  const size_t blocks = (n + block - 1) / block;
  const size_t target = static_cast<size_t>(pool_.n_threads()) * kGemmTasksPerThread;
  size_t at_least = (target + blocks - 1) / blocks;
  if (is_float_weight(w0.type) && !gemm_holds_outputs_in_tiles(w0.type) && block >= kGemmTokenUnit) {
    const size_t units_cap = std::max<size_t>(1, kGemmOutputBytes / (block * sizeof(float) * unit));
    at_least = std::max(at_least, (total + units_cap - 1) / units_cap);
  }
  const size_t ranges = std::clamp<size_t>(at_least, 1, total);
  const size_t range_units = (total + ranges - 1) / ranges;
  const size_t n_ranges = (total + range_units - 1) / range_units;
  const bool exact = path == BatchPath::kExact;
  pool_.parallel_for(blocks * n_ranges, [&](size_t task, int thread) {
    const size_t t0 = (task / n_ranges) * block, t1 = std::min(n, t0 + block);
    const size_t ua = (task % n_ranges) * range_units, ub = std::min(total, ua + range_units);
    each_output(ua, ub, [&](const MatmulOut& o, size_t r0, size_t r1) {
      const GemmWeights w{o.w->type, o.w->cols, weight_rows(*o.w), weight_packed(*o.w)};
      const size_t ldy = static_cast<size_t>(o.y.cols);
      gemm(w, static_cast<int64_t>(r0), static_cast<int64_t>(r1), acts.data() + t0, static_cast<int64_t>(t1 - t0),
           f32(o.y) + t0 * ldy + r0, ldy, exact, s_.gemm[static_cast<size_t>(thread)]);
    });
  });
}

void CpuBackend::matmul_sgemm(const Tensor& w, const float* x, size_t n, float* y) {
  const int M = static_cast<int>(n);
  const int K = static_cast<int>(w.cols);
  const int N = static_cast<int>(w.rows);
  // OpenBLAS runs single-threaded (see the header); the pool splits the output columns, so each
  // thread multiplies all M tokens by its own rows of W.
  if (w.type == GgmlType::F32) {
    const auto* wf = reinterpret_cast<const float*>(weight_rows(w));
    pool_.parallel_ranges(static_cast<size_t>(N), 16, [&](size_t a, size_t b, int) {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, static_cast<int>(b - a), K, 1.0f, x, K,
                  wf + a * static_cast<size_t>(K), K, 0.0f, y + a, N);
    });
    return;
  }
  const size_t tile_rows = std::clamp<size_t>(kTileFloats / static_cast<size_t>(K), 16, static_cast<size_t>(N));
  auto& tile = s_.tile;
  if (tile.size() < tile_rows * static_cast<size_t>(K)) tile.resize(tile_rows * static_cast<size_t>(K));
  const uint8_t* packed = weight_packed(w);
  const uint8_t* rows_data = weight_rows(w);
  const size_t row_bytes = w.row_bytes();
  for (size_t r0 = 0; r0 < static_cast<size_t>(N); r0 += tile_rows) {
    const size_t rows = std::min(tile_rows, static_cast<size_t>(N) - r0);
    pool_.parallel_ranges(rows, 16, [&](size_t a, size_t b, int) {
      float* t = tile.data() + a * static_cast<size_t>(K);
      for (size_t r = a; r < b; ++r) {
        if (packed != nullptr) {
          dequantize_packed_row(w.type, packed, K, static_cast<int64_t>(r0 + r), tile.data() + r * K);
        } else {
          dequantize_row(w.type, rows_data + (r0 + r) * row_bytes, tile.data() + r * K, K);
        }
      }
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, static_cast<int>(b - a), K, 1.0f, x, K, t, K, 0.0f,
                  y + r0 + a, N);
    });
  }
}

}  // namespace kakeya::engine
