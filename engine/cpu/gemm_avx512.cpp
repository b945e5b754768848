// The AVX-512 GEMM set (gemm_x86.h with 16-lane vectors and VNNI byte products). This file is
// compiled with AVX-512 F/BW/VL/VNNI flags and entered only through detail::gemm_avx512() after
// cpu_features().can_run_avx512().
// GCC 12 reports its own _mm512_undefined_* placeholders (inside _mm512_cvtph_ps and friends) as
// (maybe-)uninitialized once inlined; the intrinsics overwrite every lane.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

#include "engine/cpu/cpu_features.h"
#include "engine/cpu/gemm_x86.h"

namespace kakeya::engine {
namespace {

// F32/F16/BF16 weights: widened to f32 and multiplied by FMA. BF16 takes this path also where
// the CPU has AVX512-BF16: on the Xeon measured, vdpbf16ps zmm peaks at half the FMA rate
// (bench/roofline.h: 110 vs 236 GFLOP/s per core), and the BF16 prefill of synth TinyLlama ran
// 41 tok/s through it against 52-53 through this path.
void avx512_floats(const GemmWeights& w, int64_t r0, int64_t r1, const ActivationBuffer* acts, int64_t n_tokens,
                   float* y, size_t ldy, GemmScratch& s) {
  float_weights_gemm<Vec512>(w, r0, r1, acts, n_tokens, y, ldy, s);
}

void avx512_gemm(const GemmWeights& w, int64_t r0, int64_t r1, const ActivationBuffer* acts, int64_t n_tokens,
                 float* y, size_t ldy, bool decode_exact, GemmScratch& s) {
  x86_gemm<Vec512>(quant_kernels(KernelIsa::Avx512), avx512_floats, w, r0, r1, acts, n_tokens, y, ldy, decode_exact,
                   s);
}

}  // namespace

namespace detail {

const GemmKernels& gemm_avx512() {
  static const GemmKernels k{x86_has_kernel, x86_matches_decode, avx512_gemm, x86_gemm_f32<Vec512>,
                             "fma"};
  return k;
}

}  // namespace detail
}  // namespace kakeya::engine
