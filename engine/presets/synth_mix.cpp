#include "engine/presets/synth_mix.h"

#include <strings.h>

#include <array>
#include <initializer_list>
#include <iterator>

namespace kakeya::engine {
namespace {

struct FileTypeInfo {
  LlamaFileType ftype;
  const char* name;
  GgmlType default_type;
};

constexpr FileTypeInfo kFileTypes[] = {
    {LlamaFileType::F32, "f32", GgmlType::F32},          {LlamaFileType::F16, "f16", GgmlType::F16},
    {LlamaFileType::BF16, "bf16", GgmlType::BF16},       {LlamaFileType::Q4_0, "q4_0", GgmlType::Q4_0},
    {LlamaFileType::Q4_1, "q4_1", GgmlType::Q4_1},       {LlamaFileType::Q5_0, "q5_0", GgmlType::Q5_0},
    {LlamaFileType::Q5_1, "q5_1", GgmlType::Q5_1},       {LlamaFileType::Q8_0, "q8_0", GgmlType::Q8_0},
    {LlamaFileType::Q2_K, "q2_k", GgmlType::Q2_K},       {LlamaFileType::Q3_K_S, "q3_k_s", GgmlType::Q3_K},
    {LlamaFileType::Q3_K_M, "q3_k_m", GgmlType::Q3_K},   {LlamaFileType::Q3_K_L, "q3_k_l", GgmlType::Q3_K},
    {LlamaFileType::Q4_K_S, "q4_k_s", GgmlType::Q4_K},   {LlamaFileType::Q4_K_M, "q4_k_m", GgmlType::Q4_K},
    {LlamaFileType::Q5_K_S, "q5_k_s", GgmlType::Q5_K},   {LlamaFileType::Q5_K_M, "q5_k_m", GgmlType::Q5_K},
    {LlamaFileType::Q6_K, "q6_k", GgmlType::Q6_K},       {LlamaFileType::IQ4_NL, "iq4_nl", GgmlType::IQ4_NL},
    {LlamaFileType::IQ4_XS, "iq4_xs", GgmlType::IQ4_XS},
};

constexpr auto kAll = [] {
  std::array<LlamaFileType, std::size(kFileTypes)> a{};
  for (size_t i = 0; i < a.size(); ++i) a[i] = kFileTypes[i].ftype;
  return a;
}();

const FileTypeInfo& info(LlamaFileType ftype) {
  for (const FileTypeInfo& f : kFileTypes)
    if (f.ftype == ftype) return f;
  return kFileTypes[0];
}

bool use_more_bits(int i, int n) { return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2; }

bool is_one_of(LlamaFileType f, std::initializer_list<LlamaFileType> set) {
  for (LlamaFileType s : set)
    if (s == f) return true;
  return false;
}

// llama_tensor_get_type's choice before the row-length fallback.
GgmlType rule_type(LlamaFileType f, const MixTensor& t) {
  using F = LlamaFileType;
  const GgmlType base = llama_file_type_default(f);
  if (ggml_block_size(base) == 1) return base;  // F32/F16/BF16 files: llama-quantize applies no rules
  const int i = t.layer, n = t.n_layer;
  switch (t.role) {
    case TensorRole::kOutput:
      if (t.ne0 % ggml_block_size(base) != 0) return GgmlType::Q8_0;
      return base == GgmlType::Q8_0 ? base : GgmlType::Q6_K;
    case TensorRole::kAttnV:
      if (f == F::Q2_K) return t.n_gqa >= 4 ? GgmlType::Q4_K : GgmlType::Q3_K;
      if (f == F::Q3_K_M) return i < 2 ? GgmlType::Q5_K : GgmlType::Q4_K;
      if (f == F::Q3_K_L) return GgmlType::Q5_K;
      if (is_one_of(f, {F::IQ4_NL, F::IQ4_XS}) && t.n_gqa >= 4) return GgmlType::Q5_K;
      if (is_one_of(f, {F::Q4_K_M, F::Q5_K_M}) && use_more_bits(i, n)) return GgmlType::Q6_K;
      if (f == F::Q4_K_S && i < 4) return GgmlType::Q5_K;
      return base;
    case TensorRole::kFfnDown:
      if (f == F::Q2_K) return GgmlType::Q3_K;
      if (f == F::Q3_K_M) return i < n / 16 ? GgmlType::Q5_K : GgmlType::Q4_K;
      if (f == F::Q3_K_L) return GgmlType::Q5_K;
      if (f == F::Q4_K_M) return use_more_bits(i, n) ? GgmlType::Q6_K : base;
      if (i < n / 8 && is_one_of(f, {F::IQ4_NL, F::IQ4_XS})) return GgmlType::Q5_K;
      if (f == F::Q5_K_M && use_more_bits(i, n)) return GgmlType::Q6_K;
      if (f == F::Q4_K_S && i < n / 8) return GgmlType::Q5_K;
      return base;
    case TensorRole::kAttnOutput:
      if (f == F::Q2_K) return GgmlType::Q3_K;
      if (f == F::Q3_K_M) return GgmlType::Q4_K;
      if (f == F::Q3_K_L) return GgmlType::Q5_K;
      return base;
    case TensorRole::kTokenEmbd:
    case TensorRole::kAttnQ:
    case TensorRole::kAttnK:
    case TensorRole::kFfnGate:
    case TensorRole::kFfnUp: return base;
  }
  return base;
}

}  // namespace

const char* llama_file_type_name(LlamaFileType ftype) { return info(ftype).name; }

std::span<const LlamaFileType> llama_file_types() { return kAll; }

Result<LlamaFileType> llama_file_type_from_name(const std::string& name) {
  for (const FileTypeInfo& f : kFileTypes)
    if (strcasecmp(name.c_str(), f.name) == 0) return f.ftype;
  std::string known;
  for (const FileTypeInfo& f : kFileTypes) known += (known.empty() ? "" : ", ") + std::string(f.name);
  return make_error("bad_param", "unknown llama.cpp file type \"" + name + "\" (known: " + known + ")");
}

GgmlType llama_file_type_default(LlamaFileType ftype) { return info(ftype).default_type; }

LlamaFileType llama_file_type_of_pure(GgmlType type) {
  switch (type) {
    case GgmlType::Q3_K: return LlamaFileType::Q3_K_M;
    case GgmlType::Q4_K: return LlamaFileType::Q4_K_M;
    case GgmlType::Q5_K: return LlamaFileType::Q5_K_M;
    default: break;
  }
  for (const FileTypeInfo& f : kFileTypes)
    if (f.default_type == type) return f.ftype;
  return LlamaFileType::F32;
}

Result<GgmlType> llama_mix_tensor_type(LlamaFileType ftype, const MixTensor& t) {
  GgmlType type = rule_type(ftype, t);
  if (t.ne0 % ggml_block_size(type) == 0) return type;
  switch (type) {
    case GgmlType::Q2_K:
    case GgmlType::Q3_K:
    case GgmlType::IQ4_XS: type = GgmlType::IQ4_NL; break;
    case GgmlType::Q4_K: type = GgmlType::Q5_0; break;
    case GgmlType::Q5_K: type = GgmlType::Q5_1; break;
    case GgmlType::Q6_K: type = GgmlType::Q8_0; break;
    default:
      return make_error("bad_shape", "row length " + std::to_string(t.ne0) + " is not a multiple of the " +
                                         ggml_type_name(type) + " block size " + std::to_string(ggml_block_size(type)));
  }
  if (t.ne0 % ggml_block_size(type) != 0) type = GgmlType::F16;
  return type;
}

}  // namespace kakeya::engine
