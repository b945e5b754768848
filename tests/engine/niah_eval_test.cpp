// niah-eval on niah-tiny: models/niah-tiny.md table A cells (seed 0, 20 lines) and the report's
// shape as the evidence gate reads it.
#include "engine/presets/niah_eval.h"

#include <gtest/gtest.h>

#include "bridge/gate.h"
#include "engine/presets/kv_calibrate.h"
#include "engine/presets/niah.h"
#include "tests/engine/backends.h"
#include "tests/harness/paths.h"

namespace kakeya::engine {
namespace {

struct Fixture {
  LlamaModel model;
  Tokenizer tok;
};

const Fixture& niah_tiny() {
  static Fixture* f = [] {
    auto m = LlamaModel::load((testing::models_dir() / "niah-tiny-f32.gguf").string());
    EXPECT_TRUE(m.ok());
    auto t = Tokenizer::from_gguf(m->gguf());
    EXPECT_TRUE(t.ok());
    return new Fixture{std::move(m).value(), std::move(t).value()};
  }();
  return *f;
}

KvPolicy sink_window(std::vector<int> exact_layers, int kv_bits = 32) {
  KvPolicy p;
  p.sink = 4;
  p.window = 64;
  p.exact_layers = std::move(exact_layers);
  p.kv_bits = kv_bits;
  return p;
}

std::vector<std::string> codes(const bridge::GateVerdict& v) {
  std::vector<std::string> out;
  for (const auto& x : v.evidence_violations) out.push_back(x.code);
  return out;
}

double arm_recall(const nlohmann::json& r, const std::string& name) {
  for (const auto& a : r["arms"])
    if (a["name"] == name) return a["aggregates"]["recall"].get<double>();
  ADD_FAILURE() << "no arm " << name;
  return -1;
}

// Table A, 20 lines, first 5 samples: full 1.00, sink4+window64 0.00, L1+L3 exact 1.00 — and the
// L1+L3 8-bit policy keeps full recall at >= 4x smaller measured resident KV; the gate passes it
// and fails the sink+window arm on RECALL_DELTA.
TEST(NiahEval, TableACellsAndGate) {
  NiahEvalConfig cfg;
  cfg.lines = {20};
  cfg.samples = 5;
  cfg.arms = {{"full", "oracle", KvPolicy{}},
              {"sw", "candidate", sink_window({})},
              {"l13", "candidate", sink_window({1, 3})},
              {"l13q8", "candidate", sink_window({1, 3}, 8)}};
  auto r = run_niah_eval(niah_tiny().model, niah_tiny().tok, test::cpu(1), cfg);
  ASSERT_TRUE(r.ok()) << r.error().str();
  EXPECT_EQ((*r)["kind"], "niah-eval");
  EXPECT_DOUBLE_EQ(arm_recall(*r, "full@20"), 1.0);
  EXPECT_DOUBLE_EQ(arm_recall(*r, "sw@20"), 0.0);
  EXPECT_DOUBLE_EQ(arm_recall(*r, "l13@20"), 1.0);
  EXPECT_DOUBLE_EQ(arm_recall(*r, "l13q8@20"), 1.0);
  double ratio_q8 = 0, ratio_l13 = 0;
  for (const auto& c : (*r)["comparisons"]) {
    if (c["metric"] != "resident_kv_bytes") continue;
    if (c["candidate"] == "l13q8@20") ratio_q8 = c["ratio"];
    if (c["candidate"] == "l13@20") ratio_l13 = c["ratio"];
  }
  EXPECT_GE(ratio_q8, 4.0);
  EXPECT_GT(ratio_l13, 1.5);
  for (const auto& a : (*r)["arms"]) {
    ASSERT_EQ(a["samples"].size(), 5u);
    for (const auto& s : a["samples"]) {
      EXPECT_GT(s["resident_kv_bytes"].get<size_t>(), 0u);
      EXPECT_EQ(s["decode_tokens"], 16);
    }
    // Measured never exceeds the analytical bound.
    EXPECT_LE(a["aggregates"]["resident_kv_bytes_median"].get<double>(),
              a["aggregates"]["analytical_bound_bytes"]["bytes"].get<double>());
  }
  const auto verdict = bridge::evaluate_gate(*r, {});
  const auto c = codes(verdict);
  EXPECT_EQ(std::count(c.begin(), c.end(), "RECALL_DELTA"), 1) << verdict.to_json().dump();
  EXPECT_EQ(c.size(), 1u) << verdict.to_json().dump();

  // Without the failing arm the report passes the gate.
  cfg.arms.erase(cfg.arms.begin() + 1);
  auto ok = run_niah_eval(niah_tiny().model, niah_tiny().tok, test::cpu(1), cfg);
  ASSERT_TRUE(ok.ok());
  EXPECT_TRUE(bridge::evaluate_gate(*ok, {}).passed) << bridge::evaluate_gate(*ok, {}).to_json().dump();
}

// Table A cell "sink+window, L1 exact" at 20 lines: 0.52 over the 50 samples of seed 0.
TEST(NiahEval, TableAL1ExactCell) {
  const auto samples = generate_niah(0, 20, 20, 50);
  auto owned = test::context(niah_tiny().model, test::cpu(2), 0, 64);
  LlamaContext& ctx = *owned;
  int hits = 0;
  for (const NiahSample& s : samples) {
    auto run = run_greedy(ctx, sink_window({1}), niah_tiny().tok.encode(s.prompt, true), 16);
    ASSERT_TRUE(run.ok());
    hits += niah_recalled(niah_tiny().tok.decode(run->ids), s.answer) ? 1 : 0;
  }
  EXPECT_EQ(hits, 26);  // 0.52
}

TEST(NiahEval, NeedlelessWorkloadReportsNullRecallAndNoClaims) {
  NiahEvalConfig cfg;
  cfg.lines = {8};
  cfg.samples = 5;
  cfg.decode_tokens = 4;
  cfg.with_needle = false;
  cfg.arms = {{"full", "oracle", KvPolicy{}}, {"l1", "candidate", sink_window({1})}};
  auto r = run_niah_eval(niah_tiny().model, niah_tiny().tok, test::cpu(1), cfg);
  ASSERT_TRUE(r.ok());
  for (const auto& a : (*r)["arms"]) {
    EXPECT_TRUE(a["aggregates"]["recall"].is_null());
    for (const auto& s : a["samples"]) EXPECT_TRUE(s["recall"].is_null());
  }
  for (const auto& c : (*r)["comparisons"]) EXPECT_FALSE(c.contains("claim"));
  EXPECT_TRUE(bridge::evaluate_gate(*r, {}).passed);
}

// Recall is judged on what the model wrote before ending its turn (generate's stop rule).
TEST(NiahEval, ContinuationEndsAtTheFirstEndOfGenerationToken) {
  const Tokenizer& tok = niah_tiny().tok;
  std::vector<int32_t> ids = tok.encode(" MAPLE-7890 is it", false);
  const std::string before = tok.decode(ids);
  ids.push_back(tok.eos());
  const std::vector<int32_t> after = tok.encode(" IOTA-8961", false);
  ids.insert(ids.end(), after.begin(), after.end());
  EXPECT_EQ(niah_continuation(tok, ids), before);
  EXPECT_TRUE(niah_recalled(niah_continuation(tok, ids), "MAPLE-7890"));
  EXPECT_FALSE(niah_recalled(niah_continuation(tok, ids), "IOTA-8961"));
  EXPECT_EQ(niah_continuation(tok, after), tok.decode(after)) << "no end-of-generation token: all of it";
}

TEST(NiahEval, RejectsConfigWithoutOracle) {
  NiahEvalConfig cfg;
  cfg.arms = {{"sw", "candidate", sink_window({})}};
  auto r = run_niah_eval(niah_tiny().model, niah_tiny().tok, test::cpu(1), cfg);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, "bad_param");
}

}  // namespace
}  // namespace kakeya::engine

namespace kakeya::engine {
namespace {

// kv-calibrate ranks layer 1 first on niah-tiny (models/niah-tiny.md: only layer 1 helps alone)
// and its selected layers recover the full cache's answer score.
TEST(KvCalibrate, RanksLayerOneFirstOnNiahTiny) {
  KvCalibrateConfig cfg;
  cfg.seed = 1;
  cfg.samples = 2;
  cfg.base = sink_window({});
  cfg.heads = false;
  cfg.budget = 3;
  cfg.target_gap = 0.1;
  auto c = kv_calibrate(niah_tiny().model, niah_tiny().tok, test::cpu(1), cfg);
  ASSERT_TRUE(c.ok()) << c.error().str();
  ASSERT_EQ(c->layer_alone.size(), 4u);
  EXPECT_EQ(std::max_element(c->layer_alone.begin(), c->layer_alone.end()) - c->layer_alone.begin(), 1);
  EXPECT_LT(c->bounded_score, c->full_score - 1.0);
  ASSERT_FALSE(c->steps.empty());
  EXPECT_EQ(c->steps[0].first.first, 1);
  EXPECT_NE(std::find(c->policy.exact_layers.begin(), c->policy.exact_layers.end(), 3),
            c->policy.exact_layers.end());
  // The written policy is what niah-eval accepts.
  auto round = kv_policy_from_json(to_json(c->policy));
  ASSERT_TRUE(round.ok());
  EXPECT_EQ(round->exact_layers, c->policy.exact_layers);
}

}  // namespace
}  // namespace kakeya::engine
