#pragma once
// GGML tensor element types as stored in GGUF files: ids, block geometry, names, and the
// scalar fp16/bf16 conversions. Ids and block layouts follow ggml (ggml.h / ggml-common.h);
// only the types the Kakeya engine executes are listed.

#include <cstddef>
#include <cstdint>

#include "bridge/result.h"

namespace kakeya::engine {

// GGML type ids (the values stored in a GGUF tensor table).
// Q8_K (15) is only an activation format (ActivationBuffer::vec_dot_type for Q4_K/Q6_K weights):
// ggml_type_from_id rejects it as a tensor type.
enum class GgmlType : uint32_t { F32 = 0, F16 = 1, Q4_0 = 2, Q8_0 = 8, Q4_K = 12, Q6_K = 14, Q8_K = 15, BF16 = 30 };

// ggml's names: "f32","f16","q4_0","q8_0","q4_K","q6_K","q8_K","bf16".
const char* ggml_type_name(GgmlType type);

// Errors: code "unsupported_type", message "unsupported ggml type id N (name if known)".
Result<GgmlType> ggml_type_from_id(uint32_t id);

// Parses a name as printed by ggml_type_name (case-insensitive: "Q4_K" and "q4_k" both work).
Result<GgmlType> ggml_type_from_name(const char* name);

// Elements per block: 1 (F32/F16/BF16), 32 (Q4_0/Q8_0), 256 (Q4_K/Q6_K/Q8_K).
int64_t ggml_block_size(GgmlType type);

// Bytes per block: F32 4, F16/BF16 2, Q4_0 18, Q8_0 34, Q4_K 144, Q6_K 210, Q8_K 292.
size_t ggml_block_bytes(GgmlType type);

// Bytes of one row of n elements. REQUIRES: n >= 0 and n % ggml_block_size(type) == 0.
size_t ggml_row_bytes(GgmlType type, int64_t n);

// IEEE binary16 <-> binary32. fp32_to_fp16 rounds to nearest even (like F16C's
// _cvtss_sh(x, 0) and ggml's portable converter); NaN stays NaN, overflow becomes +-inf.
float fp16_to_fp32(uint16_t h);
uint16_t fp32_to_fp16(float f);

// bfloat16 <-> binary32. fp32_to_bf16 rounds to nearest even; NaN becomes a quiet NaN
// (ggml_compute_fp32_to_bf16 semantics).
float bf16_to_fp32(uint16_t h);
uint16_t fp32_to_bf16(float f);

}  // namespace kakeya::engine
