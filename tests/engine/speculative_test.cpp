// Speculative decoding: greedy output equals greedy AR for every draft source, stop rules,
// and the stochastic acceptance rule (its output distribution is the target's).
#include "engine/speculative.h"

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/kv_policy.h"
#include "engine/tokenizer.h"
#include "tests/engine/backends.h"
#include "tests/harness/paths.h"

namespace kakeya::engine {
namespace {

using test::model_path;
using test::stories;

std::vector<int32_t> encode(const std::string& text) {
  auto tok = Tokenizer::from_gguf(stories().gguf());
  EXPECT_TRUE(tok.ok());
  return tok->encode(text, true);
}

const std::vector<std::string>& prompts() {
  static const std::vector<std::string> p = {
      "Once upon a time, there was a little girl named Lily.",
      "The cat sat on the mat. The cat sat on the mat. The dog",
      "Tom and his mom went to the park. They saw a big tree.",
  };
  return p;
}

SpecOptions greedy_options(int block, int max_new) {
  SpecOptions o;
  o.block_size = block;
  o.stop.max_new_tokens = max_new;
  return o;
}

struct Case {
  std::string draft;
  int block;
};

class GreedyLossless : public ::testing::TestWithParam<Case> {};

TEST_P(GreedyLossless, SpeculativeEqualsAutoregressive) {
  const Case c = GetParam();
  // The default options: verify blocks below kExactBlockTokens agree with decode (backend.h).
  auto target_ctx = test::context(stories(), test::cpu(2), 0);
  LlamaContext& target = *target_ctx;
  DraftOptions dopt;
  dopt.backend = &test::cpu(1);
  auto draft = make_draft_source(c.draft, target, dopt);
  ASSERT_TRUE(draft.ok()) << draft.error().str();
  size_t drafted = 0, accepted = 0;
  for (const std::string& text : prompts()) {
    const auto prompt = encode(text);
    const SpecOptions o = greedy_options(c.block, 120);
    auto ar = autoregressive_generate(target, prompt, o);
    ASSERT_TRUE(ar.ok()) << ar.error().str();
    auto sp = speculative_generate(target, *draft.value(), prompt, o);
    ASSERT_TRUE(sp.ok()) << sp.error().str();
    ASSERT_EQ(sp->tokens, ar->tokens) << c.draft << " k=" << c.block << " prompt: " << text;
    EXPECT_EQ(sp->stop, ar->stop);
    EXPECT_LE(sp->accepted, sp->drafted);
    // Every committed token beyond the first comes from some target forward: at most k+1 each.
    EXPECT_LE(sp->tokens.size() - 1, sp->target_forwards * static_cast<size_t>(c.block + 1));
    EXPECT_GE(sp->tokens.size() - 1, sp->target_forwards - (sp->stop == StopReason::kLength ? 0 : 1));
    drafted += sp->drafted;
    accepted += sp->accepted;
  }
  EXPECT_GT(drafted, 0u) << c.draft;
  if (c.draft.rfind("quant:q8_0", 0) == 0) {
    // A Q8_0 copy of an F32 model agrees with it on most greedy choices.
    EXPECT_GT(accepted * 2, drafted) << "accepted " << accepted << " of " << drafted;
  }
}

std::vector<Case> cases() {
  std::vector<Case> out;
  for (const std::string& d : std::vector<std::string>{"layers:1", "layers:4", "quant:q8_0", "quant:q4_0", "lookup:3",
                              "gguf:" + model_path("niah-tiny-f32.gguf"),
                              "gguf:" + test::stories_path()}) {
    for (int k : {1, 3, 8}) out.push_back({d, k});
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(AllDrafts, GreedyLossless, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case>& param_info) {
                           const Case& p = param_info.param;
                           std::string name = p.draft.substr(0, p.draft.find(':'));
                           std::string arg = p.draft.substr(p.draft.find(':') + 1);
                           if (name == "gguf") arg = arg.find("niah") != std::string::npos ? "niah" : "self";
                           for (char& ch : arg) if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return name + "_" + arg + "_k" + std::to_string(p.block);
                         });

// Past eviction: a sink+window cache (sink 4, window 32, tail 16 >= the largest rollback of 8)
// with 120 generated tokens evicts long before the end; spec output must still equal AR's.
TEST(Speculative, LosslessPastBoundedCacheEviction) {
  for (const std::string d : {"layers:2", "quant:q8_0", "lookup:2"}) {
    auto target_ctx = test::context(stories(), test::cpu(2, "quantized"), 0);
    LlamaContext& target = *target_ctx;
    KvPolicy policy;
    policy.sink = 4;
    policy.window = 32;
    policy.tail = 16;
    ASSERT_TRUE(apply_kv_policy(target.kv(), policy).ok());
    auto draft = make_draft_source(d, target, {});
    ASSERT_TRUE(draft.ok()) << draft.error().str();
    for (const std::string& text : prompts()) {
      const auto prompt = encode(text);
      for (int k : {3, 8}) {
        const SpecOptions o = greedy_options(k, 120);
        auto ar = autoregressive_generate(target, prompt, o);
        ASSERT_TRUE(ar.ok()) << ar.error().str();
        auto sp = speculative_generate(target, *draft.value(), prompt, o);
        ASSERT_TRUE(sp.ok()) << sp.error().str();
        ASSERT_GT(prompt.size() + ar->tokens.size(), 4u + 32u + 16u + 8u);
        EXPECT_GT(target.kv().truncate_floor(), 0u) << "the cache never evicted";
        EXPECT_EQ(sp->tokens, ar->tokens) << d << " k=" << k << " prompt: " << text;
        EXPECT_GT(sp->drafted, 0u);
      }
    }
  }
}

TEST(Speculative, SelfDraftAcceptsEverything) {
  auto target_ctx = test::context(stories(), test::cpu(1, "quantized"), 0);
  LlamaContext& target = *target_ctx;
  auto draft = make_draft_source("gguf:" + test::stories_path(), target, {});
  ASSERT_TRUE(draft.ok()) << draft.error().str();
  const auto prompt = encode(prompts()[0]);
  for (float temperature : {0.0f, 1.0f}) {
    SpecOptions o = greedy_options(4, 60);
    o.sampling.temperature = temperature;
    o.sampling.seed = 7;
    auto sp = speculative_generate(target, *draft.value(), prompt, o);
    ASSERT_TRUE(sp.ok()) << sp.error().str();
    // Draft logits are bit-identical to the verify rows, so p == q and every draft is accepted.
    EXPECT_GT(sp->drafted, 0u);
    EXPECT_EQ(sp->accepted, sp->drafted) << "temperature " << temperature;
    EXPECT_GT(sp->tokens_per_forward(), 4.0) << "temperature " << temperature;
  }
}

TEST(Speculative, StopsAtContextEndLikeAutoregressive) {
  auto target_ctx = test::context(stories(), test::cpu(1, "quantized"), 40);
  LlamaContext& target = *target_ctx;
  auto draft = make_draft_source("layers:2", target, {});
  ASSERT_TRUE(draft.ok());
  const auto prompt = encode(prompts()[2]);
  const SpecOptions o = greedy_options(8, 1000);
  auto ar = autoregressive_generate(target, prompt, o);
  auto sp = speculative_generate(target, *draft.value(), prompt, o);
  ASSERT_TRUE(ar.ok() && sp.ok());
  EXPECT_EQ(ar->stop, StopReason::kContextFull);
  EXPECT_EQ(sp->stop, StopReason::kContextFull);
  EXPECT_EQ(sp->tokens, ar->tokens);
  EXPECT_EQ(prompt.size() + ar->tokens.size(), 41u);  // 40 in the KV + the last, never evaluated
}

TEST(Speculative, EosEndsGenerationAtTheSameToken) {
  auto target_ctx = test::context(stories(), test::cpu(1, "quantized"), 0);
  LlamaContext& target = *target_ctx;
  const auto prompt = encode(prompts()[0]);
  auto full = autoregressive_generate(target, prompt, greedy_options(4, 40));
  ASSERT_TRUE(full.ok());
  ASSERT_GE(full->tokens.size(), 20u);
  // Pretend the 15th generated token is EOS: output stops just before its first occurrence.
  const int32_t eos = full->tokens[14];
  const size_t first = static_cast<size_t>(
      std::find(full->tokens.begin(), full->tokens.end(), eos) - full->tokens.begin());
  SpecOptions o = greedy_options(4, 40);
  o.stop.eog = {-7, eos};  // any id of the end-of-generation set stops it
  auto draft = make_draft_source("quant:q8_0", target, {});
  ASSERT_TRUE(draft.ok());
  auto ar = autoregressive_generate(target, prompt, o);
  auto sp = speculative_generate(target, *draft.value(), prompt, o);
  ASSERT_TRUE(ar.ok() && sp.ok());
  EXPECT_EQ(ar->stop, StopReason::kEos);
  EXPECT_EQ(sp->stop, StopReason::kEos);
  EXPECT_EQ(ar->tokens, std::vector<int32_t>(full->tokens.begin(), full->tokens.begin() + static_cast<long>(first)));
  EXPECT_EQ(sp->tokens, ar->tokens);
}

TEST(Speculative, SamplingIsSeededAndDrafts) {
  auto target_ctx = test::context(stories(), test::cpu(1, "quantized"), 0);
  LlamaContext& target = *target_ctx;
  auto draft = make_draft_source("layers:3", target, {});
  ASSERT_TRUE(draft.ok());
  const auto prompt = encode(prompts()[1]);
  SpecOptions o = greedy_options(4, 50);
  o.sampling.temperature = 0.8f;
  o.sampling.seed = 1234;
  auto a = speculative_generate(target, *draft.value(), prompt, o);
  auto b = speculative_generate(target, *draft.value(), prompt, o);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->tokens, b->tokens);
  EXPECT_GT(a->drafted, 0u);
  o.sampling.seed = 99;
  auto c = speculative_generate(target, *draft.value(), prompt, o);
  ASSERT_TRUE(c.ok());
  EXPECT_NE(a->tokens, c->tokens);
}

TEST(Speculative, RejectsBadOptions) {
  auto target_ctx = test::context(stories(), test::cpu(1, "quantized"), 0);
  LlamaContext& target = *target_ctx;
  auto draft = make_draft_source("lookup:2", target, {});
  ASSERT_TRUE(draft.ok());
  const auto prompt = encode(prompts()[0]);
  SpecOptions o = greedy_options(0, 10);
  auto r = speculative_generate(target, *draft.value(), prompt, o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, "bad_param");
  r = speculative_generate(target, *draft.value(), std::vector<int32_t>{}, greedy_options(2, 10));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, "bad_param");
}

// The greedy acceptance rule every backend's accept_greedy follows (backend.h).
TEST(GreedyAcceptance, LeadingMatchesThenTheCorrectionOrBonus) {
  const std::vector<int32_t> rows = {7, 3, 9, 4};  // argmax ids of the rows after last, d1, d2, d3
  const auto decide = [&](std::vector<int32_t> drafts) {
    std::vector<int32_t> out(drafts.size() + 2, 99);
    greedy_acceptance(std::span<const int32_t>(rows).first(drafts.size() + 1), drafts, out);
    return out;
  };
  EXPECT_EQ(decide({7, 3, 9}), (std::vector<int32_t>{3, 7, 3, 9, 4})) << "all accepted: the bonus follows";
  EXPECT_EQ(decide({1, 3, 9}), (std::vector<int32_t>{0, 7, -1, -1, -1})) << "none accepted: the correction";
  EXPECT_EQ(decide({7, 3, 8}), (std::vector<int32_t>{2, 7, 3, 9, -1})) << "last rejected";
  EXPECT_EQ(decide({7, 2, 9}), (std::vector<int32_t>{1, 7, 3, -1, -1})) << "a later match after a mismatch counts for nothing";
  EXPECT_EQ(decide({}), (std::vector<int32_t>{0, 7})) << "no drafts: the target's next token";
}

// A verify block longer than n_batch runs in several forward passes and is decided on the host:
// the same outcome as one pass decided on the backend.
TEST(GreedyAcceptance, BlockLongerThanTheBatchDecidesAlike) {
  const auto prompt = encode(prompts()[1]);
  std::vector<std::vector<int32_t>> outcome;
  for (size_t n_batch : {size_t{512}, size_t{2}}) {
    auto ctx = test::context(stories(), test::cpu(2), 0, n_batch);
    ASSERT_NE(ctx, nullptr);
    auto first = ctx->eval_argmax(prompt);
    ASSERT_TRUE(first.ok()) << first.error().str();
    // The block: the prompt's next token, then drafts that are the target's own greedy choices
    // except the fourth.
    std::vector<int32_t> block = {first.value()[0]};
    auto ids = ctx->eval_argmax(block);
    ASSERT_TRUE(ids.ok());
    ctx->truncate(prompt.size());
    block = {first.value()[0], ids.value()[0], 5, 6, 8};
    auto decided = ctx->eval_accept_greedy(block);
    ASSERT_TRUE(decided.ok()) << decided.error().str();
    ASSERT_EQ(decided->size(), block.size() + 1);
    EXPECT_GE(decided.value()[0], 1) << "the first draft is the target's own choice";
    outcome.push_back(decided.value());
  }
  EXPECT_EQ(outcome[0], outcome[1]);
}

TEST(RunawayGuard, DetectsShortRepeatedUnitsOnly) {
  std::vector<int32_t> v = {5, 6, 7};
  for (int i = 0; i < 11; ++i) v.insert(v.end(), {1, 2, 3});
  EXPECT_EQ(runaway_reason(v, 12, 8), "");  // 11 repeats
  v.insert(v.end(), {1, 2, 3});
  EXPECT_EQ(runaway_reason(v, 12, 8), "unit of 3 tokens repeated 12 times");
  std::vector<int32_t> same(12, 9);
  EXPECT_EQ(runaway_reason(same, 12, 8), "unit of 1 token repeated 12 times");
  same[0] = 8;
  EXPECT_EQ(runaway_reason(same, 12, 8), "");
  std::vector<int32_t> long_unit;
  for (int i = 0; i < 12; ++i)
    for (int j = 0; j < 9; ++j) long_unit.push_back(j);
  EXPECT_EQ(runaway_reason(long_unit, 12, 8), "");  // a 9-token unit is not a runaway
}

TEST(SpeculativeAccept, OutputIsDistributedLikeTheTarget) {
  const std::vector<float> p = {0.5f, 0.3f, 0.15f, 0.05f};
  const std::vector<float> q = {0.1f, 0.2f, 0.3f, 0.4f};
  Sampler draft_sampler(SamplingParams{1.0f, 0, 1.0f, 11});
  Sampler sampler(SamplingParams{1.0f, 0, 1.0f, 12});
  std::vector<double> counts(4, 0.0);
  size_t accepted = 0;
  const int n = 200000;
  for (int i = 0; i < n; ++i) {
    const int32_t x = draft_sampler.sample_from(q);
    const AcceptDecision d = speculative_accept(p, q, x, sampler);
    counts[static_cast<size_t>(d.token)] += 1;
    accepted += d.accepted;
  }
  for (size_t i = 0; i < 4; ++i) EXPECT_NEAR(counts[i] / n, p[i], 0.006) << "token " << i;
  // Acceptance rate = sum_x min(p(x), q(x)) = 0.1 + 0.2 + 0.15 + 0.05 = 0.5.
  EXPECT_NEAR(static_cast<double>(accepted) / n, 0.5, 0.006);
}

TEST(SpeculativeAccept, OneHotDraftAcceptsWithProbabilityP) {
  const std::vector<float> p = {0.2f, 0.7f, 0.1f};
  Sampler sampler(SamplingParams{1.0f, 0, 1.0f, 3});
  std::vector<double> counts(3, 0.0);
  const int n = 100000;
  for (int i = 0; i < n; ++i) counts[static_cast<size_t>(speculative_accept(p, {}, 1, sampler).token)] += 1;
  for (size_t i = 0; i < 3; ++i) EXPECT_NEAR(counts[i] / n, p[i], 0.006);
}

}  // namespace
}  // namespace kakeya::engine
