#pragma once
// Internals shared by the CPU kernel sets (quant*.cpp): the per-ISA QuantKernels tables, the
// per-type row kernels of the lane-exact types, offsets inside a packed group (layout: quant.h)
// and the portable activation quantizers. Not part of the engine's API: include only from those
// files.
#include <cstddef>
#include <cstdint>

#include "engine/cpu/quant.h"

namespace kakeya::engine::detail {

const QuantKernels& portable_kernels();
const QuantKernels& avx2_kernels();    // quant_avx2.cpp; call only when the CPU can run it
const QuantKernels& avx512_kernels();  // quant_avx512.cpp; call only when the CPU can run it

// Row kernels of one weight type in one kernel set (the types whose kernels round like ggml's x86
// code in every set, quant_lanes.h: Q4_1, Q5_0, Q5_1, IQ4_NL, Q2_K, Q3_K, Q5_K, IQ4_XS).
struct TypeKernels {
  // dst[0..n) = the f32 values of a row of n elements (bit-identical to ggml's to_float).
  void (*dequantize)(const void* src, float* dst, int64_t n);
  // One row of n elements · activations in vec_dot_type(type) blocks (n elements).
  float (*dot)(const void* row, const void* act, int64_t n);
  // y[r - r0] = row r · act for r in [r0, r1) of a row-major matrix (each row exactly as `dot`).
  void (*matvec)(const void* w, int64_t n, int64_t r0, int64_t r1, const ActivationBuffer& act, float* y);
};
// nullptr for the types a set does not hold. Portable: quant_blocks32.cpp (Q4_1, Q5_0, Q5_1,
// IQ4_NL) and quant_kquants.cpp (Q2_K, Q3_K, Q5_K, IQ4_XS); x86: quant_lanes_avx2.cpp and
// quant_lanes_avx512.cpp (all eight; call only when the CPU can run them).
const TypeKernels* blocks32_portable(GgmlType type);
const TypeKernels* kquants_portable(GgmlType type);
const TypeKernels* lanes_portable(GgmlType type);  // the first non-null of the two above
const TypeKernels* lanes_avx2(GgmlType type);
const TypeKernels* lanes_avx512(GgmlType type);

// y[r - r0] = dot(row r, act) for r in [r0, r1) of a row-major matrix with `row_bytes` per row,
// prefetching a few rows ahead (quant.cpp: portable code any kernel set may call).
void matvec_rows(size_t row_bytes, float (*dot)(const void*, const void*, int64_t), const void* w, int64_t n,
                 int64_t r0, int64_t r1, const ActivationBuffer& act, float* y);
// TypeKernels::matvec of the portable sets: matvec_rows over Dot. Instantiate only in portable code.
template <GgmlType T, float (*Dot)(const void*, const void*, int64_t)>
void portable_matvec_rows(const void* w, int64_t n, int64_t r0, int64_t r1, const ActivationBuffer& act, float* y) {
  matvec_rows(ggml_row_bytes(T, n), Dot, w, n, r0, r1, act, y);
}

// Packed-layout helpers shared by the kernel sets (offsets inside a group; layout in quant.h).
size_t packed_group_bytes(GgmlType type, int64_t n);  // bytes of one group of kPackRows rows
inline size_t packed_block_quant_bytes(GgmlType type) { return type == GgmlType::Q4_0 ? 256 : 512; }
inline size_t packed_pair_bytes(GgmlType type) { return 64 + 2 * packed_block_quant_bytes(type); }
inline size_t packed_scales_offset(GgmlType type, int64_t b) {
  return static_cast<size_t>(b / 2) * packed_pair_bytes(type) + static_cast<size_t>(b % 2) * 32;
}
inline size_t packed_quants_offset(GgmlType type, int64_t b) {
  return static_cast<size_t>(b / 2) * packed_pair_bytes(type) + 64 +
         static_cast<size_t>(b % 2) * packed_block_quant_bytes(type);
}
// Helpers shared by both kernel sets (portable code).
size_t activation_bytes(GgmlType weight_type, int64_t n);
void quantize_row_q8_0(const float* x, BlockQ8_0* y, int64_t n);
// Q8_0's d and qs plus s = fp16(d · Σqs) with d the unrounded f32 amax/127 (ggml quantize_row_q8_1
// as its AVX2 path computes it).
void quantize_row_q8_1(const float* x, BlockQ8_1* y, int64_t n);
void quantize_row_q8_k(const float* x, BlockQ8_K* y, int64_t n);
// Fills out.block_sums from the Q8_0 blocks in out.bytes (both kernel sets call it).
void fill_block_sums(ActivationBuffer& out);

// The constants of exp_f32 (quant.h), shared by its scalar and vector forms: Cephes' expf.
inline constexpr float kExpF32Max = 88.3762626647949f;  // 127.5 · ln 2: above, n would be 128
inline constexpr float kExpF32Min = -87.33654475f;      // ln 2^-126: below, 2^n leaves the normal range
inline constexpr float kLog2e = 1.44269504088896341f;
inline constexpr float kLn2Hi = 0.693359375f;
inline constexpr float kLn2Lo = 2.12194440e-4f;   // ln 2 = kLn2Hi − kLn2Lo
inline constexpr float kExpPoly[6] = {1.9875691500e-4f, 1.3981999507e-3f, 8.3334519073e-3f,
                                      4.1665795894e-2f, 1.6666665459e-1f, 5.0000001201e-1f};

}  // namespace kakeya::engine::detail
