#pragma once
// Internals shared by the GEMM kernel sets (gemm*.cpp): the per-ISA tables and the decode-kernel
// loop every set falls back to. Include only from those files.
#include <cstddef>
#include <cstdint>

#include "engine/cpu/gemm.h"
#include "engine/cpu/quant.h"

namespace kakeya::engine::detail {

const GemmKernels& gemm_portable();
const GemmKernels& gemm_avx2();    // gemm_avx2.cpp; call only when the CPU can run it
const GemmKernels& gemm_avx512();  // gemm_avx512.cpp; call only when the CPU can run it
const GemmKernels& gemm_avx512_fma();        // its BF16 weights by FMA
const GemmKernels& gemm_avx512_bf16_dot();   // its BF16 weights by vdpbf16ps; needs avx512bf16
const GemmKernels& gemm_avx512_bf16_amx();   // its BF16 weights by AMX tdpbf16ps; needs amx_bf16

// Bytes of weight rows reused across the tokens of gemm_by_decode (about half of a 1 MiB L2).
inline constexpr size_t kDecodeTileBytes = size_t{256} << 10;

// gemm() through the decode kernels of `set`: rows [r0, r1) in tiles of about kDecodeTileBytes of
// weights (whole packed groups), each tile read once and reused for every token; every output is
// what set.matvec (or set.matvec_packed for packed weights) gives.
void gemm_by_decode(const QuantKernels& set, const GemmWeights& w, int64_t r0, int64_t r1,
                    const ActivationBuffer* acts, int64_t n_tokens, float* y, size_t ldy);

}  // namespace kakeya::engine::detail
