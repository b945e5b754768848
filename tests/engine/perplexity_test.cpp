// perplexity (presets/perplexity.h): the chunking rule and figures of llama.cpp's llama-perplexity
// (tests/data/perplexity/llama-perplexity.json, printed by llama.cpp c392e50 on a short story),
// and the value recomputed here from the engine's own logits.
#include "engine/presets/perplexity.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bridge/gate.h"
#include "bridge/report_envelope.h"
#include "engine/llama.h"
#include "engine/tokenizer.h"
#include "tests/engine/backends.h"
#include "tests/harness/paths.h"

namespace kakeya::engine {
namespace {

using nlohmann::json;

std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  EXPECT_TRUE(in.good()) << p;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct Stories {
  LlamaModel model;
  Tokenizer tok;
};
const Stories& stories_with_tokenizer() {
  static const Stories s = [] {
    auto m = LlamaModel::load(test::stories_path());
    EXPECT_TRUE(m.ok());
    auto t = Tokenizer::from_gguf(m->gguf());
    EXPECT_TRUE(t.ok());
    return Stories{std::move(m).value(), std::move(t).value()};
  }();
  return s;
}

// As kakeya-engine perplexity -f reads it (one trailing newline dropped, like llama.cpp's -f).
std::string story() {
  auto text = read_text_file((testing::data_dir() / "perplexity" / "story.txt").string());
  EXPECT_TRUE(text.ok());
  return text.ok() ? *text : std::string();
}
json llama_runs() { return json::parse(read_file(testing::data_dir() / "perplexity" / "llama-perplexity.json")); }

TEST(Perplexity, PlanFollowsLlamaPerplexitysChunking) {
  auto p = plan_perplexity(857, 64, 0);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->n_chunk, 13u);  // 857 / 64, the 25-token tail unused
  EXPECT_EQ(p->first, 32u);
  EXPECT_EQ(p->scored_per_chunk, 31u);  // positions 32 .. 62 predict tokens 33 .. 63
  p = plan_perplexity(857, 99, 0);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->n_chunk, 8u);
  EXPECT_EQ(p->first, 49u);
  EXPECT_EQ(p->scored_per_chunk, 49u);
  EXPECT_EQ(plan_perplexity(857, 128, 3)->n_chunk, 3u);
  EXPECT_EQ(plan_perplexity(857, 128, 99)->n_chunk, 6u) << "--chunks only caps";
  EXPECT_EQ(plan_perplexity(1024, 512, 0)->n_chunk, 2u) << "exactly 2·n_ctx is enough";
  const auto few = plan_perplexity(857, 512, 0);
  ASSERT_FALSE(few.ok());
  EXPECT_EQ(few.error().code, "out_of_range");
  EXPECT_NE(few.error().message.find("857"), std::string::npos) << few.error().message;
  EXPECT_NE(few.error().message.find("1024"), std::string::npos) << few.error().message;
  EXPECT_EQ(plan_perplexity(1000, 2, 0).error().code, "bad_param");
  EXPECT_EQ(plan_perplexity(1000, 64, -1).error().code, "bad_param");
}

TEST(Perplexity, ReadTextFileDropsOneTrailingNewlineLikeLlamaCpp) {
  testing::TempDir dir;
  for (const auto& [content, want] : std::vector<std::pair<std::string, std::string>>{
           {"abc\n\n", "abc\n"}, {"abc\n", "abc"}, {"abc", "abc"}, {"", ""}, {"\r\n", "\r"}}) {
    const auto p = dir.path() / "t.txt";
    std::ofstream(p, std::ios::binary) << content;
    auto got = read_text_file(p.string());
    ASSERT_TRUE(got.ok());
    EXPECT_EQ(*got, want);
  }
  EXPECT_EQ(read_text_file((dir.path() / "missing.txt").string()).error().code, "io");
}

TEST(Perplexity, TokenNllIsMinusLogSoftmax) {
  const std::vector<float> logits = {0.0f, std::log(3.0f), -100.0f};
  EXPECT_NEAR(token_nll(logits, 1), std::log(4.0 / 3.0), 1e-6);
  EXPECT_NEAR(token_nll(logits, 0), std::log(4.0), 1e-6);
  const std::vector<float> shifted = {1000.0f, 1000.0f + std::log(3.0f), 900.0f};  // no overflow
  EXPECT_NEAR(token_nll(shifted, 1), std::log(4.0 / 3.0), 1e-4);
}

// The same figures llama-perplexity printed: number of chunks, the running estimate after each
// chunk, the final PPL and its ± term (4 and 5 decimals as printed).
TEST(Perplexity, MatchesLlamaPerplexityOnAShortStory) {
  const Stories& s = stories_with_tokenizer();
  const std::string text = story();
  const json ref = llama_runs();
  EXPECT_EQ(s.tok.tokenize(text, true, false).size(), ref["tokens"].get<size_t>());
  for (const json& run : ref["runs"]) {
    SCOPED_TRACE(run["args"].get<std::string>());
    PerplexityConfig c;
    c.n_ctx = run["n_ctx"].get<size_t>();
    c.chunks = run["chunks"].get<int>();
    c.n_batch = 512;
    auto r = run_perplexity(s.model, s.tok, test::cpu(2), text, c);
    ASSERT_TRUE(r.ok()) << r.error().str();
    EXPECT_EQ((*r)["tokens"], ref["tokens"]);
    EXPECT_EQ((*r)["n_chunk"], run["n_chunk"]);
    const auto want = run["running_ppl"].get<std::vector<double>>();
    ASSERT_EQ((*r)["chunks"].size(), want.size());
    for (size_t i = 0; i < want.size(); ++i)
      EXPECT_NEAR((*r)["chunks"][i]["ppl_running"].get<double>(), want[i], 6e-5) << "chunk " << i + 1;
    EXPECT_NEAR((*r)["aggregates"]["ppl"].get<double>(), run["ppl"].get<double>(), 6e-5);
    EXPECT_NEAR((*r)["aggregates"]["ppl_stderr"].get<double>(), run["ppl_stderr"].get<double>(), 6e-6);
    EXPECT_EQ((*r)["aggregates"]["scored_tokens"], run["n_chunk"].get<size_t>() * (c.n_ctx - 1 - c.n_ctx / 2));
    EXPECT_EQ((*r)["kind"], "perplexity");
    EXPECT_EQ((*r)["engine"]["backend"], "cpu");
    // The runner reads its envelope and gates it (PROVENANCE) like every other report.
    EXPECT_TRUE(bridge::read_report_envelope(*r).ok());
    const bridge::GateVerdict v = bridge::evaluate_gate(*r, {});
    EXPECT_TRUE(v.passed) << v.to_json().dump();
    EXPECT_NE(std::find(v.rules_checked.begin(), v.rules_checked.end(), "PROVENANCE"), v.rules_checked.end());
  }
  PerplexityConfig big;
  big.n_ctx = ref["refused"]["n_ctx"].get<size_t>();
  auto refused = run_perplexity(s.model, s.tok, test::cpu(2), text, big);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, "out_of_range");
}

// The figure recomputed here from the engine's logits of whole chunks (one eval each, every row
// read back), with the log-softmax in double: the preset's split evaluation (context half
// without logits, the last token never evaluated) and its arithmetic give the same value.
TEST(Perplexity, EqualsTheValueRecomputedFromTheEnginesLogits) {
  const Stories& s = stories_with_tokenizer();
  const std::string text = story();
  const size_t n_ctx = 64;
  PerplexityConfig c;
  c.n_ctx = n_ctx;
  c.n_batch = 16;  // a chunk in several forward passes
  auto r = run_perplexity(s.model, s.tok, test::cpu(1, "quantized"), text, c);
  ASSERT_TRUE(r.ok()) << r.error().str();

  const std::vector<int32_t> tokens = s.tok.tokenize(text, true, false);
  const size_t n_vocab = static_cast<size_t>(s.model.hparams().n_vocab);
  auto ctx = test::context(s.model, test::cpu(1, "quantized"), n_ctx);
  double sum = 0;
  size_t count = 0;
  for (size_t start = 0; start + n_ctx <= tokens.size(); start += n_ctx) {
    std::vector<int32_t> chunk(tokens.begin() + static_cast<long>(start),
                               tokens.begin() + static_cast<long>(start + n_ctx));
    chunk[0] = s.tok.bos();
    ctx->truncate(0);
    auto logits = ctx->eval(chunk, true);
    ASSERT_TRUE(logits.ok());
    for (size_t pos = n_ctx / 2; pos + 1 < n_ctx; ++pos) {
      const float* row = logits->data() + pos * n_vocab;
      double mx = row[0], z = 0;
      for (size_t i = 0; i < n_vocab; ++i) mx = std::max(mx, static_cast<double>(row[i]));
      for (size_t i = 0; i < n_vocab; ++i) z += std::exp(static_cast<double>(row[i]) - mx);
      sum += std::log(z) + mx - row[tokens[start + pos + 1]];
      ++count;
    }
  }
  EXPECT_EQ(count, 13u * 31u);
  const double ppl = std::exp(sum / static_cast<double>(count));
  EXPECT_NEAR((*r)["aggregates"]["ppl"].get<double>(), ppl, 1e-6 * ppl);
  EXPECT_NEAR((*r)["aggregates"]["nll_mean"].get<double>(), sum / static_cast<double>(count), 1e-7);
  // Each chunk's own figure too: the first chunk.
  double first = 0;
  {
    std::vector<int32_t> chunk(tokens.begin(), tokens.begin() + static_cast<long>(n_ctx));
    chunk[0] = s.tok.bos();
    ctx->truncate(0);
    auto logits = ctx->eval(chunk, true);
    ASSERT_TRUE(logits.ok());
    for (size_t pos = n_ctx / 2; pos + 1 < n_ctx; ++pos)
      first += token_nll(std::span<const float>(logits->data() + pos * n_vocab, n_vocab), tokens[pos + 1]);
  }
  EXPECT_NEAR((*r)["chunks"][0]["nll_mean"].get<double>(), first / 31.0, 1e-9);
}

}  // namespace
}  // namespace kakeya::engine
