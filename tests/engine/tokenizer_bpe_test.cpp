// Byte-level BPE against llama.cpp's vectors: every vocabulary of
// ../shared/reference/tokenizer/bpe/ (README there) that comes with its GGUF, plus phi-3 (SPM
// with extra special tokens). The .out lines are what llama.cpp c392e50 produces with
// add_special = false, parse_special = false (tests/test-tokenizer-0.cpp). Skipped, saying why,
// without the shared folder.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "engine/gguf.h"
#include "engine/tokenizer.h"
#include "engine/tokenizer_bpe.h"
#include "tests/engine/tokenizer_vectors.h"
#include "tests/harness/paths.h"

namespace kakeya::engine {
namespace {

using tokenizer_testing::bpe_vocab;
using tokenizer_testing::load_tokenizer;
using tokenizer_testing::read_vectors;

const Tokenizer& vocab(const std::string& name) {
  static std::map<std::string, Tokenizer> cache;
  auto it = cache.find(name);
  if (it == cache.end()) it = cache.emplace(name, load_tokenizer(bpe_vocab(name))).first;
  return it->second;
}

class BpeVectors : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    const std::string why = kakeya::testing::shared_dir_missing(bpe_vocab(GetParam()));
    if (!why.empty()) GTEST_SKIP() << why;
  }
};

TEST_P(BpeVectors, MatchesEveryLlamaCppVector) {
  const auto vectors = read_vectors(bpe_vocab(GetParam()));
  ASSERT_EQ(vectors.size(), 46u);
  for (size_t i = 0; i < vectors.size(); ++i) {
    EXPECT_EQ(vocab(GetParam()).tokenize(vectors[i].input, false, false), vectors[i].ids)
        << GetParam() << " vector " << i << ": [" << vectors[i].input << "]";
  }
}

TEST_P(BpeVectors, DecodesBackToTheInput) {
  const Tokenizer& t = vocab(GetParam());
  for (const auto& v : read_vectors(bpe_vocab(GetParam()))) {
    EXPECT_EQ(t.decode(t.encode(v.input, true), true), v.input) << GetParam();
  }
}

INSTANTIATE_TEST_SUITE_P(Vocabularies, BpeVectors,
                         ::testing::Values("gpt-2", "starcoder", "falcon", "deepseek-coder", "deepseek-llm",
                                           "phi-3"),
                         [](const ::testing::TestParamInfo<std::string>& p) {
                           std::string n = p.param;
                           for (char& c : n) c = (c == '-') ? '_' : c;
                           return n;
                         });

#define SKIP_WITHOUT(name)                                                                  \
  do {                                                                                      \
    const std::string why = kakeya::testing::shared_dir_missing(bpe_vocab(name));           \
    if (!why.empty()) GTEST_SKIP() << why;                                                  \
  } while (0)

TEST(TokenizerBpeGguf, ReadsTheFileSettings) {
  SKIP_WITHOUT("gpt-2");
  const Tokenizer& g = vocab("gpt-2");
  EXPECT_EQ(g.kind(), VocabKind::kBpe);
  EXPECT_EQ(g.pre(), "gpt-2");
  EXPECT_EQ(g.n_vocab(), 50257);
  EXPECT_EQ(g.bos(), 50256);
  EXPECT_EQ(g.eos(), 50256);
  EXPECT_EQ(g.unk(), -1);
  EXPECT_FALSE(g.add_bos());  // no add_bos_token key; llama.cpp's default for gpt-2
  EXPECT_FALSE(g.add_space_prefix());
  EXPECT_EQ(g.token_text(220), "\xc4\xa0");  // "Ġ", the space byte
  EXPECT_EQ(g.token_to_piece(220), " ");
  EXPECT_EQ(g.token_to_piece(198), "\n");
}

TEST(TokenizerBpeGguf, EndOfGenerationAndControlTokens) {
  SKIP_WITHOUT("gpt-2");
  const Tokenizer& g = vocab("gpt-2");
  EXPECT_EQ(g.eog_ids(), (std::vector<int32_t>{50256}));  // <|endoftext|>
  EXPECT_EQ(g.eot(), 50256);                              // found by its text
  EXPECT_TRUE(g.is_eog(50256));
  EXPECT_FALSE(g.is_eog(198));
  EXPECT_EQ(g.token_type(50256), TokenType::kControl);
  EXPECT_EQ(g.token_to_piece(50256), "");
  EXPECT_EQ(g.token_to_piece(50256, true), "<|endoftext|>");
  EXPECT_EQ(g.decode({15496, 50256, 995}), "Hello world");

  SKIP_WITHOUT("starcoder");
  const Tokenizer& s = vocab("starcoder");
  // <|endoftext|> (0, also EOS) and llama.cpp's FIM fallbacks: <fim_pad> is not among its
  // texts (<|fim_pad|>, <fim-pad>, <PAD>), so only EOS ends generation.
  EXPECT_EQ(s.eog_ids(), (std::vector<int32_t>{0}));
}

TEST(TokenizerBpeGguf, ParsesControlTokensOnlyWhenAsked) {
  SKIP_WITHOUT("gpt-2");
  const Tokenizer& g = vocab("gpt-2");
  const std::string text = "Hi<|endoftext|>";
  const auto plain = g.tokenize(text, false, false);
  const auto parsed = g.tokenize(text, false, true);
  ASSERT_FALSE(parsed.empty());
  EXPECT_EQ(parsed.back(), 50256);
  EXPECT_EQ(parsed.size(), 2u);  // "Hi" + <|endoftext|>
  EXPECT_GT(plain.size(), 2u);   // "<", "|", "endoftext", … spelled out
  EXPECT_EQ(std::count(plain.begin(), plain.end(), 50256), 0);
  EXPECT_EQ(g.decode(plain), text);
}

TEST(TokenizerBpeGguf, UserDefinedTokensAreMatchedEvenWithoutParsing) {
  SKIP_WITHOUT("deepseek-coder");
  const Tokenizer& d = vocab("deepseek-coder");
  // <|User|> (32019) has token_type 4: llama.cpp matches user-defined tokens whole before
  // pre-tokenizing whether or not special tokens are parsed.
  ASSERT_EQ(d.token_type(32019), TokenType::kUserDefined);
  for (const bool parse : {false, true}) {
    const auto ids = d.tokenize("a<|User|>b", false, parse);
    ASSERT_EQ(ids.size(), 3u) << parse;
    EXPECT_EQ(ids[1], 32019);
  }
  // <｜fim▁hole｜> is a user-defined token llama.cpp takes as FIM-suffix by its text and turns
  // into a control token: matched only when parsing.
  const int32_t hole = d.find_token("<\xef\xbd\x9c" "fim\xe2\x96\x81hole\xef\xbd\x9c>");
  ASSERT_EQ(hole, 32015);
  EXPECT_EQ(d.token_type(hole), TokenType::kControl);
  EXPECT_EQ(d.special_ids().fim_suf, hole);
  EXPECT_EQ(d.tokenize(d.token_text(hole), false, true), (std::vector<int32_t>{hole}));
  EXPECT_NE(d.tokenize(d.token_text(hole), false, false), (std::vector<int32_t>{hole}));
}

TEST(TokenizerBpeGguf, AddSpecialUsesTheFileFlags) {
  SKIP_WITHOUT("deepseek-llm");
  const Tokenizer& d = vocab("deepseek-llm");
  EXPECT_TRUE(d.add_bos());  // tokenizer.ggml.add_bos_token = true
  EXPECT_FALSE(d.add_eos());
  const auto ids = d.tokenize("Hello", true, false);
  ASSERT_EQ(ids.size(), 2u);
  EXPECT_EQ(ids[0], 100000);
  EXPECT_EQ(d.tokenize("Hello", false, false).size(), 1u);
  EXPECT_EQ(d.tokenize("", true, false), (std::vector<int32_t>{100000}));
}

TEST(TokenizerPhi3Gguf, SpecialTokensAndEndOfGeneration) {
  SKIP_WITHOUT("phi-3");
  const Tokenizer& p = vocab("phi-3");
  EXPECT_EQ(p.kind(), VocabKind::kSpm);
  EXPECT_EQ(p.eos(), 32000);
  EXPECT_EQ(p.eot(), 32007);  // <|end|>, by text: the first of llama.cpp's EOT texts present
  // <|endoftext|> (EOS) and <|end|>; </s> (2) is user-defined, not end of generation.
  EXPECT_EQ(p.eog_ids(), (std::vector<int32_t>{32000, 32007}));
  // llama-cli's chat prompt: parse_special = true. "<|user|>" is control (32010); general.name
  // "Phi3" gives special tokens llama.cpp's rstrip, so the "\n" after it is swallowed and the
  // text after a special token gets SentencePiece's space prefix again.
  const auto ids = p.tokenize("<|user|>\nHello<|end|>", true, true);
  ASSERT_GE(ids.size(), 4u);
  EXPECT_EQ(ids.front(), 1);  // BOS
  EXPECT_EQ(ids[1], 32010);
  EXPECT_EQ(ids.back(), 32007);
  EXPECT_EQ(std::vector<int32_t>(ids.begin() + 2, ids.end() - 1), p.encode("Hello", false));
  // Without parsing, the same text is plain text.
  EXPECT_EQ(std::count(ids.begin(), ids.end(), 32010), 1);
  const auto plain = p.tokenize("<|user|>", false, false);
  EXPECT_EQ(std::count(plain.begin(), plain.end(), 32010), 0);
  EXPECT_EQ(p.decode(plain, false), " <|user|>");
  EXPECT_EQ(p.token_to_piece(32010, true), "<|user|>");
  EXPECT_EQ(p.token_to_piece(32010), "");
}


// --- a hand-made byte-level vocabulary -------------------------------------------------------

// ids 0..255: the byte symbols in byte order; then `extra` tokens; merges as given (rank = index).
Tokenizer toy_bpe(const std::vector<std::string>& extra, const std::vector<std::string>& merges,
                  const std::string& pre = "gpt-2") {
  VocabSpec spec;
  spec.kind = VocabKind::kBpe;
  spec.pre = pre;
  for (int b = 0; b < 256; ++b) spec.tokens.push_back(byte_level_encode(std::string(1, static_cast<char>(b))));
  for (const auto& e : extra) spec.tokens.push_back(e);
  spec.merges = merges;
  auto t = Tokenizer::create(std::move(spec));
  EXPECT_TRUE(t.ok()) << (t.ok() ? "" : t.error().str());
  return std::move(t).value();
}

TEST(TokenizerBpeVocab, ByteLevelAlphabet) {
  EXPECT_EQ(byte_level_encode(" "), "\xc4\xa0");     // Ġ U+0120
  EXPECT_EQ(byte_level_encode("\n"), "\xc4\x8a");    // Ċ U+010A
  EXPECT_EQ(byte_level_encode("a~"), "a~");           // printable ASCII stands for itself
  EXPECT_EQ(byte_level_encode("\xad"), "\xc5\x83");  // 0xAD, the last of the 68 moved bytes: U+0143
  std::string all;
  for (int b = 0; b < 256; ++b) all.push_back(static_cast<char>(b));
  EXPECT_EQ(byte_level_decode(byte_level_encode(all)), all);
  // A code point that stands for no byte renders as llama.cpp's marker.
  EXPECT_EQ(byte_level_decode("a\xe2\x82\xac"), "a[UNK_BYTE_0xe282aca\xe2\x82\xac]");
}

TEST(TokenizerBpeVocab, MergesLowestRankFirst) {
  // "abc": "b c" (rank 0) beats "a b" (rank 1); then "a" + "bc" has no merge.
  const Tokenizer t = toy_bpe({"ab", "bc"}, {"b c", "a b"});
  EXPECT_EQ(t.tokenize("abc", false, false), (std::vector<int32_t>{'a', 257}));
  // Equal pairs: the leftmost merges first: "aaa" → "aa" + "a".
  const Tokenizer u = toy_bpe({"aa"}, {"a a"});
  EXPECT_EQ(u.tokenize("aaa", false, false), (std::vector<int32_t>{256, 'a'}));
}

TEST(TokenizerBpeVocab, MergesChainWithinPreTokenizerWords) {
  // "hello hello": gpt-2 words "hello", " hello"; merges build "hello" and "Ġhello".
  const Tokenizer t = toy_bpe({"he", "ll", "hell", "hello", "\xc4\xa0hello"},
                              {"h e", "l l", "he ll", "hell o", "\xc4\xa0 hello"});
  EXPECT_EQ(t.tokenize("hello hello", false, false), (std::vector<int32_t>{259, 260}));
  EXPECT_EQ(t.decode({259, 260}), "hello hello");
  // Merges never cross words: "o h" is a pair only across " h".
  const Tokenizer u = toy_bpe({"o\xc4\xa0"}, {"o \xc4\xa0"});
  EXPECT_EQ(u.tokenize("o o", false, false).size(), 3u);
}

TEST(TokenizerBpeVocab, IgnoreMergesTakesWholeWordTokens) {
  // "abc" is a token but no merge builds it: llama-3 (ignore_merges) takes it whole, gpt-2 not.
  const std::vector<std::string> extra = {"abc"};
  EXPECT_EQ(toy_bpe(extra, {}, "llama-bpe").tokenize("abc", false, false), (std::vector<int32_t>{256}));
  EXPECT_EQ(toy_bpe(extra, {}, "gpt-2").tokenize("abc", false, false),
            (std::vector<int32_t>{'a', 'b', 'c'}));
}

TEST(TokenizerBpeVocab, SymbolsWithoutATokenKeepOnlyTheirSingleByteTokens) {
  // The merge "a b" builds "ab", which is not a token: llama.cpp looks up the symbol's single
  // bytes instead; with the byte symbol of 'b' removed from the vocabulary only 'a' survives.
  VocabSpec spec;
  spec.kind = VocabKind::kBpe;
  spec.pre = "gpt-2";
  spec.tokens = {"a", "x"};
  spec.merges = {"a b"};
  auto t = Tokenizer::create(spec);
  ASSERT_TRUE(t.ok()) << t.error().str();
  EXPECT_EQ(t->tokenize("ab", false, false), (std::vector<int32_t>{0}));
  EXPECT_EQ(t->tokenize("b", false, false), (std::vector<int32_t>{}));
}

TEST(TokenizerBpeVocab, UnknownPreTokenizerIsAnError) {
  VocabSpec spec;
  spec.kind = VocabKind::kBpe;
  spec.pre = "tekken";
  spec.tokens = {"a"};
  auto t = Tokenizer::create(spec);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.error().code, "unknown_pretokenizer");
  EXPECT_NE(t.error().message.find("tekken"), std::string::npos);
}

TEST(TokenizerBpeVocab, PiecesByTokenType) {
  VocabSpec spec;
  spec.kind = VocabKind::kBpe;
  spec.tokens = {"\xc4\xa0hi", "<ctl>", "<usr>", "<0x41>", "gone", "<unk>"};
  spec.types = {1, 3, 4, 6, 5, 2};
  auto t = Tokenizer::create(spec);
  ASSERT_TRUE(t.ok()) << t.error().str();
  EXPECT_EQ(t->token_to_piece(0), " hi");      // normal: byte-level decoded
  EXPECT_EQ(t->token_to_piece(1), "");         // control
  EXPECT_EQ(t->token_to_piece(1, true), "<ctl>");
  EXPECT_EQ(t->token_to_piece(2), "<usr>");    // user-defined: its text, always
  EXPECT_EQ(t->token_to_piece(3, true), "");   // byte tokens mean nothing to llama.cpp's BPE
  EXPECT_EQ(t->token_to_piece(4, true), "");   // unused
  EXPECT_EQ(t->token_to_piece(5), "");         // unknown: only with special
  EXPECT_EQ(t->token_to_piece(5, true), "<unk>");
  EXPECT_FALSE(t->add_bos());                  // gpt-2 default
}

}  // namespace
}  // namespace kakeya::engine
