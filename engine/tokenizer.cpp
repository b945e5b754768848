#include "engine/tokenizer.h"

#include "engine/gguf.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <queue>
#include <string>
#include <utility>

namespace kakeya::engine {
namespace {

constexpr std::string_view kSpaceMarker = "\xe2\x96\x81";  // U+2581 "▁"
constexpr std::string_view kUnknownPiece = "\xe2\x96\x85";  // U+2585 "▅" (llama.cpp)

// Byte length of a UTF-8 sequence from its lead byte (llama.cpp `unicode_len_utf8`):
// continuation and invalid lead bytes count as one byte.
size_t utf8_len(unsigned char lead) {
  static constexpr size_t kLen[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
  return kLen[lead >> 4];
}

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

// One symbol of the merge chain: a byte range of the escaped text, linked to its neighbours.
struct Symbol {
  size_t offset = 0;
  size_t length = 0;  // 0 once merged into its left neighbour
  int prev = -1;
  int next = -1;
};

// A candidate merge of symbols[left] and symbols[right] into a token of `score`; `length` is the
// byte length at the time of queuing, used to discard stale entries.
struct Bigram {
  int left = 0;
  int right = 0;
  float score = 0;
  size_t length = 0;
};

// Highest score first; on equal scores the leftmost pair (llama.cpp llm_bigram_spm::comparator).
struct BigramLess {
  bool operator()(const Bigram& l, const Bigram& r) const {
    return l.score < r.score || (l.score == r.score && l.left > r.left);
  }
};

}  // namespace

Result<Tokenizer> Tokenizer::from_vocab(std::vector<std::string> tokens, std::vector<float> scores,
                                        std::vector<int32_t> types, int32_t bos, int32_t eos,
                                        int32_t unk, bool add_bos, bool add_space_prefix) {
  const size_t n = tokens.size();
  if (n == 0) return make_error("bad_vocab", "tokenizer vocabulary is empty");
  if (n > static_cast<size_t>(INT32_MAX)) {
    return make_error("bad_vocab", "tokenizer vocabulary has " + std::to_string(n) + " tokens");
  }
  if (scores.empty()) scores.assign(n, 0.0f);
  if (scores.size() != n) {
    return make_error("bad_vocab", "tokenizer scores has " + std::to_string(scores.size()) +
                                       " entries, tokens has " + std::to_string(n));
  }
  if (!types.empty() && types.size() != n) {
    return make_error("bad_vocab", "tokenizer token_type has " + std::to_string(types.size()) +
                                       " entries, tokens has " + std::to_string(n));
  }
  const auto n32 = static_cast<int32_t>(n);
  for (auto [name, id] : {std::pair{"bos", bos}, std::pair{"eos", eos}, std::pair{"unk", unk}}) {
    if (id < -1 || id >= n32) {
      return make_error("bad_vocab", std::string("tokenizer ") + name + " id " + std::to_string(id) +
                                         " is outside the vocabulary of " + std::to_string(n));
    }
  }

  Tokenizer t;
  t.types_.resize(n);
  for (size_t i = 0; i < n; ++i) {
    if (!types.empty()) {
      if (types[i] < 0 || types[i] > 6) {
        return make_error("bad_vocab", "tokenizer token_type[" + std::to_string(i) + "] = " +
                                           std::to_string(types[i]) + " is not 0..6");
      }
      t.types_[i] = static_cast<TokenType>(types[i]);
    } else {
      const auto id = static_cast<int32_t>(i);
      if (parse_byte_token(tokens[i]) >= 0) {
        t.types_[i] = TokenType::kByte;
      } else if (id == bos || id == eos) {
        t.types_[i] = TokenType::kControl;
      } else if (id == unk) {
        t.types_[i] = TokenType::kUnknown;
      } else {
        t.types_[i] = TokenType::kNormal;
      }
    }
  }
  t.token_to_id_.reserve(n);
  for (size_t i = 0; i < n; ++i) t.token_to_id_[tokens[i]] = static_cast<int32_t>(i);  // last wins
  for (int b = 0; b < 256; ++b) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "<0x%02X>", b);
    auto it = t.token_to_id_.find(buf);
    if (it == t.token_to_id_.end()) it = t.token_to_id_.find(std::string(1, static_cast<char>(b)));
    t.byte_to_id_[b] = it == t.token_to_id_.end() ? -1 : it->second;
  }
  t.tokens_ = std::move(tokens);
  t.scores_ = std::move(scores);
  t.bos_ = bos;
  t.eos_ = eos;
  t.unk_ = unk;
  t.add_bos_ = add_bos;
  t.add_space_prefix_ = add_space_prefix;
  return t;
}

Result<Tokenizer> Tokenizer::from_gguf(const GgufFile& gguf) {
  if (!gguf.has("tokenizer.ggml.model")) {
    return make_error("unsupported_tokenizer", "GGUF has no tokenizer.ggml.model key");
  }
  KAKEYA_ASSIGN_OR_RETURN(const std::string model, gguf.get_string("tokenizer.ggml.model"));
  if (model != "llama") {
    return make_error("unsupported_tokenizer",
                      "tokenizer.ggml.model is \"" + model +
                          "\"; only \"llama\" (SentencePiece BPE with byte fallback) is supported");
  }
  KAKEYA_ASSIGN_OR_RETURN(std::vector<std::string> tokens,
                          gguf.get_string_array("tokenizer.ggml.tokens"));
  std::vector<float> scores;
  if (gguf.has("tokenizer.ggml.scores")) {
    KAKEYA_ASSIGN_OR_RETURN(const std::vector<double> s, gguf.get_float_array("tokenizer.ggml.scores"));
    scores.assign(s.begin(), s.end());
  }
  std::vector<int32_t> types;
  if (gguf.has("tokenizer.ggml.token_type")) {
    KAKEYA_ASSIGN_OR_RETURN(const std::vector<int64_t> t,
                            gguf.get_int_array("tokenizer.ggml.token_type"));
    for (const int64_t v : t) {
      types.push_back(v < 0 || v > 6 ? -1 : static_cast<int32_t>(v));  // -1 is rejected below
    }
  }
  auto int_or = [&](std::string_view key, int64_t fallback) -> Result<int32_t> {
    if (!gguf.has(key)) {  // llama.cpp SPM default, when the vocabulary is large enough for it
      return fallback < static_cast<int64_t>(tokens.size()) ? static_cast<int32_t>(fallback) : -1;
    }
    KAKEYA_ASSIGN_OR_RETURN(const int64_t v, gguf.get_int(key));
    if (v < -1 || v > INT32_MAX) {
      return make_error("bad_vocab", std::string(key) + " = " + std::to_string(v) + " is out of range");
    }
    return static_cast<int32_t>(v);
  };
  auto bool_or = [&](std::string_view key, bool fallback) -> Result<bool> {
    if (!gguf.has(key)) return fallback;
    return gguf.get_bool(key);
  };
  KAKEYA_ASSIGN_OR_RETURN(const int32_t bos, int_or("tokenizer.ggml.bos_token_id", 1));
  KAKEYA_ASSIGN_OR_RETURN(const int32_t eos, int_or("tokenizer.ggml.eos_token_id", 2));
  KAKEYA_ASSIGN_OR_RETURN(const int32_t unk, int_or("tokenizer.ggml.unknown_token_id", 0));
  KAKEYA_ASSIGN_OR_RETURN(const bool add_bos, bool_or("tokenizer.ggml.add_bos_token", true));
  KAKEYA_ASSIGN_OR_RETURN(const bool add_space, bool_or("tokenizer.ggml.add_space_prefix", true));
  return from_vocab(std::move(tokens), std::move(scores), std::move(types), bos, eos, unk, add_bos,
                    add_space);
}

void Tokenizer::append_bytes(std::string_view symbol, std::vector<int32_t>& out) const {
  for (const char c : symbol) {
    const int32_t id = byte_to_id_[static_cast<unsigned char>(c)];
    if (id >= 0) {
      out.push_back(id);
    } else if (unk_ >= 0) {
      out.push_back(unk_);
    }
  }
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_bos) const {
  std::vector<int32_t> out;
  if (add_bos && bos_ >= 0) out.push_back(bos_);
  if (text.empty()) return out;

  std::string escaped = replace_all(add_space_prefix_ ? " " + std::string(text) : std::string(text),
                                    " ", kSpaceMarker);

  std::vector<Symbol> symbols;
  symbols.reserve(escaped.size());
  for (size_t off = 0; off < escaped.size();) {
    Symbol s;
    s.offset = off;
    s.length = std::min(utf8_len(static_cast<unsigned char>(escaped[off])), escaped.size() - off);
    off += s.length;
    s.prev = static_cast<int>(symbols.size()) - 1;
    s.next = off == escaped.size() ? -1 : static_cast<int>(symbols.size()) + 1;
    symbols.push_back(s);
  }

  const std::string_view view = escaped;
  std::priority_queue<Bigram, std::vector<Bigram>, BigramLess> queue;
  std::string scratch;
  auto try_add = [&](int left, int right) {
    if (left < 0 || right < 0) return;
    const size_t len = symbols[left].length + symbols[right].length;
    scratch.assign(view.substr(symbols[left].offset, len));
    const auto it = token_to_id_.find(scratch);
    if (it == token_to_id_.end()) return;
    queue.push(Bigram{left, right, scores_[static_cast<size_t>(it->second)], len});
  };
  for (int i = 1; i < static_cast<int>(symbols.size()); ++i) try_add(i - 1, i);

  while (!queue.empty()) {
    const Bigram b = queue.top();
    queue.pop();
    Symbol& l = symbols[b.left];
    Symbol& r = symbols[b.right];
    // Stale: one side was merged away or grew since this pair was queued.
    if (l.length == 0 || r.length == 0 || l.length + r.length != b.length) continue;
    l.length += r.length;
    r.length = 0;
    l.next = r.next;
    if (r.next >= 0) symbols[r.next].prev = b.left;
    try_add(l.prev, b.left);
    try_add(b.left, l.next);
  }

  for (int i = 0; i != -1; i = symbols[i].next) {
    const std::string_view piece = view.substr(symbols[i].offset, symbols[i].length);
    scratch.assign(piece);
    const auto it = token_to_id_.find(scratch);
    if (it != token_to_id_.end()) {
      out.push_back(it->second);
    } else {
      append_bytes(piece, out);
    }
  }
  return out;
}

std::string Tokenizer::token_to_piece(int32_t id) const {
  if (id < 0 || id >= n_vocab()) return {};
  const std::string& text = tokens_[static_cast<size_t>(id)];
  switch (types_[static_cast<size_t>(id)]) {
    case TokenType::kNormal:
    case TokenType::kUserDefined:
    case TokenType::kUndefined:
      return replace_all(text, kSpaceMarker, " ");
    case TokenType::kByte: {
      const int b = parse_byte_token(text);
      return b >= 0 ? std::string(1, static_cast<char>(b)) : text;
    }
    case TokenType::kUnknown:
      return std::string(kUnknownPiece);
    case TokenType::kControl:
    case TokenType::kUnused:
      return {};
  }
  return {};
}

std::string Tokenizer::decode(const std::vector<int32_t>& ids,
                              bool strip_leading_space_after_bos) const {
  std::string out;
  for (size_t i = 0; i < ids.size(); ++i) {
    std::string piece = token_to_piece(ids[i]);
    if (strip_leading_space_after_bos && i > 0 && ids[i - 1] == bos_ && bos_ >= 0 &&
        !piece.empty() && piece[0] == ' ') {
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

}  // namespace kakeya::engine
