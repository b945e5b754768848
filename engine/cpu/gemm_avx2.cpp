// The AVX2 GEMM set (gemm_x86.h with 8-lane vectors and maddubs byte products; this file is
// compiled with -mavx2 -mfma -mf16c and entered only through detail::gemm_avx2() after
// cpu_features().can_run_avx2()).
#include "engine/cpu/gemm_x86.h"

namespace kakeya::engine {
namespace {

void avx2_gemm(const GemmWeights& w, int64_t r0, int64_t r1, const ActivationBuffer* acts, int64_t n_tokens,
               float* y, size_t ldy, bool decode_exact, GemmScratch& s) {
  x86_gemm<Vec256>(quant_kernels(KernelIsa::Avx2), float_weights_gemm<Vec256>, w, r0, r1, acts, n_tokens, y, ldy,
                   decode_exact, s);
}

}  // namespace

namespace detail {

const GemmKernels& gemm_avx2() {
  static const GemmKernels k{x86_has_kernel, x86_matches_decode, avx2_gemm, x86_gemm_f32<Vec256>, "fma", "fma",
                             "maddubs"};
  return k;
}

}  // namespace detail
}  // namespace kakeya::engine
