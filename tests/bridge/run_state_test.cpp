#include "bridge/run_state.h"

#include <set>
#include <utility>

#include <gtest/gtest.h>

namespace kakeya::bridge {
namespace {

using nlohmann::json;
using S = RunState;

const S kAll[] = {S::Queued,  S::Claimed, S::Running,   S::Succeeded, S::Failed,
                  S::GateFailed, S::Timeout, S::Cancelled, S::Rejected,  S::InfraError};

TEST(RunState, NamesRoundTrip) {
  EXPECT_STREQ(to_string(S::GateFailed), "gate_failed");
  EXPECT_STREQ(to_string(S::InfraError), "infra_error");
  EXPECT_STREQ(to_string(S::Queued), "queued");
  for (S s : kAll) {
    auto back = parse_run_state(to_string(s));
    ASSERT_TRUE(back.has_value()) << to_string(s);
    EXPECT_EQ(*back, s);
  }
  EXPECT_FALSE(parse_run_state("Queued").has_value());
  EXPECT_FALSE(parse_run_state("gate-failed").has_value());
  EXPECT_FALSE(parse_run_state("").has_value());
}

TEST(RunState, Terminal) {
  EXPECT_FALSE(is_terminal(S::Queued));
  EXPECT_FALSE(is_terminal(S::Claimed));
  EXPECT_FALSE(is_terminal(S::Running));
  for (S s : {S::Succeeded, S::Failed, S::GateFailed, S::Timeout, S::Cancelled, S::Rejected, S::InfraError}) {
    EXPECT_TRUE(is_terminal(s)) << to_string(s);
  }
}

TEST(RunState, TransitionTable) {
  // The full expected edge set; everything else is forbidden.
  std::set<std::pair<S, S>> edges = {
      {S::Queued, S::Claimed},     {S::Queued, S::Rejected},    {S::Queued, S::Cancelled},
      {S::Claimed, S::Running},    {S::Claimed, S::Claimed},    {S::Claimed, S::Cancelled},
      {S::Claimed, S::InfraError}, {S::Claimed, S::Rejected},   {S::Running, S::Running},
      {S::Running, S::Claimed},    {S::Running, S::Succeeded},  {S::Running, S::Failed},
      {S::Running, S::GateFailed}, {S::Running, S::Timeout},    {S::Running, S::Cancelled},
      {S::Running, S::InfraError},
  };
  for (S from : kAll) {
    for (S to : kAll) {
      EXPECT_EQ(can_transition(from, to), edges.count({from, to}) == 1) << to_string(from) << " -> " << to_string(to);
    }
  }
}

RunStatus st(S s, int64_t gen, int64_t hb = 0, const std::string& reason = "") {
  RunStatus r;
  r.state = s;
  r.claim_gen = gen;
  r.heartbeat_seq = hb;
  r.reason = reason;
  return r;
}

TEST(RunState, CheckTransitionClaimGen) {
  EXPECT_TRUE(check_transition(st(S::Queued, 0), st(S::Claimed, 1)).ok());
  EXPECT_FALSE(check_transition(st(S::Queued, 0), st(S::Claimed, 0)).ok());
  EXPECT_TRUE(check_transition(st(S::Claimed, 1), st(S::Running, 1)).ok());
  EXPECT_TRUE(check_transition(st(S::Running, 1, 3), st(S::Running, 1, 4)).ok());
  // Takeover from claimed or running needs a higher generation.
  EXPECT_TRUE(check_transition(st(S::Running, 1, 9), st(S::Claimed, 2)).ok());
  EXPECT_TRUE(check_transition(st(S::Claimed, 1), st(S::Claimed, 2)).ok());
  Status same_gen = check_transition(st(S::Running, 2), st(S::Claimed, 2));
  ASSERT_FALSE(same_gen.ok());
  EXPECT_EQ(same_gen.error().code, errc::kBadTransition);
  EXPECT_NE(same_gen.error().message.find("running (claim_gen 2) -> claimed (claim_gen 2)"), std::string::npos)
      << same_gen.error().message;
  // A fenced runner (older generation) may not write.
  Status fenced = check_transition(st(S::Running, 3), st(S::Running, 2));
  ASSERT_FALSE(fenced.ok());
  EXPECT_NE(fenced.error().message.find("fenced"), std::string::npos);
  EXPECT_FALSE(check_transition(st(S::Running, 2), st(S::Succeeded, 3, 0, "ok")).ok());
  EXPECT_FALSE(check_transition(st(S::Running, 1, 5), st(S::Running, 1, 4)).ok());
  // Queued -> rejected may be written with a bumped generation (a runner's CAS), never lowered.
  EXPECT_TRUE(check_transition(st(S::Queued, 0), st(S::Rejected, 1, 0, "bad params")).ok());
}

TEST(RunState, TerminalNeedsReasonAndIsFinal) {
  EXPECT_FALSE(check_transition(st(S::Running, 1), st(S::Failed, 1)).ok());
  EXPECT_TRUE(check_transition(st(S::Running, 1), st(S::Failed, 1, 0, "exit code 2")).ok());
  Status after_end = check_transition(st(S::Succeeded, 1, 0, "ok"), st(S::Running, 1));
  ASSERT_FALSE(after_end.ok());
  EXPECT_NE(after_end.error().message.find("already ended"), std::string::npos);
  EXPECT_FALSE(check_transition(st(S::Succeeded, 1, 0, "ok"), st(S::Claimed, 2)).ok());
  EXPECT_FALSE(check_transition(st(S::Running, 1), st(S::Rejected, 1, 0, "x")).ok());
  EXPECT_FALSE(check_transition(st(S::Queued, 0), st(S::Running, 0)).ok());
}

RunStatus full_status() {
  RunStatus s;
  s.state = S::Running;
  s.reason = "command started";
  s.runner_id = "gpu-box-1";
  s.labels = {"gpu", "linux"};
  s.claim_gen = 2;
  s.attempt = 1;
  s.heartbeat_seq = 7;
  s.started_at = "2024-05-01T12:00:00Z";
  s.updated_at = "2024-05-01T12:03:30Z";
  s.progress = json{{"step", 3}, {"of", 10}};
  s.log_tail = "line 1\nline 2\n";
  return s;
}

TEST(RunStatusJson, RoundTrip) {
  RunStatus s = full_status();
  json j = to_json(s);
  EXPECT_EQ(j["state"], "running");
  EXPECT_EQ(j["claim_gen"], 2);
  EXPECT_EQ(j.size(), 11u);
  auto back = parse_status(j.dump(2));
  ASSERT_TRUE(back.ok()) << back.error().str();
  EXPECT_EQ(back->state, S::Running);
  EXPECT_EQ(back->reason, s.reason);
  EXPECT_EQ(back->runner_id, s.runner_id);
  EXPECT_EQ(back->labels, s.labels);
  EXPECT_EQ(back->claim_gen, 2);
  EXPECT_EQ(back->attempt, 1);
  EXPECT_EQ(back->heartbeat_seq, 7);
  EXPECT_EQ(back->started_at, s.started_at);
  EXPECT_EQ(back->updated_at, s.updated_at);
  EXPECT_EQ(back->progress, s.progress);
  EXPECT_EQ(back->log_tail, s.log_tail);
  EXPECT_EQ(to_json(*back), j);
}

TEST(RunStatusJson, DefaultsForOptionalFields) {
  auto r = parse_status(R"({"state": "queued"})");
  ASSERT_TRUE(r.ok()) << r.error().str();
  EXPECT_EQ(r->state, S::Queued);
  EXPECT_EQ(r->claim_gen, 0);
  EXPECT_TRUE(r->progress.is_null());
  EXPECT_TRUE(r->started_at.empty());
}

void expect_status_error(const json& j, const std::string& code, std::initializer_list<std::string> needles) {
  auto r = parse_status(j.dump());
  ASSERT_FALSE(r.ok()) << j.dump();
  EXPECT_EQ(r.error().code, code) << r.error().str();
  for (const auto& n : needles) {
    EXPECT_NE(r.error().message.find(n), std::string::npos) << "missing '" << n << "' in " << r.error().message;
  }
}

TEST(RunStatusJson, StrictErrors) {
  json j = to_json(full_status());
  j["extra"] = 1;
  expect_status_error(j, "unknown_key", {"extra"});
  j = to_json(full_status());
  j.erase("state");
  expect_status_error(j, "missing_key", {"state"});
  j = to_json(full_status());
  j["state"] = "done";
  expect_status_error(j, "bad_value", {"state", "\"done\""});
  j["state"] = 3;
  expect_status_error(j, "bad_type", {"state", "3"});
  j = to_json(full_status());
  j["claim_gen"] = "2";
  expect_status_error(j, "bad_type", {"claim_gen", "\"2\""});
  j["claim_gen"] = 2.0;
  expect_status_error(j, "bad_type", {"claim_gen", "2.0"});
  j["claim_gen"] = -1;
  expect_status_error(j, "bad_value", {"claim_gen", "-1"});
  j = to_json(full_status());
  j["labels"] = json::array({"gpu", 7});
  expect_status_error(j, "bad_type", {"labels[1]", "7"});
  j = to_json(full_status());
  j["updated_at"] = "yesterday";
  expect_status_error(j, "bad_value", {"updated_at", "yesterday"});
  j = to_json(full_status());
  j["log_tail"] = nullptr;
  expect_status_error(j, "bad_type", {"log_tail", "null"});
  auto dup = parse_status(R"({"state": "queued", "state": "succeeded"})");
  ASSERT_FALSE(dup.ok());
  EXPECT_EQ(dup.error().code, errc::kDuplicateKey);
  EXPECT_FALSE(parse_status("[]").ok());
  EXPECT_FALSE(parse_status("{").ok());
}

TEST(RunStatusJson, SchemaCheckedAfterTheTypedFields) {
  // The typed checks accept it; status.schema.json says a terminal state needs a reason.
  json j = to_json(full_status());
  j["state"] = "failed";
  j["reason"] = "";
  expect_status_error(j, "schema_violation", {"status.schema.json", "/reason"});
}

TEST(RunStatusJson, TextNeverThrowsOnInvalidUtf8) {
  RunStatus st = full_status();
  st.log_tail = "bad \xff byte";
  const std::string text = status_json_text(st);
  auto back = parse_status(text);
  ASSERT_TRUE(back.ok()) << back.error().str();
  EXPECT_EQ(back->log_tail, "bad \\xff byte");  // bridge/utf8.h escaping
}

}  // namespace
}  // namespace kakeya::bridge
