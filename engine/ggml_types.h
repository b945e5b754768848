#pragma once
// GGML tensor element types as stored in GGUF files: ids, block geometry, names, and the
// scalar fp16/bf16 conversions. Ids and block layouts follow ggml (ggml.h / ggml-common.h);
// only the types the Kakeya engine executes are listed.

#include <cstddef>
#include <cstdint>
#include <span>

#include "bridge/result.h"

namespace kakeya::engine {

// GGML type ids (the values stored in a GGUF tensor table).
// Q8_1 (9) and Q8_K (15) are only activation formats (ActivationBuffer::vec_dot_type: Q8_1 for
// Q4_1/Q5_1 weights, Q8_K for the K-quants and IQ4_XS): ggml_type_from_id rejects them as tensor
// types.
enum class GgmlType : uint32_t {
  F32 = 0,
  F16 = 1,
  Q4_0 = 2,
  Q4_1 = 3,
  Q5_0 = 6,
  Q5_1 = 7,
  Q8_0 = 8,
  Q8_1 = 9,
  Q2_K = 10,
  Q3_K = 11,
  Q4_K = 12,
  Q5_K = 13,
  Q6_K = 14,
  Q8_K = 15,
  IQ4_NL = 20,
  IQ4_XS = 23,
  BF16 = 30,
};

// ggml's names: "f32", "f16", "bf16", "q4_0", "q4_1", "q5_0", "q5_1", "q8_0", "q8_1", "q2_K",
// "q3_K", "q4_K", "q5_K", "q6_K", "q8_K", "iq4_nl", "iq4_xs".
const char* ggml_type_name(GgmlType type);

// Every type a GGUF tensor may have here (the activation-only Q8_1 and Q8_K excluded), in id order.
std::span<const GgmlType> ggml_storage_types();

// Errors: code "unsupported_type", message "unsupported ggml type id N (name if known); supported: ...".
Result<GgmlType> ggml_type_from_id(uint32_t id);

// Parses a storage type's name as printed by ggml_type_name (case-insensitive: "Q4_K" and "q4_k"
// both work). Errors: "unsupported_type" naming the value and the supported names.
Result<GgmlType> ggml_type_from_name(const char* name);

// Elements per block: 1 (F32/F16/BF16), 32 (Q4_0/Q4_1/Q5_0/Q5_1/Q8_0/Q8_1/IQ4_NL),
// 256 (Q2_K..Q6_K, Q8_K, IQ4_XS).
int64_t ggml_block_size(GgmlType type);

// Bytes per block (ggml-common.h): F32 4, F16/BF16 2, Q4_0 18, Q4_1 20, Q5_0 22, Q5_1 24, Q8_0 34,
// Q8_1 36, Q2_K 84, Q3_K 110, Q4_K 144, Q5_K 176, Q6_K 210, Q8_K 292, IQ4_NL 18, IQ4_XS 136.
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
