// Pre-tokenizer split rules (engine/pretokenizer.h). Expected words are derived from llama.cpp
// c392e50's rules (src/llama-vocab.cpp llm_tokenizer_bpe, src/unicode.cpp unicode_regex_split);
// each case says which alternative of which rule produces them.
#include "engine/pretokenizer.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>


namespace kakeya::engine {
namespace {

using Words = std::vector<std::string>;

Words split(const std::string& pre, const std::string& text) {
  auto p = PreTokenizer::create(pre);
  EXPECT_TRUE(p.ok()) << (p.ok() ? "" : p.error().str());
  return p.ok() ? p->split(text) : Words{};
}

TEST(PreTokenizer, UnknownNameIsAnErrorNamingIt) {
  auto p = PreTokenizer::create("gpt-5");
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.error().code, "unknown_pretokenizer");
  EXPECT_NE(p.error().message.find("\"gpt-5\""), std::string::npos);
  EXPECT_NE(p.error().message.find("llama-bpe"), std::string::npos);  // lists the known names
}

TEST(PreTokenizer, KnowsTheRequiredNamesAndLlamaCppAliases) {
  for (const char* name : {"gpt-2", "llama-bpe", "llama3", "llama-v3", "falcon3", "qwen2", "smollm",
                           "starcoder", "deepseek-llm", "deepseek-coder", "falcon", "default"}) {
    EXPECT_TRUE(PreTokenizer::create(name).ok()) << name;
  }
  const auto names = PreTokenizer::names();
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
  // llama.cpp: ignore_merges and add_bos only for the llama-3 family.
  EXPECT_TRUE(PreTokenizer::create("llama-bpe")->ignore_merges());
  EXPECT_TRUE(PreTokenizer::create("falcon3")->default_add_bos());
  EXPECT_FALSE(PreTokenizer::create("qwen2")->ignore_merges());
  EXPECT_FALSE(PreTokenizer::create("gpt-2")->default_add_bos());
}

TEST(PreTokenizer, Gpt2Rules) {
  EXPECT_EQ(split("gpt-2", "Hello world"), (Words{"Hello", " world"}));        //  ?\p{L}+
  EXPECT_EQ(split("gpt-2", "  Hello"), (Words{" ", " Hello"}));                // \s+(?!\S)
  EXPECT_EQ(split("gpt-2", "I'm here"), (Words{"I", "'m", " here"}));          // 'm
  EXPECT_EQ(split("gpt-2", "I'M"), (Words{"I", "'", "M"}));                    // case-sensitive
  EXPECT_EQ(split("gpt-2", "x 12345!"), (Words{"x", " 12345", "!"}));          //  ?\p{N}+
  EXPECT_EQ(split("gpt-2", "a \t\n"), (Words{"a", " \t\n"}));                  // \s+(?!\S) at end
  EXPECT_TRUE(split("gpt-2", "").empty());
}

TEST(PreTokenizer, Llama3Rules) {
  // (?:'[sS]|…): contractions in either case, unlike GPT-2.
  EXPECT_EQ(split("llama-bpe", "I'M you'Re"), (Words{"I", "'M", " you", "'Re"}));
  // \p{N}{1,3}: digits in groups of three.
  EXPECT_EQ(split("llama-bpe", "12345"), (Words{"123", "45"}));
  // [^\r\n\p{L}\p{N}]?\p{L}+: one non-letter, non-digit, non-newline before letters.
  EXPECT_EQ(split("llama-bpe", "\tab (cd"), (Words{"\tab", " (", "cd"}));
  // \s*[\r\n]+ up to the last newline of a white-space run; then \s+(?!\S) and  ?\p{L}+.
  EXPECT_EQ(split("llama-bpe", "a\n\n  b"), (Words{"a", "\n\n", " ", " b"}));
  //  ?[^\s\p{L}\p{N}]+[\r\n]*: punctuation takes the newlines after it.
  EXPECT_EQ(split("llama-bpe", "x;\n\ny"), (Words{"x", ";\n\n", "y"}));
  EXPECT_EQ(split("llama3", "\n\n\n"), (Words{"\n\n\n"}));
}

TEST(PreTokenizer, Qwen2RulesSplitDigitsOneByOne) {
  EXPECT_EQ(split("qwen2", "a123"), (Words{"a", "1", "2", "3"}));  // \p{N}
  EXPECT_EQ(split("qwen2", "I'M"), (Words{"I", "'M"}));
}

TEST(PreTokenizer, MultiRuleSetsApplyInOrder) {
  // starcoder: \p{N} first (digits alone, the text between them kept), then GPT-2's rule.
  EXPECT_EQ(split("starcoder", "x12 y"), (Words{"x", "1", "2", " y"}));
  EXPECT_EQ(split("smollm", "x12 y"), (Words{"x", "1", "2", " y"}));
  // falcon: punctuation runs, then GPT-2's rule, then [0-9]{3} inside what is left.
  EXPECT_EQ(split("falcon", "a,b 1234567"), (Words{"a", ",", "b", " ", "123", "456", "7"}));
  // deepseek-coder: [\r\n], \s?\p{L}+ (CJK letters included), \s?\p{P}+, CJK ranges, \p{N}.
  EXPECT_EQ(split("deepseek-coder", "\xe4\xbd\xa0\xe5\xa5\xbd world!\n42"),
            (Words{"\xe4\xbd\xa0\xe5\xa5\xbd", " world", "!", "\n", "4", "2"}));
  // deepseek-llm: \s+$ keeps trailing white space of a word together.
  EXPECT_EQ(split("deepseek-llm", "ab  "), (Words{"ab", "  "}));
}

TEST(PreTokenizer, NonAsciiWhiteSpaceIsLlamaCppsWhiteSpace) {
  const std::string ideographic = "\xe3\x80\x80";  // U+3000, White_Space
  // llama-3: [^\r\n\p{L}\p{N}]?\p{L}+ takes the space as the letter run's prefix.
  EXPECT_EQ(split("llama-bpe", "a" + ideographic + "b"), (Words{"a", ideographic + "b"}));
  // GPT-2's rule has no plain \s+: a lone space before a non-space is text between matches.
  EXPECT_EQ(split("gpt-2", "a" + ideographic + ideographic + "b"), (Words{"a", ideographic, ideographic, "b"}));
  // U+180E is not White_Space (PCRE2's \s would take it): two of them are one
  // [^\s\p{L}\p{N}]+ word, not a space run.
  const std::string mvs = "\xe1\xa0\x8e";
  EXPECT_EQ(split("gpt-2", "a" + mvs + mvs + "b"), (Words{"a", mvs + mvs, "b"}));
}

TEST(PreTokenizer, CategoriesAreUnicode15AsInLlamaCpp) {
  // U+31350 (CJK Extension H, Unicode 15.0) is a letter for llama.cpp; PCRE2 10.42 does not
  // know it.
  const std::string ext_h = "\xf0\xb1\x8d\x90";
  EXPECT_EQ(split("gpt-2", "a" + ext_h + "b c"), (Words{"a" + ext_h + "b", " c"}));
  // U+1E4F0 (Nag Mundari digit zero, 15.0) is a number: llama-3 groups it with digits.
  const std::string nag_zero = "\xf0\x9e\x93\xb0";
  EXPECT_EQ(split("llama-bpe", "1" + nag_zero + "2"), (Words{"1" + nag_zero + "2"}));
}

TEST(PreTokenizer, InvalidUtf8ReadsAsReplacementCharacters) {
  EXPECT_EQ(split("gpt-2", "a\xff" "b"), (Words{"a", "\xef\xbf\xbd", "b"}));
  // ED A0 80 decodes (leniently, as llama.cpp) to the surrogate U+D800, a control character.
  EXPECT_EQ(split("gpt-2", "a\xed\xa0\x80" "b"), (Words{"a", "\xed\xa0\x80", "b"}));
}

TEST(PreTokenizer, LongWhiteSpaceRuns) {
  const std::string spaces(200000, ' ');
  EXPECT_EQ(split("llama-bpe", spaces + "x"), (Words{spaces.substr(1), " x"}));
  EXPECT_EQ(split("gpt-2", spaces), (Words{spaces}));
}

}  // namespace
}  // namespace kakeya::engine
