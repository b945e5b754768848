#pragma once
// Pre-tokenizer of byte-level BPE vocabularies: splits text into the words BPE merges within,
// by the rule set a GGUF names in `tokenizer.ggml.pre`.
//
// Reference behaviour: llama.cpp c392e50, src/llama-vocab.cpp (`llm_tokenizer_bpe`: which regexes
// each `pre` value selects, plus `ignore_merges` and the default `add_bos`) and src/unicode.cpp
// (`unicode_regex_split`). The regexes are llama.cpp's, verbatim, applied in order: each one
// re-splits every word the previous ones produced, matching within that word only (so `$` and
// `(?!\S)` see the word's end as the text's end); text between two matches becomes a word of its
// own.
//
// The regexes run on PCRE2 in UTF + UCP mode. llama.cpp runs them through its own hand-written
// matchers (gpt-2, llama-3) or std::regex over a text in which every non-ASCII code point is
// collapsed to its category; the split is the same because the input is adjusted first:
//   * White space is llama.cpp's White_Space set. llama.cpp turns every non-ASCII space
//     (U+0085, U+00A0, U+1680, U+2000..U+200A, U+2028, U+2029, U+202F, U+205F, U+3000) into
//     U+000B before matching and matches `\s` as ASCII white space; so does this, which also
//     keeps U+180E (PCRE2's `\s`, not White_Space) out of `\s`, and U+3000 out of the literal
//     range U+3000..U+3002 of the deepseek-llm rules, exactly as in llama.cpp.
//   * Categories (`\p{L}`, `\p{N}`, `\p{P}`, `\p{M}`) are llama.cpp's tables, Unicode 15.1.
//     PCRE2 10.42 knows Unicode 14: the 47 ranges assigned in 15.0/15.1 (CJK extensions H and I,
//     Kawi, Nag Mundari, …; 5,116 code points) are matched through a stand-in code point of their
//     15.1 category, in the rules that use categories.
//   * Invalid UTF-8 reads as U+FFFD (engine/utf8.h); surrogates that the lenient decoding
//     produces are matched as a private-use code point (llama.cpp: control), and words keep them.
// Contractions: llama.cpp's llama-3/qwen2 rules spell the case-insensitive `(?i:'s|'t|…)` of the
// original tokenizers as `'[sS]|'[tT]|…` (PCRE2's caseless mode would also take U+017F ſ for s);
// these are the rules used here.
//
// Known names (llama.cpp's aliases of each rule set included): see names(). An unknown name is
// an error; jina-* (embedding models with a per-token strip rule), chatglm, tekken, chameleon,
// poro/bloom/viking, dbrx/smaug and deepseek-v3 are not implemented.
//
// Thread safety: immutable after create(); split() may be called concurrently.

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "bridge/result.h"

namespace kakeya::engine {

class PreTokenizer {
 public:
  // The rule set named by a `tokenizer.ggml.pre` value. Errors: "unknown_pretokenizer" naming
  // `name` and listing the supported names; "bad_pretokenizer" if PCRE2 refuses a rule (a bug).
  static Result<PreTokenizer> create(std::string_view name);

  // Every accepted `tokenizer.ggml.pre` value, sorted.
  static std::vector<std::string> names();

  // The words of `text`, in order. Their concatenation is `text` with invalid UTF-8 replaced by
  // U+FFFD (engine/utf8.h); no word is empty. Cost: one PCRE2 scan per rule over the text.
  std::vector<std::string> split(std::string_view text) const;

  // The name this pre-tokenizer was created with.
  const std::string& name() const { return name_; }
  // llama.cpp's `ignore_merges` (llama-3 rules): a word that is itself a token is not merged.
  bool ignore_merges() const;
  // llama.cpp's default `add_bos` for vocabularies with this `pre` when the GGUF has no
  // `tokenizer.ggml.add_bos_token` (true for the llama-3 rules, false otherwise).
  bool default_add_bos() const;

 private:
  struct Rules;
  std::string name_;
  std::shared_ptr<const Rules> rules_;
};

}  // namespace kakeya::engine
