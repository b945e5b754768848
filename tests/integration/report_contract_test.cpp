// Every report the real engine writes carries the report envelope (manifests/schemas/
// report.schema.json, bridge/report_envelope.h): the runner refuses a gated report without one.
// Tiny workloads on the bundled models; the reports' own content is tested in tests/engine.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "bridge/json_strict.h"
#include "bridge/report_envelope.h"
#include "tests/harness/bus_world.h"
#include "tests/harness/paths.h"

namespace kakeya::testing {
namespace {

namespace fs = std::filesystem;

struct EngineRun {
  const char* kind;
  // After the subcommand; "{stories}"/"{niah}" name the bundled models, "{story_text}" the
  // perplexity test text.
  std::vector<std::string> args;
  bool has_model;
};

class ReportContract : public ::testing::TestWithParam<EngineRun> {};

TEST_P(ReportContract, EngineReportHasTheEnvelope) {
  const EngineRun& run = GetParam();
  TempDir dir("kakeya-report");
  std::vector<std::string> argv = {(binary_dir() / "kakeya-engine").string(), run.kind};
  for (const std::string& a : run.args) {
    if (a == "{stories}") {
      argv.push_back((models_dir() / "stories260K-f32.gguf").string());
    } else if (a == "{niah}") {
      argv.push_back((models_dir() / "niah-tiny-f32.gguf").string());
    } else if (a == "{story_text}") {
      argv.push_back((data_dir() / "perplexity" / "story.txt").string());
    } else {
      argv.push_back(a);
    }
  }
  argv.insert(argv.end(), {"--out", dir.path().string()});
  const CmdResult r = run_cmd(argv, {}, 300);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  std::ifstream in(dir.path() / "report.json", std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  auto report = bridge::parse_json_strict(text.str());
  ASSERT_TRUE(report.ok()) << report.error().str();
  auto envelope = bridge::read_report_envelope(*report);
  ASSERT_TRUE(envelope.ok()) << run.kind << ": " << envelope.error().str();
  EXPECT_EQ(envelope->kind, run.kind);
  EXPECT_FALSE(envelope->engine.version.empty());
  EXPECT_EQ(envelope->model.has_value(), run.has_model);
}

INSTANTIATE_TEST_SUITE_P(
    EveryKind, ReportContract,
    ::testing::Values(
        EngineRun{"env-probe", {}, false},
        EngineRun{"generate", {"--model", "{stories}", "--max-new-tokens", "4", "--prompt", "hi"}, true},
        EngineRun{"ar-bench", {"--model", "{stories}", "--prompt-lengths", "4", "--gen-tokens", "4", "--samples", "1"}, true},
        EngineRun{"specdecode-bench",
                  {"--model", "{stories}", "--samples", "1", "--gen-tokens", "8", "--block-sizes", "2",
                   "--verify-sizes", "1", "--verify-reps", "1", "--threads", "1"},
                  true},
        EngineRun{"niah-eval",
                  {"--model", "{niah}", "--lines", "20", "--samples", "1", "--decode-tokens", "4", "--threads", "1"},
                  true},
        EngineRun{"kv-quant-eval",
                  {"--model", "{niah}", "--lines", "20", "--samples", "1", "--decode-tokens", "4", "--threads", "1"},
                  true},
        EngineRun{"backend-parity", {"--model", "{stories}", "--prompts", "hi"}, true},
        EngineRun{"perplexity", {"--model", "{stories}", "--file", "{story_text}", "--ctx", "64", "--chunks", "2"},
                  true}),
    [](const ::testing::TestParamInfo<EngineRun>& param) {
      std::string name = param.param.kind;
      std::replace(name.begin(), name.end(), '-', '_');
      return name;
    });

}  // namespace
}  // namespace kakeya::testing
