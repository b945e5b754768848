#include "bridge/runner_doc.h"

#include <gtest/gtest.h>

#include "bridge/json_text.h"
#include "bridge/limits.h"

namespace kakeya::bridge {
namespace {

const char* kCatalog =
    "version: 1\nenv_allowlist: []\npresets:\n"
    "  - name: sleep-test\n    description: sleeps\n    argv: [/bin/sleep, \"{seconds}\"]\n"
    "    params:\n      seconds: {kind: int, min: 0, max: 10, default: 1}\n    timeout_s: 60\n";

TEST(RunnerDoc, RoundTripsAndOffers) {
  RunnerDoc d;
  d.id = "gpu-1";
  d.labels = {"gpu"};
  d.version = "0.1.0";
  d.max_jobs = 2;
  d.running = {"kakeya/req/generate-abcd"};
  d.state = "serving";
  d.heartbeat_s = 30;
  d.updated_at = "2024-05-01T12:00:00Z";
  d.presets = {"env-probe", "generate"};
  d.catalog_digest = std::string(64, 'a');
  auto back = parse_runner_doc(to_json_file(to_json(d)));
  ASSERT_TRUE(back.ok()) << back.error().str();
  EXPECT_EQ(back->id, "gpu-1");
  EXPECT_EQ(back->presets, d.presets);
  EXPECT_EQ(back->catalog_digest, d.catalog_digest);
  EXPECT_EQ(back->max_jobs, 2);
  EXPECT_TRUE(back->offers("generate"));
  EXPECT_FALSE(back->offers("niah-eval"));
}

TEST(RunnerDoc, OlderDocumentsAndUnknownKeysAreRead) {
  // A runner from before presets were published: it offers nothing as far as peers can tell.
  auto old = parse_runner_doc(R"({"schema_version": 1, "id": "r0", "state": "serving", "future_key": [1]})");
  ASSERT_TRUE(old.ok()) << old.error().str();
  EXPECT_TRUE(old->presets.empty());
  EXPECT_FALSE(old->offers("env-probe"));
}

TEST(RunnerDoc, MalformedDocumentsAreErrors) {
  EXPECT_EQ(parse_runner_doc(R"({"state": "serving"})").error().code, errc::kMissingKey);
  EXPECT_EQ(parse_runner_doc(R"({"id": "r", "state": "serving", "presets": "all"})").error().code, errc::kBadType);
  EXPECT_EQ(parse_runner_doc(R"({"id": "r", "state": "serving", "presets": [1]})").error().code, errc::kBadType);
  EXPECT_EQ(parse_runner_doc("{\"id\": \"\xff\", \"state\": \"s\"}").error().code, errc::kParseError);
  const std::string big = R"({"id": "r", "state": "s"})" + std::string(kMaxRunnerDocBytes, ' ');
  EXPECT_EQ(parse_runner_doc(big).error().code, errc::kTooLarge);
}

TEST(RunnerDoc, CatalogDigestFollowsTheAllowlistNotTheFormatting) {
  auto a = PresetCatalog::load_string(kCatalog, "a");
  ASSERT_TRUE(a.ok()) << a.error().str();
  // The same allowlist written differently (flow style, comments) has the same digest.
  auto same = PresetCatalog::load_string(std::string("# comment\n") + kCatalog, "b");
  ASSERT_TRUE(same.ok()) << same.error().str();
  EXPECT_EQ(catalog_digest(*a), catalog_digest(*same));
  EXPECT_EQ(catalog_digest(*a).size(), 64u);
  std::string changed = kCatalog;
  changed.replace(changed.find("max: 10"), 7, "max: 11");
  auto other = PresetCatalog::load_string(changed, "c");
  ASSERT_TRUE(other.ok()) << other.error().str();
  EXPECT_NE(catalog_digest(*a), catalog_digest(*other));
}

}  // namespace
}  // namespace kakeya::bridge
