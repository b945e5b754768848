// Report writing: reports stay valid JSON whatever bytes decoded text contains.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "bridge/gate.h"
#include "engine/presets/ar_bench.h"
#include "engine/presets/report.h"
#include "tests/engine/backends.h"
#include "tests/harness/paths.h"

namespace kakeya::engine {
namespace {

TEST(ReportJsonText, InvalidUtf8IsReplacedNotThrown) {
  // A decoded text that ends inside a 3-byte character, and a lone continuation byte.
  const std::string text = std::string("ok <synth-1>") + "\xE2\x82" + " and \x80 end";
  nlohmann::json r{{"text", text}};
  EXPECT_THROW((void)r.dump(2), nlohmann::json::type_error);  // what the old writer did
  const std::string out = report_json_text(r);
  const auto back = nlohmann::json::parse(out);
  const std::string s = back.at("text").get<std::string>();
  EXPECT_NE(s.find("ok <synth-1>"), std::string::npos);
  EXPECT_NE(s.find("\xEF\xBF\xBD"), std::string::npos);  // U+FFFD
  EXPECT_NE(s.find(" end"), std::string::npos);
}

TEST(ReportJsonText, ValidUtf8IsKeptVerbatim) {
  nlohmann::json r{{"text", "caf\xC3\xA9 \xE2\x82\xAC"}};
  EXPECT_EQ(nlohmann::json::parse(report_json_text(r)).at("text"), "caf\xC3\xA9 \xE2\x82\xAC");
}

TEST(WriteReport, WritesParseableFileWithInvalidUtf8) {
  const auto dir = std::filesystem::temp_directory_path() / ("kakeya-report-test-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  ASSERT_TRUE(write_report(dir, nlohmann::json{{"text", "\xFF"}}).ok());
  std::ifstream in(dir / "report.json");
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_EQ(nlohmann::json::parse(ss.str()).at("text"), "\xEF\xBF\xBD");
  EXPECT_FALSE(std::filesystem::exists(dir / "report.json.tmp"));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace kakeya::engine

// What a report says ran comes from the backend object (Backend::info()); what was asked for from
// the request. A real run on the CPU backend reported against a request for "vulkan" (what a
// silent fallback would produce) trips SILENT_FALLBACK on every arm; the same run requested as
// "cpu" does not.
namespace kakeya::engine {
namespace {

struct StoriesModel {
  LlamaModel model;
  Tokenizer tok;
};

std::unique_ptr<StoriesModel> load_model_for_report_test() {
  auto m = LlamaModel::load(test::stories_path());
  EXPECT_TRUE(m.ok());
  auto tok = Tokenizer::from_gguf(m->gguf());
  EXPECT_TRUE(tok.ok());
  return std::unique_ptr<StoriesModel>(new StoriesModel{std::move(m).value(), std::move(tok).value()});
}

nlohmann::json small_ar_bench(const std::string& requested) {
  static auto model = load_model_for_report_test();
  ArBenchConfig c;
  c.prompt_lengths = {8};
  c.gen_tokens = 2;
  c.samples = 1;
  c.backend = requested;
  auto r = run_ar_bench(model->model, model->tok, test::cpu(1), c);
  EXPECT_TRUE(r.ok()) << r.error().str();
  return r.ok() ? r.value() : nlohmann::json::object();
}

TEST(ReportBackend, SilentFallbackTripsOnARealMismatch) {
  const nlohmann::json honest = small_ar_bench("cpu");
  EXPECT_EQ(honest["engine"]["backend"], test::cpu(1).info().name);
  EXPECT_EQ(honest["engine"]["kernel_isa"], test::cpu(1).info().kernel_set);
  EXPECT_TRUE(bridge::evaluate_gate(honest, {"SILENT_FALLBACK"}).passed);

  const nlohmann::json mismatch = small_ar_bench("vulkan");
  EXPECT_EQ(mismatch["engine"]["backend_requested"], "vulkan");
  EXPECT_EQ(mismatch["arms"][0]["backend_used"], "cpu") << "taken from the backend that ran";
  const bridge::GateVerdict v = bridge::evaluate_gate(mismatch, {"SILENT_FALLBACK"});
  EXPECT_FALSE(v.passed);
  ASSERT_EQ(v.evidence_violations.size(), mismatch["arms"].size());
  for (const auto& viol : v.evidence_violations) {
    EXPECT_EQ(viol.code, "SILENT_FALLBACK");
    EXPECT_NE(viol.message.find("vulkan"), std::string::npos) << viol.message;
  }
}

}  // namespace
}  // namespace kakeya::engine
