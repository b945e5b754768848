// Tokenizer::from_gguf: the tokenizer.ggml.* keys of a GGUF, read the way llama.cpp c392e50
// (src/llama-vocab.cpp `impl::load`) reads them, into a VocabSpec.
#include "engine/gguf.h"
#include "engine/tokenizer.h"

#include <utility>

namespace kakeya::engine {
namespace {

// An optional id key: the value when present and inside the vocabulary, else `fallback`.
Result<int32_t> read_id(const GgufFile& gguf, std::string_view key, int32_t fallback, size_t n_vocab) {
  if (!gguf.has(key)) return fallback;
  KAKEYA_ASSIGN_OR_RETURN(const int64_t v, gguf.get_int(key));
  if (v < 0 || static_cast<uint64_t>(v) >= n_vocab) return fallback;  // llama.cpp: warn, keep default
  return static_cast<int32_t>(v);
}

Result<std::optional<bool>> read_flag(const GgufFile& gguf, std::string_view key) {
  if (!gguf.has(key)) return std::optional<bool>();
  KAKEYA_ASSIGN_OR_RETURN(const bool v, gguf.get_bool(key));
  return std::optional<bool>(v);
}

}  // namespace

Result<Tokenizer> Tokenizer::from_gguf(const GgufFile& gguf) {
  if (!gguf.has("tokenizer.ggml.model")) {
    return make_error("unsupported_tokenizer", "GGUF has no tokenizer.ggml.model key");
  }
  KAKEYA_ASSIGN_OR_RETURN(const std::string model, gguf.get_string("tokenizer.ggml.model"));
  VocabSpec spec;
  if (model == "llama") {
    spec.kind = VocabKind::kSpm;
  } else if (model == "gpt2") {
    spec.kind = VocabKind::kBpe;
  } else {
    return make_error("unsupported_tokenizer",
                      "tokenizer.ggml.model is \"" + model +
                          "\"; supported: \"llama\" (SentencePiece BPE with byte fallback) and "
                          "\"gpt2\" (byte-level BPE)");
  }
  KAKEYA_ASSIGN_OR_RETURN(spec.tokens, gguf.get_string_array("tokenizer.ggml.tokens"));
  const size_t n = spec.tokens.size();
  if (gguf.has("tokenizer.ggml.scores")) {
    KAKEYA_ASSIGN_OR_RETURN(const std::vector<double> s, gguf.get_float_array("tokenizer.ggml.scores"));
    spec.scores.assign(s.begin(), s.end());
  }
  if (gguf.has("tokenizer.ggml.token_type")) {
    KAKEYA_ASSIGN_OR_RETURN(const std::vector<int64_t> t, gguf.get_int_array("tokenizer.ggml.token_type"));
    for (const int64_t v : t) {
      spec.types.push_back(v < 0 || v > 6 ? 0 : static_cast<int32_t>(v));  // llama.cpp: undefined
    }
  }
  if (gguf.has("general.name")) {
    KAKEYA_ASSIGN_OR_RETURN(spec.model_name, gguf.get_string("general.name"));
  }

  const bool bpe = spec.kind == VocabKind::kBpe;
  if (bpe) {
    if (!gguf.has("tokenizer.ggml.merges")) {
      return make_error("bad_vocab",
                        "tokenizer.ggml.model is \"gpt2\" but the GGUF has no tokenizer.ggml.merges");
    }
    KAKEYA_ASSIGN_OR_RETURN(spec.merges, gguf.get_string_array("tokenizer.ggml.merges"));
    if (gguf.has("tokenizer.ggml.pre")) {
      KAKEYA_ASSIGN_OR_RETURN(spec.pre, gguf.get_string("tokenizer.ggml.pre"));
    }
    if (spec.pre.empty()) spec.pre = "default";  // llama.cpp, with a "quality will be degraded" warning
  }

  // llama.cpp's default ids per kind, kept only when inside the vocabulary.
  auto default_id = [&](int32_t id) { return static_cast<size_t>(id) < n ? id : -1; };
  const struct {
    const char* key;
    int32_t SpecialTokenIds::*id;
    int32_t fallback;
  } id_keys[] = {
      {"tokenizer.ggml.bos_token_id", &SpecialTokenIds::bos, default_id(bpe ? 11 : 1)},
      {"tokenizer.ggml.eos_token_id", &SpecialTokenIds::eos, default_id(bpe ? 11 : 2)},
      {"tokenizer.ggml.unknown_token_id", &SpecialTokenIds::unk, bpe ? -1 : default_id(0)},
      {"tokenizer.ggml.eot_token_id", &SpecialTokenIds::eot, -1},
      {"tokenizer.ggml.eom_token_id", &SpecialTokenIds::eom, -1},
      {"tokenizer.ggml.fim_pre_token_id", &SpecialTokenIds::fim_pre, -1},
      {"tokenizer.ggml.fim_suf_token_id", &SpecialTokenIds::fim_suf, -1},
      {"tokenizer.ggml.fim_mid_token_id", &SpecialTokenIds::fim_mid, -1},
      {"tokenizer.ggml.fim_pad_token_id", &SpecialTokenIds::fim_pad, -1},
      {"tokenizer.ggml.fim_rep_token_id", &SpecialTokenIds::fim_rep, -1},
      {"tokenizer.ggml.fim_sep_token_id", &SpecialTokenIds::fim_sep, -1},
      // deprecated spellings, read after the others as llama.cpp does
      {"tokenizer.ggml.prefix_token_id", &SpecialTokenIds::fim_pre, -1},
      {"tokenizer.ggml.suffix_token_id", &SpecialTokenIds::fim_suf, -1},
      {"tokenizer.ggml.middle_token_id", &SpecialTokenIds::fim_mid, -1},
  };
  for (const auto& k : id_keys) {
    int32_t& id = spec.ids.*k.id;
    KAKEYA_ASSIGN_OR_RETURN(id, read_id(gguf, k.key, id >= 0 ? id : k.fallback, n));
  }
  KAKEYA_ASSIGN_OR_RETURN(spec.add_bos, read_flag(gguf, "tokenizer.ggml.add_bos_token"));
  KAKEYA_ASSIGN_OR_RETURN(const std::optional<bool> add_eos, read_flag(gguf, "tokenizer.ggml.add_eos_token"));
  spec.add_eos = add_eos.value_or(false);
  KAKEYA_ASSIGN_OR_RETURN(spec.add_space_prefix, read_flag(gguf, "tokenizer.ggml.add_space_prefix"));
  return create(std::move(spec));
}

}  // namespace kakeya::engine
