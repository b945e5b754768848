// The CPU backend's matmul paths (cpu_backend.h): quantized activations through the decode
// kernels (row-major or packed weights), or dequantize + OpenBLAS sgemm.
#include <cblas.h>

#include <algorithm>

#include "engine/cpu/cpu_backend.h"

namespace kakeya::engine {
namespace {

// Floats of one dequantized weight tile for the sgemm path (8 MiB).
constexpr size_t kTileFloats = size_t{2} << 20;
// Bytes of weight rows reused across the tokens of a quantized-activation batch (about half of
// a typical 1 MiB L2; see matmul_quantized).
constexpr size_t kVerifyTileBytes = size_t{256} << 10;
// Least weight bytes per parallel range of a mat-vec worth handing to another thread.
constexpr size_t kMinRangeBytes = size_t{32} << 10;

const uint8_t* weight_rows(const Tensor& w) { return static_cast<const CpuBuffer*>(w.buffer)->data() + w.offset; }
const uint8_t* weight_packed(const Tensor& w) { return static_cast<const CpuBuffer*>(w.buffer)->packed(); }

}  // namespace

bool CpuBackend::sgemm_matmul(const Tensor& w, size_t n) const {
  if (!use_sgemm(n)) return false;
  // kAuto: packed weights stay on the packed decode kernels at every batch size, reused from
  // cache across the batch: 1.2-3.7x the prefill throughput of dequantize + sgemm on the
  // TinyLlama shape (bench/README.md).
  return !(batched_matmul_ == MatmulMode::kAuto && weight_packed(w) != nullptr);
}

void CpuBackend::matmul(std::span<const MatmulOut> outs, const Tensor& x) {
  const size_t n = static_cast<size_t>(x.rows);
  // Fuse runs of outputs with the same weight type and path (one activation conversion, one
  // parallel region).
  const MatmulOut* begin = outs.data();
  const MatmulOut* const end_all = outs.data() + outs.size();
  while (begin != end_all) {
    const Tensor& w0 = *begin->w;
    if (sgemm_matmul(w0, n)) {
      matmul_sgemm(w0, f32(x), n, f32(begin->y));
      ++begin;
      continue;
    }
    const MatmulOut* end = begin + 1;
    while (end != end_all && end->w->type == w0.type && end->w->cols == w0.cols &&
           (weight_packed(*end->w) != nullptr) == (weight_packed(w0) != nullptr) && !sgemm_matmul(*end->w, n))
      ++end;
    matmul_quantized(std::span<const MatmulOut>(begin, end), x);
    begin = end;
  }
}

void CpuBackend::matmul_quantized(std::span<const MatmulOut> outs, const Tensor& xt) {
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
  // of `unit` rows: whole packed groups when the weights are packed (the fused outputs share
  // type and n_in, so either all or none are packed), so no range starts inside a group.
  const bool packed = weight_packed(w0) != nullptr;
  const size_t unit = packed ? static_cast<size_t>(kPackRows) : 1;
  size_t total = 0;
  for (const MatmulOut& o : outs) total += (static_cast<size_t>(o.w->rows) + unit - 1) / unit;
  // A range holds at least kMinRangeBytes of weights: tiny matrices (a 260K-parameter model)
  // run inline instead of paying a hand-off per job.
  const size_t min_rows = std::max<size_t>(32, kMinRangeBytes / std::max<size_t>(1, w0.row_bytes()));
  auto rows_dot = [&](const Tensor& w, size_t r0, size_t r1, const ActivationBuffer& act, float* y) {
    if (packed) {
      matvec_packed(w.type, weight_packed(w), w.cols, static_cast<int64_t>(r0), static_cast<int64_t>(r1), act, y);
    } else {
      matvec(w.type, weight_rows(w), w.cols, static_cast<int64_t>(r0), static_cast<int64_t>(r1), act, y);
    }
  };
  pool_.parallel_ranges(total, (min_rows + unit - 1) / unit, [&](size_t ua, size_t ub, int) {
    size_t base = 0;  // in units
    for (const MatmulOut& o : outs) {
      const size_t rows = static_cast<size_t>(o.w->rows);
      const size_t units = (rows + unit - 1) / unit;
      const size_t u0 = std::max(ua, base), u1 = std::min(ub, base + units);  // this output's units
      if (u0 < u1) {
        const size_t r0 = (u0 - base) * unit, r1 = std::min(rows, (u1 - base) * unit);
        float* y = f32(o.y);
        if (n == 1) {
          rows_dot(*o.w, r0, r1, acts[0], y + r0);
        } else {
          // Several tokens (prefill, verify blocks): a tile of rows small enough to stay in L2 is
          // read from memory once and reused for every token, instead of streaming the rows n times.
          const size_t row_bytes = o.w->row_bytes();
          const size_t tile = std::max<size_t>(kPackRows, (kVerifyTileBytes / row_bytes) & ~size_t{kPackRows - 1});
          for (size_t t0 = r0; t0 < r1; t0 += tile) {
            const size_t t1 = std::min(r1, t0 + tile);
            for (size_t t = 0; t < n; ++t) rows_dot(*o.w, t0, t1, acts[t], y + t * rows + t0);
          }
        }
      }
      base += units;
    }
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
