// Special tokens, end of generation and add_special on hand-made vocabularies: llama.cpp c392e50
// src/llama-vocab.cpp (`tokenizer_st_partition`, the EOG and text-fallback part of
// `impl::load`, `impl::tokenize`).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "engine/tokenizer.h"

namespace kakeya::engine {
namespace {

// SPM vocabulary: 0 <unk>, 1 <s>, 2 </s>, 3..258 <0x00>..<0xFF>, then `extra` (text, type).
VocabSpec spm_spec(const std::vector<std::pair<std::string, int32_t>>& extra) {
  VocabSpec spec;
  spec.kind = VocabKind::kSpm;
  spec.tokens = {"<unk>", "<s>", "</s>"};
  spec.types = {2, 3, 3};
  for (int b = 0; b < 256; ++b) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "<0x%02X>", b);
    spec.tokens.emplace_back(buf);
    spec.types.push_back(6);
  }
  for (const auto& [text, type] : extra) {
    spec.tokens.push_back(text);
    spec.types.push_back(type);
  }
  spec.ids.bos = 1;
  spec.ids.eos = 2;
  spec.ids.unk = 0;
  return spec;
}

Tokenizer make(VocabSpec spec) {
  auto t = Tokenizer::create(std::move(spec));
  EXPECT_TRUE(t.ok()) << (t.ok() ? "" : t.error().str());
  return std::move(t).value();
}

constexpr int32_t kFirstExtra = 259;
constexpr int32_t kByte0 = 3;  // <0x00>
int32_t byte_id(char c) { return kByte0 + static_cast<unsigned char>(c); }

TEST(TokenizerSpecial, ControlTokensNeedParseSpecialUserDefinedDoNot) {
  // 259 <|ctl|> control, 260 <usr> user-defined, 261 ▁ (so the space prefix is one token).
  const Tokenizer t = make(spm_spec({{"<|ctl|>", 3}, {"<usr>", 4}, {"\xe2\x96\x81", 1}}));
  const int32_t ctl = kFirstExtra, usr = kFirstExtra + 1, space = kFirstExtra + 2;
  // parse_special: both whole; text after a special token gets the space prefix again.
  EXPECT_EQ(t.tokenize("<|ctl|>a<usr>", false, true),
            (std::vector<int32_t>{ctl, space, byte_id('a'), usr}));
  // Without: the control token is text (its bytes), the user-defined one still whole.
  const auto plain = t.tokenize("<|ctl|>a<usr>", false, false);
  EXPECT_EQ(plain.back(), usr);
  EXPECT_EQ(std::count(plain.begin(), plain.end(), ctl), 0);
  EXPECT_EQ(plain.front(), space);
  EXPECT_EQ(t.decode(plain), " <|ctl|>a<usr>");
}

TEST(TokenizerSpecial, LongestSpecialTextWins) {
  const Tokenizer t = make(spm_spec({{"<a>", 3}, {"<a><b>", 3}}));
  EXPECT_EQ(t.tokenize("<a><b><a>", false, true), (std::vector<int32_t>{kFirstExtra + 1, kFirstExtra}));
}

TEST(TokenizerSpecial, AddSpecialFollowsTheFileFlags) {
  VocabSpec spec = spm_spec({});
  spec.add_bos = false;
  spec.add_eos = true;
  const Tokenizer t = make(spec);
  EXPECT_EQ(t.tokenize("", true, false), (std::vector<int32_t>{2}));
  const auto ids = t.tokenize("a", true, false);
  EXPECT_EQ(ids.back(), 2);
  EXPECT_NE(ids.front(), 1);
  EXPECT_EQ(t.tokenize("a", false, false).size() + 1, ids.size());
  // encode() is told about BOS and never adds EOS.
  EXPECT_EQ(t.encode("a", true).front(), 1);
  EXPECT_NE(t.encode("a", true).back(), 2);
}

TEST(TokenizerSpecial, Phi3NamesGiveSpecialTokensRstrip) {
  // llama.cpp sets rstrip on every special token (and </s>) of a model named phi-3/phi3, except
  // <unk>, <s> and <|endoftext|>: the white space after them is swallowed.
  VocabSpec spec = spm_spec({{"<|end|>", 3}, {"<|endoftext|>", 3}, {"\xe2\x96\x81", 1}});
  const int32_t end = kFirstExtra, eot = kFirstExtra + 1, space = kFirstExtra + 2;
  spec.model_name = "Phi3";
  const Tokenizer phi = make(spec);
  EXPECT_EQ(phi.tokenize("<|end|>\n \tx", false, true), (std::vector<int32_t>{end, space, byte_id('x')}));
  EXPECT_EQ(phi.tokenize("<|endoftext|> x", false, true),
            (std::vector<int32_t>{eot, space, space, byte_id('x')}));
  spec.model_name = "Llama";
  const Tokenizer other = make(spec);
  EXPECT_EQ(other.tokenize("<|end|>\nx", false, true),
            (std::vector<int32_t>{end, space, byte_id('\n'), byte_id('x')}));
}

TEST(TokenizerSpecial, EndOfGenerationSet) {
  // No eot/eom keys: found by text, in llama.cpp's order; every EOG text joins the set.
  VocabSpec spec = spm_spec({{"<|im_end|>", 1}, {"<|eot_id|>", 4}, {"<|eom_id|>", 1}, {"<|fim_pad|>", 4},
                             {"<end_of_turn>", 1}, {"<|not_eog|>", 3}});
  const int32_t im_end = kFirstExtra, eot_id = kFirstExtra + 1, eom_id = kFirstExtra + 2,
                fim_pad = kFirstExtra + 3, end_of_turn = kFirstExtra + 4;
  const Tokenizer t = make(spec);
  EXPECT_EQ(t.eot(), eot_id);  // <|eot_id|> comes first in llama.cpp's list
  EXPECT_EQ(t.eom(), eom_id);
  EXPECT_EQ(t.special_ids().fim_pad, fim_pad);
  EXPECT_EQ(t.eog_ids(), (std::vector<int32_t>{2, im_end, eot_id, eom_id, fim_pad, end_of_turn}));
  EXPECT_FALSE(t.is_eog(kFirstExtra + 5));
  // Found by text → control, whatever the file said (llama.cpp overrides them).
  for (const int32_t id : {im_end, eot_id, eom_id, fim_pad, end_of_turn}) {
    EXPECT_EQ(t.token_type(id), TokenType::kControl) << id;
    EXPECT_EQ(t.token_to_piece(id), "") << id;
  }
  // An eot key names the token; text fallbacks are then not consulted for EOT.
  spec.ids.eot = im_end;
  EXPECT_EQ(make(spec).eot(), im_end);
}

TEST(TokenizerSpecial, RejectsSpecialIdsOutsideTheVocabulary) {
  VocabSpec spec = spm_spec({});
  spec.ids.eot = 9999;
  auto t = Tokenizer::create(spec);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.error().code, "bad_vocab");
  EXPECT_NE(t.error().message.find("eot id 9999"), std::string::npos);
}

}  // namespace
}  // namespace kakeya::engine
