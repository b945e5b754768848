#pragma once
// SentencePiece-style BPE tokenizer with byte fallback, as stored in a GGUF with
// `tokenizer.ggml.model = "llama"`.
//
// Reference behaviour: llama.cpp `llm_tokenizer_spm` (commit c392e509, build b4748) with
// add_special = add_bos and parse_special = false; llama2.c for the "strip the space after BOS"
// decode convention.
//
// Encode (text → ids):
//   1. empty text → no tokens (only BOS if requested);
//   2. if add_space_prefix, prepend " " (the SentencePiece dummy prefix);
//   3. replace every ' ' by U+2581 "▁";
//   4. split into UTF-8 characters (length from the lead byte; a stray continuation byte is a
//      1-byte symbol);
//   5. repeatedly merge the adjacent pair whose concatenation is a vocabulary token with the
//      highest score (leftmost pair on ties), using a priority queue of candidate bigrams;
//   6. each final symbol that is not a token becomes byte tokens `<0xXX>` (one per byte), or
//      the unknown token when the vocabulary has no byte tokens.
// Decode (ids → text): normal / user-defined pieces with "▁" → " ", byte tokens → their byte,
//   control and unused tokens (BOS, EOS, pad) → nothing, the unknown token → "▅" (llama.cpp).
//
// Thread safety: a Tokenizer is immutable after construction; encode/decode are const and may be
// called concurrently.

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "bridge/result.h"

namespace kakeya::engine {

class GgufFile;

// GGUF `tokenizer.ggml.token_type` values (llama.cpp `llama_token_type`).
enum class TokenType : int32_t {
  kUndefined = 0,
  kNormal = 1,
  kUnknown = 2,
  kControl = 3,
  kUserDefined = 4,
  kUnused = 5,
  kByte = 6,
};

class Tokenizer {
 public:
  // Builds a tokenizer from parallel arrays of size n_vocab. `types` may be empty: types are then
  // inferred (`<0xXX>` → byte, bos/eos → control, unk → unknown, the rest normal).
  // bos/eos/unk are token ids, or -1 when the vocabulary has none.
  // Errors: "bad_vocab" when the arrays disagree in length, the vocabulary is empty, an id is out
  // of range, or a type value is not 0..6.
  static Result<Tokenizer> from_vocab(std::vector<std::string> tokens, std::vector<float> scores,
                                      std::vector<int32_t> types, int32_t bos, int32_t eos,
                                      int32_t unk, bool add_bos, bool add_space_prefix = true);

  // Reads tokenizer.ggml.{model,tokens,scores,token_type,bos_token_id,eos_token_id,
  // unknown_token_id,add_bos_token,add_space_prefix}. Missing scores → 0, missing types →
  // inferred, missing bos/eos → 1/2 (llama.cpp SPM defaults), missing unk → 0,
  // add_bos_token → true, add_space_prefix → true.
  // Errors: "unsupported_tokenizer" when tokenizer.ggml.model is not "llama"; GGUF read errors and
  // "bad_vocab" as for from_vocab.
  static Result<Tokenizer> from_gguf(const GgufFile& gguf);

  // Token ids of `text` (UTF-8), BOS first when `add_bos`. Never fails: unknown characters fall back
  // to byte tokens. Cost O(n log n) in the number of characters.
  std::vector<int32_t> encode(std::string_view text, bool add_bos) const;

  // Concatenated pieces of `ids` (control tokens skipped). When `strip_leading_space_after_bos`, a
  // piece directly after BOS loses one leading space (llama2.c), so decode(encode(x, true), true)
  // == x for every x. Ids outside the vocabulary decode to nothing.
  std::string decode(const std::vector<int32_t>& ids,
                     bool strip_leading_space_after_bos = false) const;

  // The decoded bytes of one token ("" for control/unused tokens and ids out of range).
  std::string token_to_piece(int32_t id) const;

  // The raw vocabulary string of `id` (e.g. "▁Hello", "<0x0A>", "<s>"); "" when out of range.
  const std::string& token_text(int32_t id) const;
  TokenType token_type(int32_t id) const;
  // The id of an exact vocabulary string, or -1.
  int32_t find_token(std::string_view text) const;

  int32_t n_vocab() const { return static_cast<int32_t>(tokens_.size()); }
  int32_t bos() const { return bos_; }
  int32_t eos() const { return eos_; }
  int32_t unk() const { return unk_; }
  bool add_bos() const { return add_bos_; }
  bool add_space_prefix() const { return add_space_prefix_; }

 private:
  Tokenizer() = default;
  void append_bytes(std::string_view symbol, std::vector<int32_t>& out) const;

  std::vector<std::string> tokens_;
  std::vector<float> scores_;
  std::vector<TokenType> types_;
  std::unordered_map<std::string, int32_t> token_to_id_;
  int32_t byte_to_id_[256] = {};  // -1 when the byte has no token
  int32_t bos_ = -1;
  int32_t eos_ = -1;
  int32_t unk_ = -1;
  bool add_bos_ = true;
  bool add_space_prefix_ = true;
};

}  // namespace kakeya::engine
