#pragma once
// The tokenizer of a GGUF model (`tokenizer.ggml.*`): SentencePiece-style BPE with byte fallback
// (`tokenizer.ggml.model = "llama"`) and byte-level BPE (`"gpt2"`) with the pre-tokenizer named
// by `tokenizer.ggml.pre`; special tokens; end-of-generation tokens.
//
// Reference behaviour: llama.cpp c392e509 (build b4748), src/llama-vocab.cpp: `impl::load` (keys,
// defaults, special ids, EOG set), `impl::tokenize` (llama_tokenize), `tokenizer_st_partition`,
// `impl::token_to_piece`; llama2.c for the "strip the space after BOS" decode convention.
//
// tokenize(text, add_special, parse_special), as llama_tokenize:
//   1. Special tokens are matched whole in the text first, longest text first: user-defined
//      tokens (token_type 4) always, control (3) and unknown (2) tokens only with parse_special.
//      A token carrying llama.cpp's lstrip/rstrip attribute swallows the ASCII white space to
//      its left/right (only the Phi-3 rule below sets them). The pieces between become text.
//   2. SPM: each text piece gets a " " prefix when add_space_prefix and it is first or follows a
//      special token; ' ' → U+2581 "▁"; characters merge by token score (engine/tokenizer_merge.h);
//      a final symbol that is no token becomes its byte tokens `<0xXX>` (or unk without them).
//      BPE: each text piece is split by the pre-tokenizer (engine/pretokenizer.h), each word is
//      written byte-level (engine/tokenizer_bpe.h) and merged by rank, except that a word which
//      is itself a token stays whole when the pre-tokenizer says ignore_merges (llama-3); a final
//      symbol that is no token becomes the tokens of its single bytes that exist (others dropped).
//   3. add_special: BOS first when add_bos(), EOS last when add_eos().
// encode(text, add_bos) is the same text path with parse_special = false, BOS when asked, no EOS.
//
// token_to_piece(id, special), as llama_token_to_piece with lstrip 0: control and unknown tokens
// render their text only when `special`, else nothing; user-defined tokens their text; normal
// tokens their text with "▁" → " " (SPM) or byte-level decoded (BPE); byte tokens their byte
// (SPM); every other token (unused, undefined, a byte token of a BPE vocabulary) nothing.
// decode() concatenates pieces (special = false), without llama_detokenize's clean-up of spaces.
//
// End of generation (is_eog), as c392e50 builds `special_eog_ids`: the EOS, EOT and EOM ids; the
// FIM pad/repo/file-separator ids; and every token whose text is one of <|eot_id|> <|im_end|>
// <|end|> <end_of_turn> <|endoftext|> <|eom_id|> <EOT>. EOT, EOM and the FIM ids come from their
// keys, else from their text (llama.cpp's lists; where a vocabulary has several candidates this
// takes the first in the list, llama.cpp whichever its hash map yields first). Tokens found by
// text become control tokens, as llama.cpp overrides them.
//
// Thread safety: a Tokenizer is immutable after construction; every method is const and may be
// called concurrently.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "bridge/result.h"
#include "engine/pretokenizer.h"
#include "engine/tokenizer_bpe.h"

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

// GGUF `tokenizer.ggml.model`: "llama" (SentencePiece BPE) or "gpt2" (byte-level BPE).
enum class VocabKind { kSpm, kBpe };

// Special token ids; -1 = none.
struct SpecialTokenIds {
  int32_t bos = -1;
  int32_t eos = -1;
  int32_t unk = -1;
  int32_t eot = -1;  // end of turn; -1: looked up by text
  int32_t eom = -1;  // end of message (<|eom_id|>); -1: looked up by text
  int32_t fim_pre = -1;  // fill-in-the-middle tokens; -1: looked up by text
  int32_t fim_suf = -1;
  int32_t fim_mid = -1;
  int32_t fim_pad = -1;
  int32_t fim_rep = -1;
  int32_t fim_sep = -1;
};

// Everything a Tokenizer is made of. from_gguf fills it from the file with llama.cpp's defaults;
// tests build it by hand.
struct VocabSpec {
  VocabKind kind = VocabKind::kSpm;
  std::vector<std::string> tokens;  // n_vocab entries; an empty one reads as "[EMPTY_<id>]"
  std::vector<float> scores;        // SPM merge priority per token (higher first); empty → 0
  std::vector<int32_t> types;       // TokenType per token; empty → inferred (SPM: <0xXX> byte,
                                    // bos/eos control, unk unknown, rest normal) / normal (BPE)
  std::vector<std::string> merges;  // BPE: "left right" by rank
  std::string pre = "default";      // BPE: tokenizer.ggml.pre
  SpecialTokenIds ids;
  // Absent: llama.cpp's default for the kind (SPM: add BOS, add the space prefix; BPE: add BOS
  // only for the llama-3 pre-tokenizer (PreTokenizer::default_add_bos), no space prefix).
  std::optional<bool> add_bos;
  bool add_eos = false;
  std::optional<bool> add_space_prefix;  // SPM: the dummy-prefix space
  std::string model_name;  // general.name: llama.cpp gives Phi-3 models rstrip specials
};

// SentencePiece's word-boundary marker, U+2581 "▁" in UTF-8: SPM vocabularies spell a space as it.
inline constexpr std::string_view kSpaceMarker = "\xe2\x96\x81";

class Tokenizer {
 public:
  // Builds a tokenizer. Errors: "bad_vocab" when the arrays disagree in length, the vocabulary is
  // empty, a special id is outside it, or a type is not 0..6; "unknown_pretokenizer" for a BPE
  // vocabulary whose `pre` is unknown (engine/pretokenizer.h).
  static Result<Tokenizer> create(VocabSpec spec);

  // An SPM tokenizer from parallel arrays of size n_vocab (the fields of VocabSpec).
  static Result<Tokenizer> from_vocab(std::vector<std::string> tokens, std::vector<float> scores,
                                      std::vector<int32_t> types, int32_t bos, int32_t eos,
                                      int32_t unk, bool add_bos, bool add_space_prefix = true);

  // Reads tokenizer.ggml.{model,pre,tokens,scores,token_type,merges,*_token_id,add_bos_token,
  // add_eos_token,add_space_prefix} and general.name, with llama.cpp's defaults for absent keys:
  // SPM bos 1, eos 2, unk 0; BPE bos 11, eos 11, no unk, pre "default"; add_bos and
  // add_space_prefix as VocabSpec says; add_eos false; a default id beyond the vocabulary is
  // none. An id key whose value is outside the vocabulary keeps the default, and a token_type
  // outside 0..6 reads as undefined (llama.cpp does both).
  // Errors: "unsupported_tokenizer" when tokenizer.ggml.model is neither "llama" nor "gpt2",
  // naming it; "bad_vocab" for a gpt2 vocabulary without merges; GGUF read errors; create()'s.
  static Result<Tokenizer> from_gguf(const GgufFile& gguf);

  // llama_tokenize(text, add_special, parse_special): see the header comment. Never fails.
  std::vector<int32_t> tokenize(std::string_view text, bool add_special, bool parse_special) const;

  // Token ids of `text` (UTF-8), BOS first when `add_bos` (and the vocabulary has one), special
  // tokens not parsed, no EOS. Never fails. Cost O(n log n) in the number of characters.
  std::vector<int32_t> encode(std::string_view text, bool add_bos) const;

  // Concatenated pieces of `ids` (token_to_piece with special = false). With
  // `strip_leading_space_after_bos`, a piece directly after BOS loses one leading space when the
  // vocabulary adds a space prefix (SPM; llama2.c), so decode(encode(x, true), true) == x for
  // every valid UTF-8 x. Ids outside the vocabulary decode to nothing.
  std::string decode(const std::vector<int32_t>& ids, bool strip_leading_space_after_bos = false) const;

  // The bytes of one token (see the header comment); "" for ids out of range.
  std::string token_to_piece(int32_t id, bool special = false) const;

  // The raw vocabulary string of `id` (e.g. "▁Hello", "Ġworld", "<0x0A>", "<s>"); "" when out
  // of range.
  const std::string& token_text(int32_t id) const;
  TokenType token_type(int32_t id) const;
  // The id of an exact vocabulary string, or -1.
  int32_t find_token(std::string_view text) const;

  // Whether generation stops at `id` (see the header comment).
  bool is_eog(int32_t id) const;
  // The end-of-generation ids, ascending.
  const std::vector<int32_t>& eog_ids() const { return eog_; }

  VocabKind kind() const { return kind_; }
  // The pre-tokenizer name (BPE), "" for SPM.
  const std::string& pre() const;
  int32_t n_vocab() const { return static_cast<int32_t>(tokens_.size()); }
  int32_t bos() const { return ids_.bos; }
  int32_t eos() const { return ids_.eos; }
  int32_t eot() const { return ids_.eot; }
  int32_t eom() const { return ids_.eom; }
  int32_t unk() const { return ids_.unk; }
  const SpecialTokenIds& special_ids() const { return ids_; }
  bool add_bos() const { return add_bos_; }
  bool add_eos() const { return add_eos_; }
  bool add_space_prefix() const { return add_space_prefix_; }

 private:
  // A piece of text to tokenize, or one special token matched whole.
  struct Fragment {
    int32_t token = -1;  // >= 0: a special token
    size_t offset = 0;   // text: byte range of the input
    size_t length = 0;
  };
  static constexpr uint8_t kLstrip = 1;
  static constexpr uint8_t kRstrip = 2;

  Tokenizer() = default;
  std::vector<Fragment> partition(std::string_view text, bool parse_special) const;
  // Appends the tokens of text fragments / special tokens of `fragments`.
  void append_fragments(std::string_view text, const std::vector<Fragment>& fragments,
                        std::vector<int32_t>& out) const;
  void append_spm(std::string_view text, std::vector<int32_t>& out) const;
  void append_bpe(std::string_view text, std::vector<int32_t>& out) const;

  VocabKind kind_ = VocabKind::kSpm;
  std::vector<std::string> tokens_;
  std::vector<float> scores_;
  std::vector<TokenType> types_;
  std::vector<uint8_t> strip_;  // kLstrip | kRstrip per token
  std::unordered_map<std::string, int32_t> token_to_id_;
  int32_t byte_to_id_[256] = {};        // SPM byte fallback: -1 when the byte has no token
  std::vector<int32_t> special_tokens_;  // matched in tokenize(): longest text first
  std::vector<int32_t> eog_;
  SpecialTokenIds ids_;
  bool add_bos_ = true;
  bool add_eos_ = false;
  bool add_space_prefix_ = true;
  // BPE only.
  std::shared_ptr<const BpeMerges> merges_;
  std::shared_ptr<const PreTokenizer> pre_;
};

}  // namespace kakeya::engine
