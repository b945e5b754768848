// Building a Tokenizer from its vocabulary (special ids, end-of-generation set, the special
// tokens tokenize() matches) and rendering tokens back to text. Reading a GGUF is
// tokenizer_gguf.cpp; text → tokens is tokenizer_encode.cpp.
#include "engine/tokenizer.h"

#include <algorithm>
#include <cstdio>
#include <utility>

namespace kakeya::engine {
namespace {

// "<0xXX>" → XX, or -1.
int parse_byte_token(std::string_view t) {
  if (t.size() != 6 || t.substr(0, 3) != "<0x" || t[5] != '>') return -1;
  int v = 0;
  for (size_t i = 3; i < 5; ++i) {
    const char c = t[i];
    int d = -1;
    if (c >= '0' && c <= '9') d = c - '0';
    if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
    if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
    if (d < 0) return -1;
    v = v * 16 + d;
  }
  return v;
}

std::string replace_all(std::string_view in, std::string_view from, std::string_view to) {
  std::string out;
  out.reserve(in.size());
  size_t pos = 0;
  while (true) {
    const size_t hit = in.find(from, pos);
    if (hit == std::string_view::npos) break;
    out.append(in.substr(pos, hit - pos));
    out.append(to);
    pos = hit + from.size();
  }
  out.append(in.substr(pos));
  return out;
}

// A special id llama.cpp looks up by text when its key is absent, and the texts it tries
// (c392e50 `impl::load`, "auto-detect special tokens by text"), in the order tried here.
struct TextFallback {
  int32_t SpecialTokenIds::*id;
  std::vector<std::string_view> texts;
};

const std::vector<TextFallback>& text_fallbacks() {
  static const std::vector<TextFallback> kFallbacks = {
      {&SpecialTokenIds::eot,
       {"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<EOT>",
        "<\xef\xbd\x9c" "end\xe2\x96\x81of\xe2\x96\x81sentence\xef\xbd\x9c>"}},  // <｜end▁of▁sentence｜>
      {&SpecialTokenIds::eom, {"<|eom_id|>"}},
      {&SpecialTokenIds::fim_pre,
       {"<|fim_prefix|>", "<fim-prefix>", "<\xef\xbd\x9c" "fim\xe2\x96\x81" "begin\xef\xbd\x9c>", "<PRE>"}},
      {&SpecialTokenIds::fim_suf,
       {"<|fim_suffix|>", "<fim-suffix>", "<\xef\xbd\x9c" "fim\xe2\x96\x81hole\xef\xbd\x9c>", "<SUF>"}},
      {&SpecialTokenIds::fim_mid,
       {"<|fim_middle|>", "<fim-middle>", "<\xef\xbd\x9c" "fim\xe2\x96\x81" "end\xef\xbd\x9c>", "<MID>"}},
      {&SpecialTokenIds::fim_pad, {"<|fim_pad|>", "<fim-pad>", "<PAD>"}},
      {&SpecialTokenIds::fim_rep, {"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>"}},
      {&SpecialTokenIds::fim_sep, {"<|file_sep|>"}},
  };
  return kFallbacks;
}

// Token texts that end generation wherever they are (c392e50 `special_eog_ids`).
constexpr std::string_view kEogTexts[] = {"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>",
                                          "<|endoftext|>", "<|eom_id|>", "<EOT>"};

std::string to_lower_ascii(std::string s) {
  for (char& c : s) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return s;
}

}  // namespace

Result<Tokenizer> Tokenizer::create(VocabSpec spec) {
  const size_t n = spec.tokens.size();
  if (n == 0) return make_error("bad_vocab", "tokenizer vocabulary is empty");
  if (n > static_cast<size_t>(INT32_MAX)) {
    return make_error("bad_vocab", "tokenizer vocabulary has " + std::to_string(n) + " tokens");
  }
  if (spec.scores.empty()) spec.scores.assign(n, 0.0f);
  if (spec.scores.size() != n) {
    return make_error("bad_vocab", "tokenizer scores has " + std::to_string(spec.scores.size()) +
                                       " entries, tokens has " + std::to_string(n));
  }
  if (!spec.types.empty() && spec.types.size() != n) {
    return make_error("bad_vocab", "tokenizer token_type has " + std::to_string(spec.types.size()) +
                                       " entries, tokens has " + std::to_string(n));
  }
  const auto n32 = static_cast<int32_t>(n);
  const std::pair<const char*, int32_t> named_ids[] = {
      {"bos", spec.ids.bos},         {"eos", spec.ids.eos},         {"unk", spec.ids.unk},
      {"eot", spec.ids.eot},         {"eom", spec.ids.eom},         {"fim_pre", spec.ids.fim_pre},
      {"fim_suf", spec.ids.fim_suf}, {"fim_mid", spec.ids.fim_mid}, {"fim_pad", spec.ids.fim_pad},
      {"fim_rep", spec.ids.fim_rep}, {"fim_sep", spec.ids.fim_sep}};
  for (const auto& [name, id] : named_ids) {
    if (id < -1 || id >= n32) {
      return make_error("bad_vocab", std::string("tokenizer ") + name + " id " + std::to_string(id) +
                                         " is outside the vocabulary of " + std::to_string(n));
    }
  }

  Tokenizer t;
  t.kind_ = spec.kind;
  for (size_t i = 0; i < n; ++i) {
    if (spec.tokens[i].empty()) spec.tokens[i] = "[EMPTY_" + std::to_string(i) + "]";  // llama.cpp
  }
  t.types_.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const auto id = static_cast<int32_t>(i);
    if (!spec.types.empty()) {
      if (spec.types[i] < 0 || spec.types[i] > 6) {
        return make_error("bad_vocab", "tokenizer token_type[" + std::to_string(i) + "] = " +
                                           std::to_string(spec.types[i]) + " is not 0..6");
      }
      t.types_[i] = static_cast<TokenType>(spec.types[i]);
    } else if (spec.kind == VocabKind::kBpe) {
      t.types_[i] = TokenType::kNormal;  // llama.cpp without token_type
    } else if (parse_byte_token(spec.tokens[i]) >= 0) {
      t.types_[i] = TokenType::kByte;
    } else if (id == spec.ids.bos || id == spec.ids.eos) {
      t.types_[i] = TokenType::kControl;
    } else if (id == spec.ids.unk) {
      t.types_[i] = TokenType::kUnknown;
    } else {
      t.types_[i] = TokenType::kNormal;
    }
  }
  t.token_to_id_.reserve(n);
  for (size_t i = 0; i < n; ++i) t.token_to_id_[spec.tokens[i]] = static_cast<int32_t>(i);  // last wins
  for (int b = 0; b < 256; ++b) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "<0x%02X>", b);
    auto it = t.token_to_id_.find(buf);
    if (it == t.token_to_id_.end()) it = t.token_to_id_.find(std::string(1, static_cast<char>(b)));
    t.byte_to_id_[b] = it == t.token_to_id_.end() ? -1 : it->second;
  }
  if (spec.kind == VocabKind::kBpe) {
    KAKEYA_ASSIGN_OR_RETURN(PreTokenizer pre, PreTokenizer::create(spec.pre));
    t.pre_ = std::make_shared<const PreTokenizer>(std::move(pre));
    t.merges_ = std::make_shared<const BpeMerges>(spec.merges);
    t.add_bos_ = spec.add_bos.value_or(t.pre_->default_add_bos());
    t.add_space_prefix_ = spec.add_space_prefix.value_or(false);
  } else {
    t.add_bos_ = spec.add_bos.value_or(true);
    t.add_space_prefix_ = spec.add_space_prefix.value_or(true);
  }
  t.add_eos_ = spec.add_eos;

  // Special ids missing from the file, found by their text; such tokens become control tokens.
  t.ids_ = spec.ids;
  for (const TextFallback& f : text_fallbacks()) {
    int32_t& id = t.ids_.*f.id;
    for (size_t k = 0; id < 0 && k < f.texts.size(); ++k) {
      id = t.find_token(f.texts[k]);
      if (id >= 0) t.types_[static_cast<size_t>(id)] = TokenType::kControl;
    }
  }
  for (const int32_t id : {t.ids_.fim_pad, t.ids_.fim_rep, t.ids_.fim_sep}) {
    if (id >= 0) t.eog_.push_back(id);
  }
  for (const std::string_view text : kEogTexts) {
    const int32_t id = t.find_token(text);
    if (id < 0) continue;
    t.eog_.push_back(id);
    t.types_[static_cast<size_t>(id)] = TokenType::kControl;
  }
  for (const int32_t id : {t.ids_.eos, t.ids_.eot, t.ids_.eom}) {
    if (id >= 0) t.eog_.push_back(id);
  }
  std::sort(t.eog_.begin(), t.eog_.end());
  t.eog_.erase(std::unique(t.eog_.begin(), t.eog_.end()), t.eog_.end());

  // The tokens tokenize() matches whole: longest text first (llama.cpp sorts without a tie rule;
  // ties here go to the lower id).
  for (int32_t id = 0; id < n32; ++id) {
    const TokenType type = t.types_[static_cast<size_t>(id)];
    if (type == TokenType::kControl || type == TokenType::kUserDefined || type == TokenType::kUnknown) {
      t.special_tokens_.push_back(id);
    }
  }
  std::stable_sort(t.special_tokens_.begin(), t.special_tokens_.end(), [&](int32_t a, int32_t b) {
    return spec.tokens[static_cast<size_t>(a)].size() > spec.tokens[static_cast<size_t>(b)].size();
  });

  // llama.cpp's per-model attributes: Phi-3 special tokens (and </s>) swallow the white space
  // after them, except <unk>, <s> and <|endoftext|>.
  t.strip_.assign(n, 0);
  const std::string name = to_lower_ascii(spec.model_name);
  if (name.find("phi-3") != std::string::npos || name.find("phi3") != std::string::npos) {
    for (const int32_t id : t.special_tokens_) t.strip_[static_cast<size_t>(id)] |= kRstrip;
    if (const int32_t id = t.find_token("</s>"); id >= 0) t.strip_[static_cast<size_t>(id)] |= kRstrip;
    for (const std::string_view text : {"<unk>", "<s>", "<|endoftext|>"}) {
      if (const int32_t id = t.find_token(text); id >= 0) t.strip_[static_cast<size_t>(id)] &= ~kRstrip;
    }
  }

  t.tokens_ = std::move(spec.tokens);
  t.scores_ = std::move(spec.scores);
  return t;
}

Result<Tokenizer> Tokenizer::from_vocab(std::vector<std::string> tokens, std::vector<float> scores,
                                        std::vector<int32_t> types, int32_t bos, int32_t eos,
                                        int32_t unk, bool add_bos, bool add_space_prefix) {
  VocabSpec spec;
  spec.kind = VocabKind::kSpm;
  spec.tokens = std::move(tokens);
  spec.scores = std::move(scores);
  spec.types = std::move(types);
  spec.ids.bos = bos;
  spec.ids.eos = eos;
  spec.ids.unk = unk;
  spec.add_bos = add_bos;
  spec.add_space_prefix = add_space_prefix;
  return create(std::move(spec));
}

std::string Tokenizer::token_to_piece(int32_t id, bool special) const {
  if (id < 0 || id >= n_vocab()) return {};
  const std::string& text = tokens_[static_cast<size_t>(id)];
  switch (types_[static_cast<size_t>(id)]) {
    case TokenType::kControl:
    case TokenType::kUnknown:
      return special ? text : std::string();
    case TokenType::kUserDefined:
      return text;
    case TokenType::kNormal:
      return kind_ == VocabKind::kSpm ? replace_all(text, kSpaceMarker, " ") : byte_level_decode(text);
    case TokenType::kByte: {
      if (kind_ == VocabKind::kBpe) return {};
      const int b = parse_byte_token(text);
      return b >= 0 ? std::string(1, static_cast<char>(b)) : text;
    }
    case TokenType::kUndefined:
    case TokenType::kUnused:
      return {};
  }
  return {};
}

std::string Tokenizer::decode(const std::vector<int32_t>& ids, bool strip_leading_space_after_bos) const {
  const bool strip = strip_leading_space_after_bos && kind_ == VocabKind::kSpm && add_space_prefix_;
  std::string out;
  for (size_t i = 0; i < ids.size(); ++i) {
    std::string piece = token_to_piece(ids[i]);
    if (strip && i > 0 && ids[i - 1] == ids_.bos && ids_.bos >= 0 && !piece.empty() && piece[0] == ' ') {
      piece.erase(0, 1);
    }
    out += piece;
  }
  return out;
}

const std::string& Tokenizer::token_text(int32_t id) const {
  static const std::string kEmpty;
  if (id < 0 || id >= n_vocab()) return kEmpty;
  return tokens_[static_cast<size_t>(id)];
}

TokenType Tokenizer::token_type(int32_t id) const {
  if (id < 0 || id >= n_vocab()) return TokenType::kUndefined;
  return types_[static_cast<size_t>(id)];
}

int32_t Tokenizer::find_token(std::string_view text) const {
  const auto it = token_to_id_.find(std::string(text));
  return it == token_to_id_.end() ? -1 : it->second;
}

bool Tokenizer::is_eog(int32_t id) const { return std::binary_search(eog_.begin(), eog_.end(), id); }

const std::string& Tokenizer::pre() const {
  static const std::string kNone;
  return pre_ ? pre_->name() : kNone;
}

}  // namespace kakeya::engine
