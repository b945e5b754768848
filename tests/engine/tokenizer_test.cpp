// Tokenizer against llama.cpp's Llama-2 SPM vectors, the stories260K reference prompt and the
// niah-tiny golden prompts (../shared/reference/tokenizer/README.md, read from the shared folder
// and never copied into the repository; those tests skip when it is absent), and
// models/niah-tiny.md.
#include "engine/tokenizer.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/gguf.h"
#include "tests/engine/tokenizer_vectors.h"
#include "tests/harness/paths.h"

namespace kakeya::engine {
namespace {

using kakeya::testing::data_dir;
using kakeya::testing::shared_dir;
using kakeya::testing::shared_dir_missing;
using kakeya::testing::models_dir;
using tokenizer_testing::load_tokenizer;
using tokenizer_testing::slurp;

// Skips the calling test when llama.cpp's Llama-2 SPM vectors are not in the shared folder.
#define SKIP_WITHOUT_LLAMA_SPM()                                                            \
  do {                                                                                      \
    const std::string why = shared_dir_missing("reference/tokenizer/ggml-vocab-llama-spm.gguf"); \
    if (!why.empty()) GTEST_SKIP() << why;                                                  \
  } while (0)

const Tokenizer& llama_spm() {
  static const Tokenizer tok =
      load_tokenizer(shared_dir() / "reference" / "tokenizer" / "ggml-vocab-llama-spm.gguf");
  return tok;
}

const Tokenizer& tok512() {
  static const Tokenizer tok = load_tokenizer(models_dir() / "niah-tiny-f32.gguf");
  return tok;
}

std::vector<tokenizer_testing::TokenizerVector> llama_vectors() {
  return tokenizer_testing::read_vectors(shared_dir() / "reference" / "tokenizer" / "ggml-vocab-llama-spm.gguf");
}

TEST(TokenizerGguf, ReadsLlamaSpmVocabulary) {
  SKIP_WITHOUT_LLAMA_SPM();
  const Tokenizer& t = llama_spm();
  EXPECT_EQ(t.n_vocab(), 32000);
  EXPECT_EQ(t.bos(), 1);
  EXPECT_EQ(t.eos(), 2);
  EXPECT_EQ(t.unk(), 0);
  EXPECT_TRUE(t.add_bos());
  EXPECT_EQ(t.token_type(1), TokenType::kControl);
  EXPECT_EQ(t.token_type(13), TokenType::kByte);
  EXPECT_EQ(t.token_text(15043), "\xe2\x96\x81Hello");
}

TEST(TokenizerGguf, MatchesAll46LlamaCppVectors) {
  SKIP_WITHOUT_LLAMA_SPM();
  const auto vectors = llama_vectors();
  ASSERT_EQ(vectors.size(), 46u);
  for (size_t i = 0; i < vectors.size(); ++i) {
    EXPECT_EQ(llama_spm().encode(vectors[i].input, false), vectors[i].ids)
        << "vector " << i << ": [" << vectors[i].input << "]";
  }
}

TEST(TokenizerGguf, RoundTripsAllVectors) {
  SKIP_WITHOUT_LLAMA_SPM();
  for (const auto& v : llama_vectors()) {
    const auto ids = llama_spm().encode(v.input, true);
    EXPECT_EQ(llama_spm().decode(ids, true), v.input);
  }
}

TEST(TokenizerGguf, DocumentedExamples) {
  SKIP_WITHOUT_LLAMA_SPM();
  const Tokenizer& t = llama_spm();
  EXPECT_EQ(t.encode("Hello world", true), (std::vector<int32_t>{1, 15043, 3186}));
  EXPECT_EQ(t.encode("Hello world", false), (std::vector<int32_t>{15043, 3186}));
  EXPECT_EQ(t.encode(" Hello", false), (std::vector<int32_t>{29871, 15043}));
  EXPECT_EQ(t.encode(" ", false), (std::vector<int32_t>{259}));
  EXPECT_EQ(t.encode("\t", false), (std::vector<int32_t>{29871, 12}));
  EXPECT_EQ(t.encode("", true), (std::vector<int32_t>{1}));
  EXPECT_TRUE(t.encode("", false).empty());
  const auto llama = t.encode("\xf0\x9f\xa6\x99", false);  // 🦙 has no token: bytes
  ASSERT_GE(llama.size(), 4u);
  EXPECT_EQ(llama[llama.size() - 4], 3 + 0xF0);
}

TEST(TokenizerGguf, DecodeSkipsControlAndJoinsBytes) {
  SKIP_WITHOUT_LLAMA_SPM();
  const Tokenizer& t = llama_spm();
  EXPECT_EQ(t.decode({1, 15043, 3186, 2}), " Hello world");
  EXPECT_EQ(t.decode({1, 15043, 3186, 2}, true), "Hello world");
  // Bytes of 🦙 after a space token: bytes are joined into one UTF-8 character.
  EXPECT_EQ(t.decode({29871, 3 + 0xF0, 3 + 0x9F, 3 + 0xA6, 3 + 0x99}), " \xf0\x9f\xa6\x99");
  EXPECT_EQ(t.token_to_piece(13), "\n");
  EXPECT_EQ(t.token_to_piece(1), "");
  EXPECT_EQ(t.token_to_piece(-5), "");
  EXPECT_EQ(t.token_to_piece(32000), "");
}

TEST(TokenizerGguf, Stories260KReferencePrompt) {
  const auto ref = nlohmann::json::parse(slurp(data_dir() / "reference" / "stories260K-f32.ref.json"));
  const Tokenizer t = load_tokenizer(models_dir() / "stories260K-f32.gguf");
  EXPECT_EQ(t.n_vocab(), 512);
  const auto ids = t.encode(ref.at("prompt_text").get<std::string>(), ref.at("prompt_add_bos").get<bool>());
  EXPECT_EQ(ids, ref.at("prompt_ids").get<std::vector<int32_t>>());
  EXPECT_EQ(t.decode(ids, true), ref.at("prompt_text").get<std::string>());
}

TEST(TokenizerGguf, NiahTinyGoldenPrompts) {
  const auto g = nlohmann::json::parse(slurp(models_dir() / "niah-tiny.goldens.json"));
  size_t long_prompts = 0;
  for (const auto& golden : g.at("goldens")) {
    const std::string text = golden.at("prompt_text").get<std::string>();
    const auto expected = golden.at("prompt_token_ids").get<std::vector<int32_t>>();
    const auto ids = tok512().encode(text, golden.at("add_bos").get<bool>());
    EXPECT_EQ(ids, expected) << golden.at("name");
    EXPECT_EQ(tok512().decode(ids, true), text) << golden.at("name");
    if (expected.size() >= 1000) ++long_prompts;
  }
  EXPECT_GE(long_prompts, 2u);  // the 1,048- and 3,008-token prompts were among them
}

TEST(TokenizerGguf, NiahGoldenContinuationDecodes) {
  // Golden 1: " MAPLE-7890" + EOS + " is the se" (models/niah-tiny.md).
  const std::vector<int32_t> ids = {392, 447, 460, 438, 459, 464, 491, 487,
                                    483, 477, 2,   410, 293, 265, 262, 411};
  EXPECT_EQ(tok512().decode(ids), " MAPLE-7890 is the se");
}

// --- from_vocab on a hand-made vocabulary ------------------------------------------------------

// ids: 0 <unk>, 1 <s>, 2 </s>, 3..258 <0x00>..<0xFF>, then the given pieces.
Tokenizer toy(const std::vector<std::pair<std::string, float>>& pieces, bool add_space_prefix = true) {
  std::vector<std::string> tokens = {"<unk>", "<s>", "</s>"};
  std::vector<int32_t> types = {2, 3, 3};
  for (int b = 0; b < 256; ++b) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "<0x%02X>", b);
    tokens.emplace_back(buf);
    types.push_back(6);
  }
  std::vector<float> scores(tokens.size(), 0.0f);
  for (const auto& [text, score] : pieces) {
    tokens.push_back(text);
    scores.push_back(score);
    types.push_back(1);
  }
  auto t = Tokenizer::from_vocab(tokens, scores, types, 1, 2, 0, true, add_space_prefix);
  EXPECT_TRUE(t.ok());
  return std::move(t).value();
}

TEST(TokenizerVocab, MergesHighestScoreFirst) {
  // "abc": "ab" (score 1) vs "bc" (score 5): bc wins, then a + bc has no token.
  const Tokenizer t = toy({{"a", 0}, {"b", 0}, {"c", 0}, {"ab", 1}, {"bc", 5}}, false);
  const int32_t a = 259, bc = 263;
  EXPECT_EQ(t.encode("abc", false), (std::vector<int32_t>{a, bc}));
}

TEST(TokenizerVocab, EqualScoresMergeLeftmostFirst) {
  // "aaa" with "aa" only: the leftmost pair merges first → "aa" + "a".
  const Tokenizer t = toy({{"a", 0}, {"aa", 1}}, false);
  EXPECT_EQ(t.encode("aaa", false), (std::vector<int32_t>{260, 259}));
  // "abc" where "ab" and "bc" tie: leftmost ("ab") wins.
  const Tokenizer u = toy({{"a", 0}, {"b", 0}, {"c", 0}, {"ab", 2}, {"bc", 2}}, false);
  EXPECT_EQ(u.encode("abc", false), (std::vector<int32_t>{262, 261}));
}

TEST(TokenizerVocab, MergesChainThroughLongerTokens) {
  const Tokenizer t = toy({{"\xe2\x96\x81", 0}, {"h", 0}, {"i", 0}, {"hi", 1}, {"\xe2\x96\x81hi", 2}});
  EXPECT_EQ(t.encode("hi", true), (std::vector<int32_t>{1, 263}));
  EXPECT_EQ(t.decode(t.encode("hi hi", false)), " hi hi");
}

TEST(TokenizerVocab, UnknownCharactersFallBackToBytes) {
  const Tokenizer t = toy({{"a", 0}}, false);
  // "é" = C3 A9 is not a token → two byte tokens.
  EXPECT_EQ(t.encode("a\xc3\xa9", false), (std::vector<int32_t>{259, 3 + 0xC3, 3 + 0xA9}));
  EXPECT_EQ(t.decode(t.encode("a\xc3\xa9", false)), "a\xc3\xa9");
}

TEST(TokenizerVocab, WithoutByteTokensUnknownIsUsed) {
  auto t = Tokenizer::from_vocab({"<unk>", "<s>", "</s>", "a"}, {0, 0, 0, 0}, {}, 1, 2, 0, true, false);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->encode("ab", false), (std::vector<int32_t>{3, 0}));
  EXPECT_EQ(t->token_type(1), TokenType::kControl);  // inferred
  EXPECT_EQ(t->token_type(0), TokenType::kUnknown);
}

TEST(TokenizerVocab, RejectsInconsistentArrays) {
  auto a = Tokenizer::from_vocab({"a", "b"}, {0.0f}, {}, -1, -1, -1, false);
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.error().code, "bad_vocab");
  EXPECT_NE(a.error().message.find("scores"), std::string::npos);
  auto b = Tokenizer::from_vocab({"a", "b"}, {0, 0}, {1, 1}, 5, -1, -1, false);
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.error().message.find("bos"), std::string::npos);
  auto c = Tokenizer::from_vocab({"a"}, {0}, {9}, -1, -1, -1, false);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.error().message.find("token_type"), std::string::npos);
  auto d = Tokenizer::from_vocab({}, {}, {}, -1, -1, -1, false);
  EXPECT_FALSE(d.ok());
}

// A minimal GGUF v3 with only string metadata, built in memory.
std::vector<uint8_t> gguf_with_model(const std::string& model) {
  std::vector<uint8_t> b;
  auto put = [&](const void* p, size_t n) {
    const auto* c = static_cast<const uint8_t*>(p);
    b.insert(b.end(), c, c + n);
  };
  auto u32 = [&](uint32_t v) { put(&v, 4); };
  auto u64 = [&](uint64_t v) { put(&v, 8); };
  auto str = [&](const std::string& s) {
    u64(s.size());
    put(s.data(), s.size());
  };
  put("GGUF", 4);
  u32(3);
  u64(0);  // tensors
  u64(2);  // kv
  str("tokenizer.ggml.model");
  u32(8);
  str(model);
  str("tokenizer.ggml.tokens");
  u32(9);
  u32(8);
  u64(1);
  str("a");
  return b;
}

TEST(TokenizerGguf, RefusesOtherTokenizerModels) {
  const auto bytes = gguf_with_model("bert");
  auto g = GgufFile::from_memory(bytes.data(), bytes.size());
  ASSERT_TRUE(g.ok()) << g.error().str();
  auto t = Tokenizer::from_gguf(*g);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.error().code, "unsupported_tokenizer");
  EXPECT_NE(t.error().message.find("\"bert\""), std::string::npos);

  const auto bpe_bytes = gguf_with_model("gpt2");  // byte-level BPE needs its merges
  auto g1 = GgufFile::from_memory(bpe_bytes.data(), bpe_bytes.size());
  ASSERT_TRUE(g1.ok()) << g1.error().str();
  auto t1 = Tokenizer::from_gguf(*g1);
  ASSERT_FALSE(t1.ok());
  EXPECT_EQ(t1.error().code, "bad_vocab");
  EXPECT_NE(t1.error().message.find("tokenizer.ggml.merges"), std::string::npos);

  const auto ok_bytes = gguf_with_model("llama");
  auto g2 = GgufFile::from_memory(ok_bytes.data(), ok_bytes.size());
  ASSERT_TRUE(g2.ok()) << g2.error().str();
  auto t2 = Tokenizer::from_gguf(*g2);
  ASSERT_TRUE(t2.ok()) << t2.error().str();
  EXPECT_EQ(t2->n_vocab(), 1);
}

}  // namespace
}  // namespace kakeya::engine
