#pragma once
// f32 rows to GGML blocks, as llama.cpp's llama-quantize writes them without an importance matrix
// (ggml-quants.c at b4748: quantize_row_*_ref, and quantize_iq4_nl / quantize_iq4_xs, which
// llama-quantize calls with 7 scale trials): the same float operations in the same order, so a
// tensor quantized here is byte-identical to llama-quantize's (tests/engine/quantize_test.cpp
// checks it on every tensor of the reference files). Used by the GGUF writer (synth) and the
// quantized draft copy. Block layouts: engine/cpu/quant.h.
//
// Every function reads n floats from x and writes ggml_row_bytes(type, n) bytes to dst.
// REQUIRES: n % ggml_block_size(type) == 0 and finite x.
#include <cstdint>

#include "bridge/result.h"
#include "engine/ggml_types.h"

namespace kakeya::engine {

// 32-element blocks.
void quantize_row_q4_0_ref(const float* x, uint8_t* dst, int64_t n);
void quantize_row_q4_1_ref(const float* x, uint8_t* dst, int64_t n);
void quantize_row_q5_0_ref(const float* x, uint8_t* dst, int64_t n);
void quantize_row_q5_1_ref(const float* x, uint8_t* dst, int64_t n);
void quantize_row_q8_0_ref(const float* x, uint8_t* dst, int64_t n);
void quantize_row_iq4_nl_ref(const float* x, uint8_t* dst, int64_t n);
// Super-blocks of 256 (engine/quantize_kquants.cpp).
void quantize_row_q2_k_ref(const float* x, uint8_t* dst, int64_t n);
void quantize_row_q3_k_ref(const float* x, uint8_t* dst, int64_t n);
void quantize_row_q4_k_ref(const float* x, uint8_t* dst, int64_t n);
void quantize_row_q5_k_ref(const float* x, uint8_t* dst, int64_t n);
void quantize_row_q6_k_ref(const float* x, uint8_t* dst, int64_t n);
void quantize_row_iq4_xs_ref(const float* x, uint8_t* dst, int64_t n);

// Converts one f32 row to `type`: every storage type of ggml_types.h (F32, F16 and BF16 round to
// nearest even). Errors: "unsupported_type" for the activation-only Q8_1/Q8_K, naming the type.
Status convert_row(GgmlType type, const float* x, uint8_t* dst, int64_t n);

}  // namespace kakeya::engine
