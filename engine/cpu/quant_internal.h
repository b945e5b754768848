#pragma once
// Internals shared by the CPU kernel sets (quant.cpp, quant_avx2.cpp, quant_avx512.cpp): the
// per-ISA QuantKernels tables, offsets inside a packed group (layout: quant.h) and the portable
// activation quantizers. Not part of the engine's API: include only from those files.
#include <cstddef>
#include <cstdint>

#include "engine/cpu/quant.h"

namespace kakeya::engine::detail {

const QuantKernels& portable_kernels();
const QuantKernels& avx2_kernels();    // quant_avx2.cpp; call only when the CPU can run it
const QuantKernels& avx512_kernels();  // quant_avx512.cpp; call only when the CPU can run it
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
void quantize_row_q8_k(const float* x, BlockQ8_K* y, int64_t n);
// Fills out.block_sums from the Q8_0 blocks in out.bytes (both kernel sets call it).
void fill_block_sums(ActivationBuffer& out);

}  // namespace kakeya::engine::detail
