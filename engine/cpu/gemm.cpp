// The GEMM dispatcher, scratch, the decode-kernel loop, and the portable set (every output through
// the portable decode kernels; the reference of the other sets).
#include "engine/cpu/gemm.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "engine/cpu/gemm_internal.h"

namespace kakeya::engine {

void* GemmScratch::get(int slot, size_t bytes) {
  if (bytes > bytes_[slot]) {
    const size_t rounded = (std::max<size_t>(bytes, 4096) + 63) / 64 * 64;
    void* p = std::aligned_alloc(64, rounded);
    if (p == nullptr) {
      std::fprintf(stderr, "kakeya: cannot allocate %zu bytes of GEMM scratch\n", rounded);
      std::abort();
    }
    region_[slot].reset(p);
    bytes_[slot] = rounded;
  }
  return region_[slot].get();
}

namespace detail {

void gemm_by_decode(const QuantKernels& set, const GemmWeights& w, int64_t r0, int64_t r1,
                    const ActivationBuffer* acts, int64_t n_tokens, float* y, size_t ldy) {
  const size_t row_bytes = ggml_row_bytes(w.type, w.n);
  const int64_t tile = std::max<int64_t>(kPackRows, static_cast<int64_t>(kDecodeTileBytes / row_bytes) & ~(kPackRows - 1));
  for (int64_t t0 = r0; t0 < r1; t0 += tile) {
    const int64_t t1 = std::min(r1, t0 + tile);
    for (int64_t t = 0; t < n_tokens; ++t) {
      float* out = y + static_cast<size_t>(t) * ldy + (t0 - r0);
      if (w.packed != nullptr) {
        set.matvec_packed(w.type, w.packed, w.n, t0, t1, acts[t], out);
      } else {
        set.matvec(w.type, w.rows, w.n, t0, t1, acts[t], out);
      }
    }
  }
}

namespace {

bool portable_has_kernel(GgmlType) { return false; }
bool portable_matches_decode(GgmlType, bool) { return true; }

void portable_gemm(const GemmWeights& w, int64_t r0, int64_t r1, const ActivationBuffer* acts, int64_t n_tokens,
                   float* y, size_t ldy, bool, GemmScratch&) {
  gemm_by_decode(quant_kernels(KernelIsa::Portable), w, r0, r1, acts, n_tokens, y, ldy);
}

// Plain loops, f32 accumulation in k order.
void portable_gemm_f32(int64_t m, int64_t n, int64_t k, float alpha, const float* a, size_t lda, const float* b,
                       size_t ldb, bool b_rows, float* c, size_t ldc, GemmScratch&) {
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      float s = 0.0f;
      for (int64_t kk = 0; kk < k; ++kk) {
        const float bv = b_rows ? b[static_cast<size_t>(j) * ldb + static_cast<size_t>(kk)]
                                : b[static_cast<size_t>(kk) * ldb + static_cast<size_t>(j)];
        s += a[static_cast<size_t>(i) * lda + static_cast<size_t>(kk)] * bv;
      }
      c[static_cast<size_t>(i) * ldc + static_cast<size_t>(j)] = alpha * s;
    }
  }
}

const GemmKernels& active_gemm() {
  static const GemmKernels& k = gemm_kernels(active_kernel_isa());
  return k;
}

}  // namespace

const GemmKernels& gemm_portable() {
  static const GemmKernels k{portable_has_kernel, portable_matches_decode, portable_gemm, portable_gemm_f32,
                             "decode", "decode", "decode"};
  return k;
}

}  // namespace detail

const GemmKernels& gemm_kernels(KernelIsa isa) {
  switch (isa) {
    case KernelIsa::Avx2: return detail::gemm_avx2();
    case KernelIsa::Avx512: return detail::gemm_avx512();
    case KernelIsa::Portable: break;
  }
  return detail::gemm_portable();
}

bool has_gemm_kernel(GgmlType type) { return detail::active_gemm().has_kernel(type); }
bool gemm_holds_outputs_in_tiles(GgmlType type) {
  const GemmKernels& g = detail::active_gemm();
  return (type == GgmlType::BF16 && std::strcmp(g.bf16_path, "amx") == 0) ||
         (type == GgmlType::F16 && std::strcmp(g.f16_path, "amx") == 0);
}

bool gemm_matches_decode(GgmlType type, bool packed) { return detail::active_gemm().matches_decode(type, packed); }

void gemm(const GemmWeights& w, int64_t r0, int64_t r1, const ActivationBuffer* acts, int64_t n_tokens, float* y,
          size_t ldy, bool decode_exact, GemmScratch& scratch) {
  detail::active_gemm().gemm(w, r0, r1, acts, n_tokens, y, ldy, decode_exact, scratch);
}

void gemm_f32(int64_t m, int64_t n, int64_t k, float alpha, const float* a, size_t lda, const float* b, size_t ldb,
              bool b_rows, float* c, size_t ldc, GemmScratch& scratch) {
  detail::active_gemm().gemm_f32(m, n, k, alpha, a, lda, b, ldb, b_rows, c, ldc, scratch);
}

}  // namespace kakeya::engine
