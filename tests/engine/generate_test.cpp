// generate (presets/generate.h): prompts tokenized as llama-cli tokenizes them, the echo, special
// tokens, chat templates, the end-of-generation stop rule, top log-probabilities and the .npy
// logits file, on stories260K.
#include "engine/presets/generate.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "engine/chat_template.h"
#include "engine/llama.h"
#include "engine/sampling.h"
#include "tests/engine/backends.h"
#include "tests/harness/paths.h"

namespace kakeya::engine {
namespace {

using test::stories;

// stories260K's vocabulary with the special ids and add_bos given here.
Tokenizer vocab(SpecialTokenIds ids = {1, 2, 0}, bool add_bos = true) {
  const GgufFile& f = stories().gguf();
  VocabSpec spec;
  spec.tokens = f.get_string_array("tokenizer.ggml.tokens").value();
  const auto scores = f.get_float_array("tokenizer.ggml.scores");
  const auto types = f.get_int_array("tokenizer.ggml.token_type");
  EXPECT_TRUE(scores.ok() && types.ok());
  spec.scores.assign(scores->begin(), scores->end());
  spec.types.assign(types->begin(), types->end());
  spec.ids = ids;
  spec.add_bos = add_bos;
  auto tok = Tokenizer::create(std::move(spec));
  EXPECT_TRUE(tok.ok()) << tok.error().str();
  return std::move(tok).value();
}

GenerateConfig greedy(const std::string& prompt, int n) {
  GenerateConfig c;
  c.prompt = prompt;
  c.max_new_tokens = n;
  c.n_ctx = 128;
  return c;
}

// Runs generate, collecting what on_text received.
nlohmann::json run(const Tokenizer& tok, const GenerateConfig& c, std::vector<std::string>* pieces = nullptr) {
  auto r = run_generate(stories(), tok, test::cpu(1), c, [&](const std::string& s) {
    if (pieces != nullptr) pieces->push_back(s);
  });
  EXPECT_TRUE(r.ok()) << r.error().str();
  return r.ok() ? *r : nlohmann::json();
}

TEST(Generate, PromptTokenizedLikeLlamaCli) {
  const Tokenizer tok = vocab();
  // add_special: BOS as the file says; parse_special: "</s>" in the text is the EOS token.
  auto p = tokenize_prompt(stories(), tok, greedy("Once upon</s> a time", 1));
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->ids, tok.tokenize("Once upon</s> a time", true, true));
  EXPECT_EQ(p->ids.front(), 1);
  EXPECT_NE(std::find(p->ids.begin(), p->ids.end(), 2), p->ids.end()) << "</s> parsed as the control token";
  EXPECT_EQ(std::find(p->ids.begin() + 1, p->ids.end(), 2) - p->ids.begin(),
            static_cast<long>(tok.tokenize("Once upon", true, true).size()));
  const auto plain = tok.encode("Once upon</s> a time", true);
  EXPECT_EQ(std::find(plain.begin(), plain.end(), 2), plain.end()) << "encode() does not parse specials";
  // A vocabulary that does not add BOS gets none.
  const Tokenizer no_bos = vocab({1, 2, 0}, false);
  EXPECT_NE(tokenize_prompt(stories(), no_bos, greedy("Once", 1))->ids.front(), 1);
  // An empty prompt starts from BOS, as llama-cli; without BOS it is refused.
  EXPECT_EQ(tokenize_prompt(stories(), tok, greedy("", 1))->ids, std::vector<int32_t>{1});
  EXPECT_EQ(tokenize_prompt(stories(), no_bos, greedy("", 1)).error().code, "bad_param");
}

TEST(Generate, EchoesThePromptUnlessToldNotTo) {
  const Tokenizer tok = vocab();
  std::vector<std::string> pieces;
  const auto r = run(tok, greedy("Once upon a time", 4), &pieces);
  ASSERT_EQ(pieces.size(), 5u);
  EXPECT_EQ(pieces[0], " Once upon a time") << "the prompt's tokens rendered (SPM: the dummy-prefix space)";
  std::string continuation;
  for (size_t i = 1; i < pieces.size(); ++i) continuation += pieces[i];
  EXPECT_EQ(continuation, r["text"]);
  EXPECT_EQ(r["text"], ", there was a");

  GenerateConfig quiet = greedy("Once upon a time", 4);
  quiet.display_prompt = false;
  pieces.clear();
  run(tok, quiet, &pieces);
  ASSERT_EQ(pieces.size(), 4u);
  EXPECT_EQ(pieces[0], ",");

  GenerateConfig special = greedy("Once upon a time", 1);
  special.special = true;
  pieces.clear();
  run(tok, special, &pieces);
  EXPECT_EQ(pieces[0], "<s> Once upon a time") << "--special renders BOS";
}

TEST(Generate, StopsAtEveryEndOfGenerationToken) {
  // Greedy from "Once upon a time" gives "," (432) " there" (383) ...: make them EOS, then EOT.
  const auto free_run = run(vocab(), greedy("Once upon a time", 6))["token_ids"].get<std::vector<int32_t>>();
  ASSERT_EQ(free_run[0], 432);
  ASSERT_EQ(free_run[1], 383);
  const Tokenizer eos_comma = vocab({1, 432, 0});
  auto r = run(eos_comma, greedy("Once upon a time", 6));
  EXPECT_EQ(r["stop_reason"], "eos");
  EXPECT_EQ(r["token_ids"], std::vector<int32_t>{432});
  SpecialTokenIds ids{1, 2, 0};
  ids.eot = 383;
  const Tokenizer eot_there = vocab(ids);
  ASSERT_TRUE(eot_there.is_eog(383));
  r = run(eot_there, greedy("Once upon a time", 6));
  EXPECT_EQ(r["stop_reason"], "eos") << "EOT ends generation too";
  EXPECT_EQ(r["token_ids"], (std::vector<int32_t>{432, 383}));
  GenerateConfig go_on = greedy("Once upon a time", 6);
  go_on.ignore_eos = true;
  r = run(eot_there, go_on);
  EXPECT_EQ(r["stop_reason"], "max_new_tokens");
  EXPECT_EQ(r["token_ids"].get<std::vector<int32_t>>(), free_run);
}

TEST(Generate, ChatWritesThePromptInTheTemplate) {
  const Tokenizer tok = vocab();
  GenerateConfig c = greedy("Hi there", 2);
  c.chat = true;
  // stories260K carries no template: an error saying so, never a guess.
  auto none = tokenize_prompt(stories(), tok, c);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().code, "no_chat_template");
  for (const auto& [tmpl, family] : std::vector<std::pair<std::string, std::string>>{
           {"chatml", "chatml"},
           {"{% for m in messages %}<|start_header_id|>{{ m['role'] }}<|end_header_id|>{% endfor %}", "llama3"}}) {
    c.chat_template = tmpl;
    auto p = tokenize_prompt(stories(), tok, c);
    ASSERT_TRUE(p.ok()) << p.error().str();
    EXPECT_EQ(p->chat_template, family);
    const std::string text = apply_chat_template(tmpl, {{"user", "Hi there"}}, true).value();
    EXPECT_NE(text.find("Hi there"), std::string::npos);
    EXPECT_EQ(p->ids, tok.tokenize(text, true, true));
    const auto r = run(tok, c);
    EXPECT_EQ(r["chat"], family);
    EXPECT_EQ(r["prompt_ids"], p->ids);
  }
  c.chat_template = "no template llama.cpp knows";
  EXPECT_EQ(tokenize_prompt(stories(), tok, c).error().code, "unknown_chat_template");
}

// The .npy file's rows are the logits each token was chosen from, and top_logprobs are their
// log-softmax: both checked against logits evaluated here.
TEST(Generate, LogitsFileAndTopLogprobsDescribeEachGeneratedPosition) {
  const Tokenizer tok = vocab();
  testing::TempDir dir;
  GenerateConfig c = greedy("Once upon a time", 5);
  c.logits_out = (dir.path() / "logits.npy").string();
  c.top_logprobs = 3;
  const auto r = run(tok, c);
  const auto ids = r["token_ids"].get<std::vector<int32_t>>();
  ASSERT_EQ(ids.size(), 5u);
  EXPECT_EQ(r["logits_out"]["rows"], 5);

  // Reference logits: the prompt, then each generated token but the last.
  auto ctx = test::context(stories(), test::cpu(1), 128);
  std::vector<std::vector<float>> want;
  want.push_back(ctx->eval(r["prompt_ids"].get<std::vector<int32_t>>()).value());
  for (size_t i = 0; i + 1 < ids.size(); ++i) want.push_back(ctx->eval(std::vector<int32_t>{ids[i]}).value());

  std::ifstream in(c.logits_out, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_GE(bytes.size(), 10u);
  EXPECT_EQ(bytes.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
  const size_t header_len = static_cast<uint8_t>(bytes[8]) | (static_cast<size_t>(static_cast<uint8_t>(bytes[9])) << 8);
  const std::string header = bytes.substr(10, header_len);
  EXPECT_NE(header.find("'descr': '<f4'"), std::string::npos) << header;
  EXPECT_NE(header.find("'shape': (5, 512)"), std::string::npos) << header;
  EXPECT_EQ((10 + header_len) % 64, 0u) << "data aligned as numpy writes it";
  ASSERT_EQ(bytes.size(), 10 + header_len + 5 * 512 * sizeof(float));
  for (size_t row = 0; row < 5; ++row) {
    std::vector<float> got(512);
    std::memcpy(got.data(), bytes.data() + 10 + header_len + row * 512 * sizeof(float), 512 * sizeof(float));
    EXPECT_EQ(got, want[row]) << "row " << row;
  }

  ASSERT_EQ(r["logprobs"].size(), 5u);
  for (size_t k = 0; k < 5; ++k) {
    const auto& e = r["logprobs"][k];
    const std::vector<float>& l = want[k];
    double z = 0;
    for (float v : l) z += std::exp(static_cast<double>(v));
    EXPECT_EQ(e["id"], ids[k]);
    EXPECT_EQ(e["piece"], tok.token_to_piece(ids[k]));
    EXPECT_NEAR(e["logprob"].get<double>(), l[static_cast<size_t>(ids[k])] - std::log(z), 1e-5);
    ASSERT_EQ(e["top"].size(), 3u);
    EXPECT_EQ(e["top"][0]["id"], ids[k]) << "greedy picks the most likely token";
    EXPECT_EQ(e["top"].front()["id"], argmax(l));
    for (size_t j = 1; j < 3; ++j) EXPECT_LE(e["top"][j]["logprob"], e["top"][j - 1]["logprob"]);
  }
  GenerateConfig bad = greedy("x", 1);
  bad.top_logprobs = -1;
  EXPECT_EQ(run_generate(stories(), tok, test::cpu(1), bad).error().code, "bad_param");
  bad = greedy("x", 1);
  bad.logits_out = (dir.path() / "no" / "such" / "dir.npy").string();
  EXPECT_EQ(run_generate(stories(), tok, test::cpu(1), bad).error().code, "io");
}

}  // namespace
}  // namespace kakeya::engine
