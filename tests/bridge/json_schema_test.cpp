#include "bridge/json_schema.h"

#include <fstream>
#include <set>
#include <sstream>

#include <gtest/gtest.h>

#include "bridge/error_codes.h"
#include "bridge/request.h"
#include "bridge/run_state.h"
#include "tests/harness/paths.h"

namespace kakeya::bridge {
namespace {

using nlohmann::json;

constexpr JsonSchema kAll[] = {JsonSchema::kRequest, JsonSchema::kStatus, JsonSchema::kSummary, JsonSchema::kReport};

TEST(JsonSchema, EveryFileInManifestsIsCompiledInUnchanged) {
  std::set<std::string> on_disk;
  for (const auto& e : std::filesystem::directory_iterator(testing::source_dir() / "manifests" / "schemas")) {
    on_disk.insert(e.path().filename().string());
  }
  std::set<std::string> known;
  for (JsonSchema s : kAll) {
    const std::string name(schema_file_name(s));
    known.insert(name);
    EXPECT_EQ(schema_text(s), testing::file_text(testing::source_dir() / "manifests" / "schemas" / name)) << name;
  }
  EXPECT_EQ(known, on_disk);  // a new schema file needs its JsonSchema entry, and the reverse
}

TEST(JsonSchema, EverySchemaIsDraft7AndCompiles) {
  for (JsonSchema s : kAll) {
    const json schema = json::parse(schema_text(s));
    EXPECT_EQ(schema["$schema"], "http://json-schema.org/draft-07/schema#") << schema_file_name(s);
    // A schema that did not compile reports "cannot validate" for any document.
    auto r = validate_against_schema(s, json::object());
    const std::string message = r.ok() ? "" : r.error().message;
    EXPECT_EQ(message.find("cannot validate"), std::string::npos) << message;
  }
}

TEST(JsonSchema, ViolationNamesFileAndPointer) {
  json status = {{"state", "running"}, {"claim_gen", -1}};
  auto r = validate_against_schema(JsonSchema::kStatus, status);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, errc::kSchemaViolation);
  EXPECT_NE(r.error().message.find("status.schema.json: /claim_gen:"), std::string::npos) << r.error().message;
  auto root = validate_against_schema(JsonSchema::kStatus, json::array());
  ASSERT_FALSE(root.ok());
  EXPECT_NE(root.error().message.find("status.schema.json: /:"), std::string::npos) << root.error().message;
}

TEST(JsonSchema, StrongTypes) {
  EXPECT_FALSE(validate_against_schema(JsonSchema::kStatus, json{{"state", "queued"}, {"attempt", 1.0}}).ok());
  EXPECT_FALSE(validate_against_schema(JsonSchema::kStatus, json{{"state", "queued"}, {"attempt", "1"}}).ok());
  EXPECT_TRUE(validate_against_schema(JsonSchema::kStatus, json{{"state", "queued"}, {"attempt", 1}}).ok());
}

TEST(JsonSchema, HugeTimestampIsRefusedWithoutRecursion) {
  // Bounded patterns: a megabyte of digits where a timestamp belongs is an error, not a crash.
  json status = {{"state", "running"}, {"updated_at", std::string(1 << 20, '1')}};
  EXPECT_FALSE(validate_against_schema(JsonSchema::kStatus, status).ok());
}

// The request and status writers against their schemas (summary and report: their own tests).
TEST(JsonSchema, RequestWriterOutputConforms) {
  RequestManifest m;
  m.preset = "generate";
  m.params = json{{"prompt", "hi"}, {"max_new_tokens", 8}, {"temperature", 0.5}, {"greedy", true}};
  m.nonce = new_nonce();
  m.requested_by = "ci@example.org";
  m.created_at = now_rfc3339();
  m.client = {"kakeya", "0.1.0"};
  EXPECT_TRUE(validate_against_schema(JsonSchema::kRequest, json::parse(serialize_request(m))).ok());
}

TEST(JsonSchema, StatusWriterOutputConformsInEveryState) {
  for (RunState state : {RunState::Queued, RunState::Claimed, RunState::Running, RunState::Succeeded,
                         RunState::Failed, RunState::GateFailed, RunState::Timeout, RunState::Cancelled,
                         RunState::Rejected, RunState::InfraError}) {
    RunStatus st;
    st.state = state;
    st.reason = "because";
    st.runner_id = "r1";
    st.labels = {"cpu"};
    st.claim_gen = 2;
    st.attempt = 1;
    st.heartbeat_seq = 3;
    st.started_at = "2026-01-02T03:04:05Z";
    st.updated_at = now_rfc3339();
    st.progress = json{{"elapsed_s", 1.5}};
    st.log_tail = "line\n";
    auto r = validate_against_schema(JsonSchema::kStatus, json::parse(status_json_text(st)));
    EXPECT_TRUE(r.ok()) << to_string(state) << ": " << r.error().str();
    EXPECT_TRUE(parse_status(status_json_text(st)).ok()) << to_string(state);
  }
  RunStatus queued;  // the defaults: nothing set yet
  EXPECT_TRUE(validate_against_schema(JsonSchema::kStatus, to_json(queued)).ok());
}

}  // namespace
}  // namespace kakeya::bridge
