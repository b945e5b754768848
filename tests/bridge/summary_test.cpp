#include "bridge/summary.h"

#include <gtest/gtest.h>

#include "bridge/error_codes.h"
#include "bridge/json_schema.h"

namespace kakeya::bridge {
namespace {

using nlohmann::json;

const char* kCommit = "0123456789abcdef0123456789abcdef01234567";

// A rejection published without a claim: the receipt keys only.
RunSummary receipt() {
  RunSummary s;
  s.state = RunState::Rejected;
  s.reason = "unknown preset `nope`";
  s.runner_id = "r1";
  s.request_commit = kCommit;
  s.finished_at = "2026-01-02T03:04:05Z";
  s.engine_version = "0.1.0+abc";
  return s;
}

// A claimed run whose command ran and exited 3.
RunSummary finished_run() {
  RunSummary s = receipt();
  s.state = RunState::Failed;
  s.reason = "exit code 3";
  ClaimedRun run;
  run.preset = "test-job";
  run.params = json{{"exit", 3}, {"message", "hi"}};
  run.nonce = "abcd1234";
  run.runner_labels = {"cpu"};
  run.claim_gen = 2;
  run.attempt = 1;
  run.argv = {"/bin/job", "--exit", "3"};
  run.outputs = {OutputFile{"result.json", 42, true}, OutputFile{"big.bin", 20u << 20, false}};
  run.missing_outputs = {"other.json"};
  run.gate_passed = std::nullopt;
  run.command = CommandOutcome{3, 0, 1.25, "2026-01-02T03:04:00Z", LogStats{100, 0, false, 8u << 20}};
  s.run = std::move(run);
  return s;
}

void expect_round_trip(const RunSummary& s) {
  const std::string text = summary_json_text(s);
  ASSERT_TRUE(validate_against_schema(JsonSchema::kSummary, json::parse(text)).ok());
  auto back = parse_summary(text);
  ASSERT_TRUE(back.ok()) << back.error().str();
  EXPECT_EQ(to_json(*back), to_json(s));
}

TEST(Summary, EveryShapeTheRunnerWritesConformsAndRoundTrips) {
  expect_round_trip(receipt());  // agent.cpp: rejected / cancelled / infra_error without a claim
  RunSummary prepared = finished_run();  // job.cpp: claimed, command never started
  prepared.state = RunState::InfraError;
  prepared.run->argv.clear();
  prepared.run->command.reset();
  prepared.run->outputs.clear();
  expect_round_trip(prepared);
  expect_round_trip(finished_run());  // job.cpp: the command ran
  RunSummary gated = finished_run();
  gated.state = RunState::GateFailed;
  gated.run->gate_passed = false;
  gated.run->command->term_signal = 9;
  gated.run->command->exit_code = -1;
  expect_round_trip(gated);
}

TEST(Summary, WireKeysAreFlat) {
  const json j = to_json(finished_run());
  EXPECT_EQ(j["schema_version"], 1);
  EXPECT_EQ(j["state"], "failed");
  EXPECT_EQ(j["exit_code"], 3);
  EXPECT_EQ(j["duration_s"], 1.25);
  EXPECT_EQ(j["log"]["cap_bytes"], 8u << 20);
  EXPECT_TRUE(j["gate_passed"].is_null());
  EXPECT_EQ(j["outputs"][1]["committed"], false);
  const json r = to_json(receipt());
  EXPECT_FALSE(r.contains("preset"));
  EXPECT_FALSE(r.contains("exit_code"));
}

void expect_rejected(const json& doc, ErrorCode code, const std::string& needle) {
  auto r = summary_from_json(doc);
  ASSERT_FALSE(r.ok()) << doc.dump();
  EXPECT_EQ(r.error().code, code) << r.error().str();
  EXPECT_NE(r.error().message.find(needle), std::string::npos) << r.error().str();
}

TEST(Summary, StrictOnRead) {
  json j = to_json(finished_run());
  j["seconds"] = 1.25;  // the old guess: one name only now
  expect_rejected(j, errc::kSchemaViolation, "summary.schema.json");
  j = to_json(finished_run());
  j["state"] = "running";
  expect_rejected(j, errc::kSchemaViolation, "/state");
  j = to_json(finished_run());
  j.erase("nonce");  // a run without all its keys
  expect_rejected(j, errc::kSchemaViolation, "summary.schema.json");
  j = to_json(finished_run());
  j.erase("log");  // a command without all its keys
  expect_rejected(j, errc::kSchemaViolation, "summary.schema.json");
  j = to_json(finished_run());
  j["exit_code"] = 3.0;
  expect_rejected(j, errc::kSchemaViolation, "/exit_code");
  j = to_json(finished_run());
  j["finished_at"] = "2026-02-30T00:00:00Z";  // matches the pattern, not the calendar
  expect_rejected(j, errc::kBadValue, "finished_at");
  j = to_json(finished_run());
  j["exit_code"] = 1ll << 40;
  expect_rejected(j, errc::kBadValue, "exit_code");
  j = to_json(receipt());
  j["reason"] = "";
  expect_rejected(j, errc::kSchemaViolation, "/reason");
  auto dup = parse_summary(R"({"state": "failed", "state": "succeeded"})");
  ASSERT_FALSE(dup.ok());
  EXPECT_EQ(dup.error().code, errc::kDuplicateKey);
}

TEST(Summary, TextNeverThrowsOnInvalidUtf8) {
  RunSummary s = receipt();
  s.reason = "rejected: branch \xff\xfe";
  const std::string text = summary_json_text(s);
  auto back = parse_summary(text);
  ASSERT_TRUE(back.ok()) << back.error().str();
  EXPECT_EQ(back->reason, "rejected: branch \\xff\\xfe");  // bridge/utf8.h escaping
}

}  // namespace
}  // namespace kakeya::bridge
