#pragma once
// llama.cpp's file types ("ftypes", the value of general.file_type) and the per-tensor type rules
// its quantizer applies for them (llama-quant.cpp llama_tensor_get_type at b4748, for the llama
// architecture without experts and without an importance matrix), so `kakeya-engine synth` can
// write files that mix types per tensor the way a user's Q4_K_M / Q5_K_M / Q3_K_M / Q4_K_S file
// does:
//   output.weight   Q6_K (Q8_0 when its rows are not whole 256-blocks; Q8_0 files keep Q8_0)
//   attn_v          Q2_K: Q3_K (Q4_K at GQA >= 4); Q3_K_M: Q5_K in the first 2 layers, then Q4_K;
//                   Q3_K_L: Q5_K; Q4_K_M/Q5_K_M: Q6_K in the layers use_more_bits picks;
//                   Q4_K_S: Q5_K in the first 4 layers; IQ4_NL/IQ4_XS: Q5_K at GQA >= 4
//   ffn_down        Q2_K: Q3_K; Q3_K_M: Q5_K below n_layer/16, then Q4_K; Q3_K_L: Q5_K;
//                   Q4_K_M/Q5_K_M: Q6_K where use_more_bits; Q4_K_S, IQ4_NL, IQ4_XS: Q5_K below
//                   n_layer/8
//   attn_output     Q2_K: Q3_K; Q3_K_M: Q4_K; Q3_K_L: Q5_K
//   everything else the file type's default type (Q3_K for Q3_K_*, Q4_K for Q4_K_*, ...).
// use_more_bits(i, n) = i < n/8 || i >= 7n/8 || (i - n/8) % 3 == 2. A chosen K-type whose row
// length is not a multiple of 256 falls back as llama.cpp's does: Q2_K/Q3_K/IQ4_XS to IQ4_NL, Q4_K
// to Q5_0, Q5_K to Q5_1, Q6_K to Q8_0.
#include <cstdint>
#include <span>
#include <string>

#include "bridge/result.h"
#include "engine/ggml_types.h"

namespace kakeya::engine {

enum class LlamaFileType : uint32_t {
  F32 = 0,
  F16 = 1,
  Q4_0 = 2,
  Q4_1 = 3,
  Q8_0 = 7,
  Q5_0 = 8,
  Q5_1 = 9,
  Q2_K = 10,
  Q3_K_S = 11,
  Q3_K_M = 12,
  Q3_K_L = 13,
  Q4_K_S = 14,
  Q4_K_M = 15,
  Q5_K_S = 16,
  Q5_K_M = 17,
  Q6_K = 18,
  IQ4_NL = 25,
  IQ4_XS = 30,
  BF16 = 32,
};

// Lower-case names as llama-quantize spells them ("q4_k_m", "iq4_xs", "f16"), every file type above.
const char* llama_file_type_name(LlamaFileType ftype);
std::span<const LlamaFileType> llama_file_types();
// Case-insensitive. Errors: "bad_param" naming the value and the known names.
Result<LlamaFileType> llama_file_type_from_name(const std::string& name);

// The type of every tensor the file type's rules do not change.
GgmlType llama_file_type_default(LlamaFileType ftype);

// The file type llama.cpp records for a file whose every 2-D tensor is `type` (its --pure files):
// the file type of which `type` is the default (Q3_K: Q3_K_M, Q4_K: Q4_K_M, Q5_K: Q5_K_M).
LlamaFileType llama_file_type_of_pure(GgmlType type);

// Where a tensor sits in a llama model, as the rules see it.
enum class TensorRole { kTokenEmbd, kOutput, kAttnQ, kAttnK, kAttnV, kAttnOutput, kFfnGate, kFfnUp, kFfnDown };

struct MixTensor {
  TensorRole role;
  int layer = 0;    // 0-based block index (ignored for token_embd and output)
  int n_layer = 1;
  int n_gqa = 1;    // n_head / n_head_kv
  int64_t ne0 = 0;  // row length
};

// The type llama-quantize gives the 2-D tensor `t` of a file of type `ftype` (rules above).
// Errors: "bad_shape" when no fallback fits the row length (not a multiple of 32), naming it.
Result<GgmlType> llama_mix_tensor_type(LlamaFileType ftype, const MixTensor& t);

}  // namespace kakeya::engine
