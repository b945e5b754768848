// Evidence gate: each rule passes on a valid fixture and trips on exactly one mutation
// (tests/data/gate/, docs/evidence-gate.md).
#include "bridge/gate.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "tests/harness/paths.h"

namespace kakeya::bridge {
namespace {

using nlohmann::json;
using Ptr = json::json_pointer;

json fixture(const std::string& name) {
  std::ifstream f(kakeya::testing::data_dir() / "gate" / name);
  EXPECT_TRUE(f.good()) << name;
  return json::parse(f);
}

std::vector<std::string> codes(const GateVerdict& v) {
  std::vector<std::string> c;
  for (const auto& x : v.evidence_violations) c.push_back(x.code);
  return c;
}

// Distinct codes in order of first appearance (a rule may flag several samples).
std::vector<std::string> distinct_codes(const GateVerdict& v) {
  std::vector<std::string> c;
  for (const auto& x : v.evidence_violations) {
    if (std::find(c.begin(), c.end(), x.code) == c.end()) c.push_back(x.code);
  }
  return c;
}

std::string describe(const GateVerdict& v) { return v.to_json().dump(1); }

struct Case {
  std::string name;
  std::string fixture;
  std::string rule;
  std::function<void(json&)> mutate;
};

std::vector<Case> tripping_cases() {
  return {
      {"samples_four", "specdecode-bench.json", "SAMPLES",
       [](json& r) { r[Ptr("/arms/1/samples")].erase(4); }},
      {"samples_no_arms", "niah-eval.json", "SAMPLES",
       [](json& r) {
         r["arms"] = json::array();
         r["comparisons"] = json::array();
       }},
      {"decode_tokens_short", "specdecode-bench.json", "DECODE_TOKENS",
       [](json& r) {
         for (auto& s : r[Ptr("/arms/0/samples")]) s["decode_tokens"] = 16;
       }},
      {"warmup_missing", "specdecode-bench.json", "WARMUP", [](json& r) { r.erase("warmup"); }},
      {"warmup_not_done", "specdecode-bench.json", "WARMUP",
       [](json& r) { r[Ptr("/warmup/done")] = false; }},
      {"warmup_timed", "specdecode-bench.json", "WARMUP",
       [](json& r) { r[Ptr("/warmup/timed")] = true; }},
      {"warmup_prompt_reused", "specdecode-bench.json", "WARMUP",
       [](json& r) { r[Ptr("/warmup/prompt_id")] = "p2"; }},
      {"self_comparison_same_arm", "specdecode-bench.json", "SELF_COMPARISON",
       [](json& r) { r[Ptr("/comparisons/0/candidate")] = "ar"; }},
      {"self_comparison_same_config", "specdecode-bench.json", "SELF_COMPARISON",
       [](json& r) { r[Ptr("/arms/1/config")] = r[Ptr("/arms/0/config")]; }},
      {"timing_scope_differs", "specdecode-bench.json", "TIMING_SCOPE_MISMATCH",
       [](json& r) { r[Ptr("/arms/1/timing_scope")] = "e2e"; }},
      {"timing_scope_missing", "specdecode-bench.json", "TIMING_SCOPE_MISMATCH",
       [](json& r) { r[Ptr("/arms/0")].erase("timing_scope"); }},
      {"timing_scope_metric", "specdecode-bench.json", "TIMING_SCOPE_MISMATCH",
       [](json& r) { r[Ptr("/comparisons/0/metric")] = "e2e_tok_s_median"; }},
      {"prefill_variance", "specdecode-bench.json", "PREFILL_VARIANCE",
       [](json& r) { r[Ptr("/arms/1/samples/3/prefill_s")] = 0.05; }},
      {"prefill_zero", "specdecode-bench.json", "PREFILL_VARIANCE",
       [](json& r) { r[Ptr("/arms/0/samples/0/prefill_s")] = 0.0; }},
      {"recall_delta", "niah-eval.json", "RECALL_DELTA",
       [](json& r) {
         r[Ptr("/arms/1/samples/0/recall")] = false;
         r[Ptr("/arms/1/samples/3/recall")] = false;
         r[Ptr("/arms/1/aggregates/recall")] = 0.6;
       }},
      {"recall_delta_no_oracle", "niah-eval.json", "RECALL_DELTA",
       [](json& r) { r[Ptr("/arms/0/role")] = "baseline"; }},
      {"recall_delta_unmeasured", "niah-eval.json", "RECALL_DELTA",
       [](json& r) {
         for (auto& s : r[Ptr("/arms/1/samples")]) s.erase("recall");
         r[Ptr("/arms/1/aggregates")].erase("recall");
       }},
      {"recall_not_applicable_sample", "niah-eval.json", "RECALL_NOT_APPLICABLE",
       [](json& r) { r[Ptr("/arms/2/samples/1/recall")] = false; }},
      {"recall_not_applicable_aggregate", "niah-eval.json", "RECALL_NOT_APPLICABLE",
       [](json& r) { r[Ptr("/arms/2/aggregates/recall")] = 0.0; }},
      {"recall_in_speed_bench", "specdecode-bench.json", "RECALL_NOT_APPLICABLE",
       [](json& r) { r[Ptr("/arms/0/samples/0/recall")] = true; }},
      {"memory_flag_false", "niah-eval.json", "MEMORY_UNMEASURED",
       [](json& r) { r[Ptr("/arms/1/aggregates/resident_kv_bytes_measured")] = false; }},
      {"memory_sample_missing", "niah-eval.json", "MEMORY_UNMEASURED",
       [](json& r) { r[Ptr("/arms/0/samples/2")].erase("resident_kv_bytes"); }},
      {"not_lossless", "specdecode-bench.json", "NOT_LOSSLESS",
       [](json& r) { r[Ptr("/lossless/equal")] = false; }},
      {"lossless_unchecked", "specdecode-bench.json", "NOT_LOSSLESS",
       [](json& r) { r.erase("lossless"); }},
      {"spec_zero_blocks", "specdecode-bench.json", "SPEC_NEVER_RAN",
       [](json& r) { r[Ptr("/arms/1/aggregates/draft_blocks")] = 0; }},
      {"spec_nothing_drafted", "specdecode-bench.json", "SPEC_NEVER_RAN",
       [](json& r) {
         for (auto& s : r[Ptr("/arms/1/samples")]) s["drafted"] = 0;
       }},
      {"spec_no_candidate", "specdecode-bench.json", "SPEC_NEVER_RAN",
       [](json& r) { r[Ptr("/arms/1/role")] = "baseline"; }},
      {"silent_fallback", "specdecode-bench.json", "SILENT_FALLBACK",
       [](json& r) { r[Ptr("/arms/1/backend_requested")] = "vulkan"; }},
      {"backend_used_missing", "niah-eval.json", "SILENT_FALLBACK",
       [](json& r) { r[Ptr("/arms/2")].erase("backend_used"); }},
      {"degenerate_lines", "specdecode-bench.json", "OUTPUT_DEGENERATE",
       [](json& r) {
         std::string t = "Once upon a time.\n";
         for (int i = 0; i < 8; ++i) t += "The end.\n";
         r[Ptr("/arms/1/samples/2/text")] = t + "Bye";
       }},
      {"degenerate_tail", "specdecode-bench.json", "OUTPUT_DEGENERATE",
       [](json& r) { r[Ptr("/arms/0/samples/4/text")] = "She said ha ha ha ha ha ha ha ha ha"; }},
      {"provenance_sha_missing", "specdecode-bench.json", "PROVENANCE",
       [](json& r) { r[Ptr("/model")].erase("sha256"); }},
      {"provenance_sha_bad", "niah-eval.json", "PROVENANCE",
       [](json& r) { r[Ptr("/model/sha256")] = "abc"; }},
      {"provenance_version_empty", "specdecode-bench.json", "PROVENANCE",
       [](json& r) { r[Ptr("/engine/version")] = ""; }},
      {"provenance_env_probe", "env-probe.json", "PROVENANCE", [](json& r) { r.erase("engine"); }},
      {"shape_schema_version", "specdecode-bench.json", "REPORT_SHAPE",
       [](json& r) { r["schema_version"] = 2; }},
      {"shape_unknown_arm", "specdecode-bench.json", "REPORT_SHAPE",
       [](json& r) { r[Ptr("/comparisons/0/candidate")] = "nope"; }},
      {"shape_duplicate_arm", "niah-eval.json", "REPORT_SHAPE",
       [](json& r) { r[Ptr("/arms/2/name")] = "sink4-win64-L1L3"; }},
  };
}

TEST(Gate, FixturesPassEveryRuleOfTheirKind) {
  for (const std::string name : {"specdecode-bench.json", "niah-eval.json", "env-probe.json"}) {
    const GateVerdict v = evaluate_gate(fixture(name), {});
    EXPECT_TRUE(v.passed) << name << ": " << describe(v);
    EXPECT_TRUE(v.evidence_violations.empty()) << name;
  }
}

TEST(Gate, EachRulePassesOnItsOwnWhenExplicitlySelected) {
  for (const auto& c : tripping_cases()) {
    const GateVerdict v = evaluate_gate(fixture(c.fixture), {c.rule});
    EXPECT_TRUE(v.passed) << c.name << ": " << describe(v);
    EXPECT_NE(std::find(v.rules_checked.begin(), v.rules_checked.end(), c.rule), v.rules_checked.end());
  }
}

TEST(Gate, EachMutationTripsExactlyItsRule) {
  for (const auto& c : tripping_cases()) {
    json report = fixture(c.fixture);
    c.mutate(report);
    const GateVerdict v = evaluate_gate(report, {});
    EXPECT_FALSE(v.passed) << c.name;
    EXPECT_EQ(distinct_codes(v), std::vector<std::string>{c.rule}) << c.name << ": " << describe(v);
    for (const auto& x : v.evidence_violations) {
      EXPECT_FALSE(x.message.empty()) << c.name;
    }
  }
}

TEST(Gate, EveryRuleHasATrippingCase) {
  std::vector<std::string> covered;
  for (const auto& c : tripping_cases()) covered.push_back(c.rule);
  for (const auto& rule : all_gate_rules()) {
    EXPECT_NE(std::find(covered.begin(), covered.end(), rule), covered.end()) << rule;
  }
}

TEST(Gate, ViolationPathsPointIntoTheReport) {
  json report = fixture("specdecode-bench.json");
  report[Ptr("/arms/1/samples/3/prefill_s")] = 0.05;
  report[Ptr("/arms/1/backend_requested")] = "vulkan";
  const GateVerdict v = evaluate_gate(report, {});
  ASSERT_EQ(codes(v), (std::vector<std::string>{"PREFILL_VARIANCE", "SILENT_FALLBACK"}));
  EXPECT_EQ(v.evidence_violations[0].path, "/arms/1/samples");
  EXPECT_EQ(v.evidence_violations[1].path, "/arms/1/backend_used");
  EXPECT_NE(v.evidence_violations[1].message.find("vulkan"), std::string::npos);
  for (const auto& x : v.evidence_violations) EXPECT_TRUE(report.contains(Ptr(x.path))) << x.path;
}

TEST(Gate, KindSelectsRules) {
  const GateVerdict env = evaluate_gate(fixture("env-probe.json"), {});
  EXPECT_EQ(env.rules_checked, (std::vector<std::string>{"REPORT_SHAPE", "PROVENANCE"}));
  EXPECT_EQ(env.rules_checked.size() + env.rules_skipped.size(), all_gate_rules().size());

  json gen = fixture("env-probe.json");
  gen["kind"] = "generate";
  const GateVerdict g = evaluate_gate(gen, {});  // generate needs a model hash
  EXPECT_EQ(codes(g), std::vector<std::string>{"PROVENANCE"});

  // A speed-bench rule does not apply to a recall evaluation.
  json niah = fixture("niah-eval.json");
  niah.erase("warmup");
  EXPECT_TRUE(evaluate_gate(niah, {}).passed);
  EXPECT_EQ(codes(evaluate_gate(niah, {"WARMUP"})), std::vector<std::string>{"WARMUP"});

  const auto spec_rules = gate_rules_for_kind("specdecode-bench");
  EXPECT_EQ(spec_rules.size(), 14u);  // everything but RECALL_DELTA
  EXPECT_EQ(std::find(spec_rules.begin(), spec_rules.end(), "RECALL_DELTA"), spec_rules.end());
}

TEST(Gate, UnknownRuleAndKindFailClosed) {
  const GateVerdict v = evaluate_gate(fixture("env-probe.json"), {"NO_SUCH_RULE"});
  EXPECT_EQ(codes(v), std::vector<std::string>{"UNKNOWN_RULE"});

  json r = fixture("env-probe.json");
  r["kind"] = "mystery";
  const GateVerdict u = evaluate_gate(r, {});
  EXPECT_FALSE(u.passed);
  EXPECT_EQ(u.evidence_violations.front().code, "REPORT_SHAPE");
  EXPECT_EQ(u.rules_checked, all_gate_rules());

  const GateVerdict not_object = evaluate_gate(json::array({1, 2}), {});
  EXPECT_FALSE(not_object.passed);
  EXPECT_EQ(not_object.evidence_violations.front().code, "REPORT_SHAPE");
}

TEST(Gate, WrongJsonTypesDoNotThrow) {
  json r = fixture("specdecode-bench.json");
  r["warmup"] = "yes";
  r[Ptr("/arms/0/samples/0")] = 7;
  r[Ptr("/arms/1/aggregates")] = json::array();
  r["lossless"] = nullptr;
  GateVerdict v;
  EXPECT_NO_THROW(v = evaluate_gate(r, {}));
  EXPECT_FALSE(v.passed);
}

TEST(Gate, StochasticSpeculativeRunNeedsNoLosslessCheck) {
  json r = fixture("specdecode-bench.json");
  r[Ptr("/config/temperature")] = 0.8;
  r.erase("lossless");
  EXPECT_TRUE(evaluate_gate(r, {}).passed) << describe(evaluate_gate(r, {}));
}

TEST(Gate, AutoBackendMayResolveToAnyBackend) {
  json r = fixture("specdecode-bench.json");
  r[Ptr("/arms/0/backend_requested")] = "auto";
  r[Ptr("/arms/0/backend_used")] = "vulkan";
  EXPECT_TRUE(evaluate_gate(r, {}).passed);
}

TEST(Gate, ToJsonShape) {
  json r = fixture("specdecode-bench.json");
  r[Ptr("/lossless/equal")] = false;
  const json j = evaluate_gate(r, {}).to_json();
  EXPECT_EQ(j.at("passed"), false);
  ASSERT_EQ(j.at("evidence_violations").size(), 1u);
  EXPECT_EQ(j.at("evidence_violations")[0].at("code"), "NOT_LOSSLESS");
  EXPECT_EQ(j.at("evidence_violations")[0].at("path"), "/lossless/equal");
  EXPECT_TRUE(j.at("rules_checked").is_array());
  EXPECT_TRUE(j.at("rules_skipped").is_array());
}

TEST(GateDegenerate, RepeatedShortLines) {
  std::string t;
  for (int i = 0; i < 7; ++i) t += "Lily smiled.\n";
  EXPECT_FALSE(output_degenerate_reason(t + "The end").has_value());
  t += "  Lily smiled.\r\n";  // trimmed: the eighth copy
  EXPECT_TRUE(output_degenerate_reason(t + "The end").has_value());
  // Long lines (> 40 bytes) may repeat: a haystack is not degenerate output.
  std::string longer;
  for (int i = 0; i < 10; ++i) longer += "this paragraph is unrelated padding and does not contain it\n";
  EXPECT_FALSE(output_degenerate_reason(longer + "x").has_value());
  // Blank lines do not count.
  EXPECT_FALSE(output_degenerate_reason(std::string(20, '\n') + "ok").has_value());
}

TEST(GateDegenerate, RepeatedTailUnit) {
  EXPECT_TRUE(output_degenerate_reason("wait!!!!!!!!").has_value());               // 8 x "!"
  EXPECT_FALSE(output_degenerate_reason("wait!!!!!!!").has_value());               // 7 x "!"
  EXPECT_TRUE(output_degenerate_reason("x 12345678123456781234567812345678123456781234567812345678"
                                       "1234567812345678")
                  .has_value());                                                    // 8 x 8 chars
  EXPECT_FALSE(output_degenerate_reason("123456789123456789123456789123456789123456789123456789"
                                        "123456789123456789")
                   .has_value());                                                   // unit of 9
  // Units are characters, not bytes: 8 x "é" (2 bytes each) is one repeated character.
  std::string e;
  for (int i = 0; i < 8; ++i) e += "\xc3\xa9";
  EXPECT_TRUE(output_degenerate_reason("a" + e).has_value());
  EXPECT_FALSE(output_degenerate_reason(" MAPLE-7890 is the se").has_value());
  EXPECT_FALSE(output_degenerate_reason("").has_value());
}

}  // namespace
}  // namespace kakeya::bridge
