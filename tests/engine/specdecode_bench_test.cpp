// specdecode-bench: workloads, the report shape the evidence gate reads, and the gate verdict on
// a real (small) run.
#include "engine/presets/specdecode_bench.h"

#include <gtest/gtest.h>

#include <fstream>
#include <set>

#include <nlohmann/json.hpp>

#include "bridge/gate.h"
#include "tests/engine/backends.h"
#include "tests/harness/paths.h"

namespace kakeya::engine {
namespace {

using test::stories_path;

TEST(SpecBenchWorkloads, DistinctPromptsAndASeparateWarmup) {
  for (const char* w : {"stories", "niah", "code"}) {
    auto p = workload_prompts(w, 5, true);
    ASSERT_TRUE(p.ok()) << w;
    ASSERT_EQ(p->size(), 6u);
    std::set<std::string> texts, ids;
    for (const auto& b : p.value()) {
      texts.insert(b.text);
      ids.insert(b.id);
    }
    EXPECT_EQ(texts.size(), 6u) << w;
    EXPECT_EQ(ids.size(), 6u) << w;
    EXPECT_EQ(p->back().id, std::string(w) + "-warmup");
    for (const auto& b : p.value()) EXPECT_EQ(b.needle, std::string(w) == "niah") << b.id;
  }
  auto niah = workload_prompts("niah", 2, false);
  ASSERT_TRUE(niah.ok());
  EXPECT_EQ(niah->front().answer, "BETA-1409");  // DESIGN.md §5 vector: seed 42, first sample
  EXPECT_EQ(workload_prompts("poems", 5, true).error().code, "bad_param");
  EXPECT_EQ(workload_prompts("stories", 0, true).error().code, "bad_param");
}

// The "file" workload reads a prompts file (tools/train_pair/prompts.py's format: 16 prompts and
// a warm-up), and refuses files it cannot use.
TEST(SpecBenchWorkloads, FileWorkloadReadsPromptsAndRefusesUnusableFiles) {
  testing::TempDir dir;
  auto write = [&](const std::string& name, const std::string& text) {
    const std::string path = (dir.path() / name).string();
    std::ofstream(path) << text;
    return path;
  };
  nlohmann::json file = {{"source", "test"}, {"warmup", "def warm_up():\n    return 0\n"}};
  for (int i = 0; i < 16; ++i)
    file["prompts"].push_back("def f" + std::to_string(i) + "(x):\n    return x * " + std::to_string(i) + "\n");
  const std::string pycode = write("prompts.json", file.dump());
  auto p = workload_prompts("file", 16, true, pycode);
  ASSERT_TRUE(p.ok()) << p.error().str();
  ASSERT_EQ(p->size(), 17u);
  std::set<std::string> texts;
  for (const auto& b : p.value()) texts.insert(b.text);
  EXPECT_EQ(texts.size(), 17u);
  EXPECT_EQ(p->front().id, "file-0");
  EXPECT_EQ(p->front().text, file["prompts"][0].get<std::string>());
  EXPECT_EQ(p->back().id, "file-warmup");
  EXPECT_EQ(p->back().text, file["warmup"].get<std::string>());

  EXPECT_EQ(workload_prompts("file", 17, true, pycode).error().code, "bad_param");  // 16 in the file
  EXPECT_EQ(workload_prompts("file", 5, true).error().code, "bad_param");           // no file
  EXPECT_EQ(workload_prompts("file", 1, true, write("dup.json", R"({"prompts": ["a", "b"], "warmup": "a"})")).error().code,
            "bad_param");
  EXPECT_EQ(workload_prompts("file", 1, true, write("type.json", R"({"prompts": ["a", 3], "warmup": "w"})")).error().code,
            "bad_type");
  EXPECT_EQ(workload_prompts("file", 1, true, write("keys.json", R"({"prompts": ["a"]})")).error().code, "missing_key");
  EXPECT_EQ(workload_prompts("file", 1, true, write("twice.json", R"({"prompts": ["a"], "warmup": "w", "warmup": "v"})"))
                .error()
                .code,
            "duplicate_key");
  EXPECT_EQ(workload_prompts("file", 1, true, (dir.path() / "absent.json").string()).error().code, "io");
}

TEST(SpecBench, ReportIsLosslessAndPassesTheGate) {
  SpecBenchConfig c;
  c.model = stories_path();
  c.draft = "layers:2";
  c.block_sizes = {2, 4};
  c.samples = 5;
  c.gen_tokens = 40;
  c.workload = "stories";
  c.verify_sizes = {1, 2, 4};
  c.verify_reps = 2;
  auto r = run_specdecode_bench(c, test::cpu(2, "quantized"));
  ASSERT_TRUE(r.ok()) << r.error().str();
  const auto& rep = r.value();
  EXPECT_EQ(rep["kind"], "specdecode-bench");
  ASSERT_EQ(rep["arms"].size(), 3u);
  EXPECT_EQ(rep["arms"][0]["name"], "ar");
  EXPECT_EQ(rep["arms"][2]["config"]["block_size"], 4);
  EXPECT_TRUE(rep["lossless"]["equal"].get<bool>());
  EXPECT_EQ(rep["warmup"]["prompt_id"], "stories-warmup");
  for (const auto& arm : rep["arms"]) {
    ASSERT_EQ(arm["samples"].size(), 5u);
    for (const auto& s : arm["samples"]) {
      EXPECT_GT(s["prefill_s"].get<double>(), 0.0);
      EXPECT_GT(s["resident_kv_bytes"].get<size_t>(), 0u);
      EXPECT_TRUE(s["recall"].is_null());
      EXPECT_NE(s["prompt_id"], "stories-warmup");
    }
  }
  EXPECT_GT(rep["arms"][1]["aggregates"]["draft_blocks"].get<size_t>(), 0u);
  // The verify cost of the backend as opened, under its batched matmul mode.
  EXPECT_EQ(rep["verify_cost"]["quantized_activations"].size(), 3u);
  EXPECT_EQ(rep["config"]["verify_mode"], "quantized_activations");
  EXPECT_EQ(rep["model"]["sha256"], "3c4a7c3a8313e00ae6a6b64df717828f4ba18391ea31ffb01abe9a2c4f7bb9a9");
  // The gate's rules for this kind. OUTPUT_DEGENERATE depends on what the tiny model writes and
  // PREFILL_VARIANCE on machine load, so they are checked only for what they report.
  const bridge::GateVerdict v = bridge::evaluate_gate(rep, {});
  for (const auto& viol : v.evidence_violations) {
    EXPECT_TRUE(viol.code == "OUTPUT_DEGENERATE" || viol.code == "PREFILL_VARIANCE")
        << viol.code << ": " << viol.message;
  }
}

// niah-tiny answers in 8-13 tokens and then emits EOS; with ignore_eos every sample of both arms
// decodes gen_tokens (or stops on the runaway guard), still losslessly.
TEST(SpecBench, IgnoreEosDecodesPastTheAnswer) {
  SpecBenchConfig c;
  c.model = (testing::models_dir() / "niah-tiny-f32.gguf").string();
  c.draft = "lookup:1";
  c.block_sizes = {4};
  c.samples = 5;
  c.gen_tokens = 33;
  c.workload = "niah";
  c.verify_sizes = {};
  for (bool ignore : {false, true}) {
    c.ignore_eos = ignore;
    auto r = run_specdecode_bench(c, test::cpu(2, "sgemm"));
    ASSERT_TRUE(r.ok()) << r.error().str();
    EXPECT_TRUE(r.value()["lossless"]["equal"].get<bool>());
    EXPECT_EQ(r.value()["config"]["ignore_eos"], ignore);
    EXPECT_EQ(r.value()["config"]["eog"], std::vector<int32_t>{2}) << "the tokenizer's end-of-generation set";
    size_t eos_stops = 0;
    for (const auto& arm : r.value()["arms"])
      for (const auto& s : arm["samples"]) eos_stops += s["stop"] == "eos" ? 1 : 0;
    if (ignore) {
      EXPECT_EQ(eos_stops, 0u);
    } else {
      EXPECT_GT(eos_stops, 0u) << "niah-tiny no longer stops at EOS after its answer";
    }
  }
}

TEST(SpecBench, BadParamsAreRejected) {
  SpecBenchConfig c;
  c.model = stories_path();
  c.block_sizes = {0};
  EXPECT_EQ(run_specdecode_bench(c, test::cpu(1)).error().code, "bad_param");
  c.block_sizes = {2};
  c.gen_tokens = 1;
  EXPECT_EQ(run_specdecode_bench(c, test::cpu(1)).error().code, "bad_param");
  c.gen_tokens = 8;
  c.draft = "layers:9";
  EXPECT_EQ(run_specdecode_bench(c, test::cpu(1)).error().code, "bad_param");
}

}  // namespace
}  // namespace kakeya::engine
