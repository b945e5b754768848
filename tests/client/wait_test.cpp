#include <gtest/gtest.h>

#include <sstream>

#include "client/progress.h"
#include "client/waiter.h"
#include "client/wait_outcome.h"

namespace kakeya::client {
namespace {

using bridge::RunState;

TEST(ClientWaitExitCode, EveryStateMapsToTheDocumentedCode) {
  EXPECT_EQ(wait_exit_code(RunState::Succeeded), 0);
  for (RunState s : {RunState::Failed, RunState::GateFailed, RunState::Timeout, RunState::Cancelled,
                     RunState::Rejected, RunState::InfraError}) {
    EXPECT_EQ(wait_exit_code(s), 1) << bridge::to_string(s);
  }
  EXPECT_EQ(wait_exit_code(RunState::Claimed), 2);
  EXPECT_EQ(wait_exit_code(RunState::Running), 2);
  EXPECT_EQ(wait_exit_code(RunState::Queued), 3);
}

BranchSnapshot snap(RunState state, int64_t gen, int64_t attempt, const std::string& tail) {
  BranchSnapshot s;
  s.branch = "kakeya/req/demo-abcd1234";
  s.status.state = state;
  s.status.runner_id = gen > 0 ? "host-1" : "";
  s.status.claim_gen = gen;
  s.status.attempt = attempt;
  s.status.log_tail = tail;
  return s;
}

TEST(ClientProgress, StateEventsOnChangeAndLogLinesOnce) {
  ProgressTracker t;
  auto e1 = t.observe(snap(RunState::Queued, 0, 0, ""), 0.0);
  ASSERT_EQ(e1.size(), 1u);
  EXPECT_EQ(e1[0]["event"], "state");
  EXPECT_EQ(e1[0]["state"], "queued");

  auto e2 = t.observe(snap(RunState::Running, 1, 1, "a\nb\n"), 1.0);
  ASSERT_EQ(e2.size(), 2u);
  EXPECT_EQ(e2[0]["state"], "running");
  EXPECT_EQ(e2[0]["runner_id"], "host-1");
  EXPECT_EQ(e2[1]["event"], "log");
  EXPECT_EQ(e2[1]["lines"], nlohmann::json({"a", "b"}));

  // Same state, overlapping tail: only the new line, no state event.
  auto e3 = t.observe(snap(RunState::Running, 1, 1, "b\nc\n"), 2.0);
  ASSERT_EQ(e3.size(), 1u);
  EXPECT_EQ(e3[0]["event"], "log");
  EXPECT_EQ(e3[0]["lines"], nlohmann::json({"c"}));

  // Nothing new at all.
  EXPECT_TRUE(t.observe(snap(RunState::Running, 1, 1, "b\nc\n"), 3.0).empty());
}

TEST(ClientProgress, TakeoverStartsANewLog) {
  ProgressTracker t;
  t.observe(snap(RunState::Running, 1, 1, "x\ny\n"), 0.0);
  auto e = t.observe(snap(RunState::Running, 2, 2, "x\ny\n"), 1.0);  // re-run prints the same lines
  ASSERT_EQ(e.size(), 2u);
  EXPECT_EQ(e[0]["event"], "state");
  EXPECT_EQ(e[0]["claim_gen"], 2);
  EXPECT_EQ(e[1]["lines"], nlohmann::json({"x", "y"}));
}

TEST(ClientProgress, PrinterModes) {
  std::ostringstream human, json;
  nlohmann::json ev{{"event", "state"}, {"state", "running"}, {"reason", "started"}, {"runner_id", "h"},
                    {"claim_gen", 1},    {"attempt", 1},       {"t", 1.5}};
  ProgressPrinter(ProgressPrinter::Mode::Json, human, json).emit(ev);
  EXPECT_EQ(nlohmann::json::parse(json.str()), ev);
  EXPECT_EQ(json.str().find('\n'), json.str().size() - 1);  // exactly one line
  ProgressPrinter(ProgressPrinter::Mode::Human, human, json).emit(ev);
  EXPECT_NE(human.str().find("running on runner h: started"), std::string::npos);
  std::ostringstream h2, j2;
  ProgressPrinter(ProgressPrinter::Mode::Quiet, h2, j2).emit(ev);
  EXPECT_TRUE(h2.str().empty() && j2.str().empty());
}

TEST(ClientWaitSummary, DoneEventCarriesJobExitCodeAndResults) {
  WaitResult r;
  r.last = snap(RunState::Failed, 1, 1, "");
  r.last.status.reason = "exit 3";
  bridge::RunSummary summary;
  summary.state = RunState::Failed;
  summary.run = bridge::ClaimedRun{};
  summary.run->command = bridge::CommandOutcome{3, 0, 2.5, "2026-01-02T03:04:05Z", {}};
  r.last.summary = summary;
  r.exit_code = wait_exit_code(r.last.status.state);
  r.seconds = 4.0;
  r.results = {".kakeya/run/results/report.json"};
  auto d = done_event(r);
  EXPECT_EQ(d["event"], "done");
  EXPECT_EQ(d["state"], "failed");
  EXPECT_EQ(d["exit_code"], 1);
  EXPECT_EQ(d["job_exit_code"], 3);
  EXPECT_EQ(d["job_seconds"], 2.5);
  std::string text = format_summary(d);
  EXPECT_NE(text.find("state:     failed"), std::string::npos);
  EXPECT_NE(text.find("job exited 3"), std::string::npos);
  EXPECT_NE(text.find(".kakeya/run/results/report.json"), std::string::npos);
}

TEST(ClientWaitSummary, NoCommandMeansNullJobFields) {
  WaitResult r;
  r.last = snap(RunState::Rejected, 0, 0, "");
  EXPECT_TRUE(done_event(r)["job_exit_code"].is_null());  // no summary at all
  bridge::RunSummary receipt;  // a reject: a receipt without a run
  receipt.state = RunState::Rejected;
  r.last.summary = receipt;
  EXPECT_TRUE(done_event(r)["job_exit_code"].is_null());
  receipt.run = bridge::ClaimedRun{};  // claimed, but the command never started
  r.last.summary = receipt;
  const auto d = done_event(r);
  EXPECT_TRUE(d["job_exit_code"].is_null());
  EXPECT_TRUE(d["job_seconds"].is_null());
  EXPECT_EQ(format_summary(d).find("job exited"), std::string::npos);
}

}  // namespace
}  // namespace kakeya::client
