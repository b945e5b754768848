// Pre-tokenizer split rules (engine/pretokenizer.h). Expected words are derived from llama.cpp
// c392e50's rules (src/llama-vocab.cpp llm_tokenizer_bpe, src/unicode.cpp unicode_regex_split);
// each case says which alternative of which rule produces them.
//
// The Llama-3 (llama-bpe) and Qwen2 vectors come without their vocabularies. Their split is
// checked against the .out ids as far as the ids allow (SplitAgreesWithTheIdsOf*): see
// check_split() for what that pins and what it cannot.
#include "engine/pretokenizer.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "tests/engine/tokenizer_vectors.h"
#include "tests/harness/paths.h"

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

// --- Llama-3 and Qwen2 vectors without their vocabularies -------------------------------------
//
// Each word becomes at least one token and no token spans two words, so a vector's ids are its
// words' tokens, in order, each word contributing a non-empty run. What is known of the ids:
//   * ids 0..255 are the 256 byte symbols in GPT-2's order in these vocabularies (as in gpt-2's:
//     the .out files spell " " 220, "\n" 198, "3" 18, "!" 0 in all three), so their text is
//     known;
//   * a vector with as many ids as words pairs them one to one; such pairs must agree across all
//     vectors (a word is always the same id, an id always the same word).
// check_split() then asks every vector for a split of its ids into runs, one per word, where a
// word known as one id is exactly that id and every id of known text lies inside its word's text
// (all of them known: they spell the word exactly). A rule that splits a word llama.cpp keeps
// whole leaves a one-id word without a partner or a known id straddling two words and fails. A
// rule that keeps together what llama.cpp splits is caught only where the ids are known (bytes,
// or ids seen one-to-one elsewhere): runs of ids seen nowhere else (the Cyrillic, Khmer and most
// emoji vectors) constrain nothing but their count.

struct SplitCheck {
  size_t one_to_one = 0;  // vectors whose words and ids pair one to one
  std::vector<std::string> failures;
};

// True when `ids` splits into runs for `words` as described above.
bool alignable(const Words& words, const std::vector<int32_t>& ids, const std::map<std::string, int32_t>& word_id,
               const std::map<int32_t, std::string>& id_text) {
  // can[i][j]: the first i words take exactly the first j ids.
  std::vector<std::vector<char>> can(words.size() + 1, std::vector<char>(ids.size() + 1, 0));
  can[0][0] = 1;
  for (size_t i = 0; i < words.size(); ++i) {
    const auto known = word_id.find(words[i]);
    for (size_t j = 0; j < ids.size(); ++j) {
      if (!can[i][j]) continue;
      if (known != word_id.end()) {
        if (ids[j] == known->second) can[i + 1][j + 1] = 1;
        continue;
      }
      std::string spelled;  // the text of the run's known ids
      size_t unknown = 0;   // ids of unknown text in the run, at least one byte each
      for (size_t k = j; k < ids.size(); ++k) {
        const auto t = id_text.find(ids[k]);
        if (t == id_text.end()) {
          ++unknown;
        } else if (words[i].find(t->second) == std::string::npos) {
          break;
        } else {
          spelled += t->second;
        }
        if (spelled.size() + unknown > words[i].size()) break;
        if (unknown > 0 || spelled == words[i]) can[i + 1][k + 1] = 1;
      }
    }
  }
  return can[words.size()][ids.size()];
}

SplitCheck check_split(const std::string& pre, const std::string& vocab) {
  SplitCheck r;
  const auto vectors = tokenizer_testing::read_vectors(tokenizer_testing::bpe_vocab(vocab));
  const Tokenizer gpt2 = tokenizer_testing::load_tokenizer(tokenizer_testing::bpe_vocab("gpt-2"));
  std::map<int32_t, std::string> id_text;
  std::map<std::string, int32_t> word_id;
  for (int32_t id = 0; id < 256; ++id) {  // a one-byte word is its byte's id
    id_text[id] = gpt2.token_to_piece(id);
    word_id[id_text[id]] = id;
  }
  std::vector<Words> words;
  for (const auto& v : vectors) words.push_back(split(pre, v.input));
  for (size_t i = 0; i < vectors.size(); ++i) {
    if (words[i].size() != vectors[i].ids.size() || words[i].empty()) continue;
    ++r.one_to_one;
    for (size_t k = 0; k < words[i].size(); ++k) {
      const auto w = word_id.emplace(words[i][k], vectors[i].ids[k]).first;
      const auto t = id_text.emplace(vectors[i].ids[k], words[i][k]).first;
      if (w->second != vectors[i].ids[k] || t->second != words[i][k]) {
        r.failures.push_back("vector " + std::to_string(i) + ": word [" + words[i][k] + "] is id " +
                             std::to_string(vectors[i].ids[k]) + " here, but id " + std::to_string(w->second) +
                             " is word [" + w->first + "] and id " + std::to_string(t->first) + " is [" +
                             t->second + "] elsewhere");
      }
    }
  }
  for (size_t i = 0; i < vectors.size(); ++i) {
    if (!alignable(words[i], vectors[i].ids, word_id, id_text)) {
      r.failures.push_back("vector " + std::to_string(i) + " [" + vectors[i].input + "]: " +
                           std::to_string(words[i].size()) + " words do not fit its " +
                           std::to_string(vectors[i].ids.size()) + " ids");
    }
  }
  return r;
}

#define SKIP_WITHOUT_VECTORS(vocab)                                                                   \
  do {                                                                                                \
    for (const std::string& f : {tokenizer_testing::bpe_vocab(vocab).string() + ".out",                \
                                tokenizer_testing::bpe_vocab("gpt-2").string()}) {                    \
      const std::string why = kakeya::testing::shared_dir_missing(f);                                 \
      if (!why.empty()) GTEST_SKIP() << why;                                                          \
    }                                                                                                 \
  } while (0)

std::string join(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& l : lines) out += l + "\n";
  return out;
}

TEST(PreTokenizerVectors, SplitAgreesWithTheIdsOfLlama3) {
  SKIP_WITHOUT_VECTORS("llama-bpe");
  const SplitCheck r = check_split("llama-bpe", "llama-bpe");
  RecordProperty("one_to_one_vectors", static_cast<int>(r.one_to_one));
  EXPECT_TRUE(r.failures.empty()) << join(r.failures);
  EXPECT_GE(r.one_to_one, 25u);  // how much of the check rests on one-to-one vectors
}

TEST(PreTokenizerVectors, SplitAgreesWithTheIdsOfQwen2) {
  SKIP_WITHOUT_VECTORS("qwen2");
  const SplitCheck r = check_split("qwen2", "qwen2");
  RecordProperty("one_to_one_vectors", static_cast<int>(r.one_to_one));
  EXPECT_TRUE(r.failures.empty()) << join(r.failures);
  EXPECT_GE(r.one_to_one, 25u);
}

TEST(PreTokenizerVectors, TheCheckRejectsTheOtherFamilysRules) {
  // The check has teeth: Qwen2's one-digit rule on Llama-3's ids (which group digits by three)
  // and GPT-2's rule (spaces before digits, no newline grouping) on Qwen2's ids both fail.
  SKIP_WITHOUT_VECTORS("llama-bpe");
  SKIP_WITHOUT_VECTORS("qwen2");
  EXPECT_FALSE(check_split("qwen2", "llama-bpe").failures.empty());
  EXPECT_FALSE(check_split("gpt-2", "qwen2").failures.empty());
}

}  // namespace
}  // namespace kakeya::engine
