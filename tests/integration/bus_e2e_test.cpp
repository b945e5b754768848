// End to end over real git servers on loopback (git daemon, and lighttpd + git http-backend with
// basic auth): the real `kakeya` client, the real `kakeya-runner`, real preset processes.
#include <gtest/gtest.h>
#include <signal.h>

#include <cerrno>
#include <fstream>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "bridge/exit_codes.h"
#include "bridge/layout.h"
#include "bridge/report_envelope.h"
#include "bridge/run_state.h"
#include "bridge/summary.h"
#include "tests/harness/bus_world.h"

namespace kakeya::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

class BusE2E : public ::testing::TestWithParam<Transport> {
 protected:
  void SetUp() override { world_ = std::make_unique<BusWorld>(GetParam()); }

  // `kakeya request ... --json`, returns the branch.
  std::string request(std::vector<std::string> args) {
    args.insert(args.begin(), "request");
    args.push_back("--json");
    args.push_back("--no-workload");
    auto r = world_->kakeya(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    auto j = json::parse(r.out, nullptr, false);
    EXPECT_FALSE(j.is_discarded()) << r.out;
    return j.is_discarded() ? "" : j.value("branch", "");
  }

  json status_of(const std::string& branch) {
    const std::string s = world_->read_run_file(branch, std::string(bridge::kStatusPath));
    return s.empty() ? json() : json::parse(s);
  }

  std::unique_ptr<BusWorld> world_;
};

TEST_P(BusE2E, EnvProbeRequestClaimRunResultsFetch) {
  auto runner = world_->start_runner("r1");
  auto run = world_->kakeya({"run", "env-probe", "--wait", "120", "--no-workload", "--json"});
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err << runner->log();
  const std::string branch = request({"env-probe"});
  auto wait = world_->kakeya({"wait", branch, "--wait", "120"});
  ASSERT_EQ(wait.exit_code, 0) << wait.out << wait.err << runner->log();

  const fs::path dest = world_->dir() / "fetched";
  auto fetch = world_->kakeya({"fetch", branch, "--dest", dest.string()});
  ASSERT_EQ(fetch.exit_code, 0) << fetch.err;
  const json report = json::parse(file_text(dest / "results" / "report.json"));
  EXPECT_EQ(report["kind"], "env-probe");
  EXPECT_GT(report["memory"]["total_bytes"].get<long long>(), 0);
  const json summary = json::parse(file_text(dest / "summary.json"));
  EXPECT_EQ(summary["state"], "succeeded");
  EXPECT_EQ(summary["exit_code"], 0);
  EXPECT_EQ(summary["runner_id"], "r1");
  EXPECT_EQ(summary["preset"], "env-probe");
  EXPECT_FALSE(summary["request_commit"].get<std::string>().empty());
  EXPECT_TRUE(fs::exists(dest / "logs" / "job.log"));
  EXPECT_TRUE(fs::exists(dest / "gate.json"));
  const json status = json::parse(file_text(dest / "status.json"));
  EXPECT_EQ(status["state"], "succeeded");
  EXPECT_EQ(status["claim_gen"], 1);

  // What the runner and the engine wrote passes the typed readers, and with them the schemas.
  auto typed = bridge::parse_summary(file_text(dest / "summary.json"));
  ASSERT_TRUE(typed.ok()) << typed.error().str();
  ASSERT_TRUE(typed->run && typed->run->command);
  EXPECT_EQ(typed->run->command->exit_code, 0);
  EXPECT_GT(typed->run->command->duration_s, 0);
  EXPECT_EQ(typed->run->outputs.size(), 1u);
  auto typed_status = bridge::parse_status(file_text(dest / "status.json"));
  EXPECT_TRUE(typed_status.ok()) << typed_status.error().str();
  auto envelope = bridge::read_report_envelope(report);
  EXPECT_TRUE(envelope.ok()) << envelope.error().str();
}

TEST_P(BusE2E, TwoRunnersRaceForTwentyRequestsEachRunsExactlyOnce) {
  std::vector<std::string> branches;
  for (int i = 0; i < 20; ++i) branches.push_back(request({"test-job", "-p", "sleep_ms=50"}));
  auto r1 = world_->start_runner("r1");
  auto r2 = world_->start_runner("r2");
  for (const auto& b : branches) {
    auto w = world_->kakeya({"wait", b, "--wait", "180"});
    ASSERT_EQ(w.exit_code, 0) << b << "\n" << w.out << w.err << r1->log() << r2->log();
  }
  const auto lines = world_->ledger_lines();
  EXPECT_EQ(lines.size(), 20u);
  std::set<std::string> nonces;
  for (const auto& l : lines) nonces.insert(l.substr(0, l.find(' ')));
  EXPECT_EQ(nonces.size(), 20u);
  for (const auto& b : branches) {
    const json st = status_of(b);
    EXPECT_EQ(st["state"], "succeeded") << b;
    EXPECT_EQ(st["claim_gen"], 1) << b;
  }
}

TEST_P(BusE2E, MalformedRequestIsRejectedOnItsBranchAndTheNextOneRuns) {
  // A hand-made request with schema_version true, pushed like a client would.
  auto& bus = world_->bus();
  const std::string bad_branch = "kakeya/req/test-job-badreq0001";
  const std::string bad = R"({"schema_version": true, "preset": "test-job", "params": {}, "nonce": "badreq0001",)"
                          R"( "requested_by": "t", "created_at": "2026-11-22T00:00:00Z", "client": {"name": "t", "version": "0"}})";
  auto c = bus.make_commit(std::nullopt, std::nullopt, {{std::string(bridge::kRequestPath), bad}}, "bad request",
                           {"t", "t@example.invalid"});
  ASSERT_TRUE(c.ok()) << c.error().str();
  auto p = bus.push_cas("refs/heads/" + bad_branch, c.value(), std::nullopt);
  ASSERT_TRUE(p.ok() && p.value() == bridge::PushOutcome::Won);
  const std::string good = request({"test-job"});
  auto runner = world_->start_runner("r1");
  auto w = world_->kakeya({"wait", good, "--wait", "120"});
  EXPECT_EQ(w.exit_code, 0) << w.err << runner->log();
  auto wb = world_->kakeya({"wait", bad_branch, "--wait", "60"});
  EXPECT_EQ(wb.exit_code, 1) << wb.out << wb.err;
  const json st = status_of(bad_branch);
  ASSERT_FALSE(st.is_null()) << runner->log();
  EXPECT_EQ(st["state"], "rejected");
  EXPECT_NE(st["reason"].get<std::string>().find("schema_version"), std::string::npos) << st.dump();
  auto receipt = bridge::parse_summary(world_->read_run_file(bad_branch, std::string(bridge::kSummaryPath)));
  ASSERT_TRUE(receipt.ok()) << receipt.error().str();
  EXPECT_EQ(receipt->state, bridge::RunState::Rejected);
  EXPECT_FALSE(receipt->run.has_value());  // rejected without a claim
  EXPECT_EQ(world_->ledger_lines().size(), 1u);  // only the good one ran
}

TEST_P(BusE2E, TimeoutEndsInTimeoutStateWithProcessGroupGone) {
  auto runner = world_->start_runner("r1");
  const std::string b = request({"test-timeout"});
  auto w = world_->kakeya({"wait", b, "--wait", "120"});
  EXPECT_EQ(w.exit_code, 1) << w.out << w.err;
  const json st = status_of(b);
  EXPECT_EQ(st["state"], "timeout") << st.dump() << runner->log();
  const std::string pid_text = world_->read_run_file(b, std::string(bridge::kResultsDir) + "grandchild.pid");
  ASSERT_FALSE(pid_text.empty());
  const pid_t gc = static_cast<pid_t>(std::stol(pid_text));
  ASSERT_GT(gc, 1);
  errno = 0;
  EXPECT_EQ(::kill(gc, 0), -1);
  EXPECT_EQ(errno, ESRCH) << "grandchild " << gc << " survived the timeout";
}

TEST_P(BusE2E, SecretsAreRedactedAndGitCredentialsNeverReachTheJob) {
  auto runner = world_->start_runner("r1", {}, {{"KAKEYA_TEST_SECRET", "hunter2-very-secret"}});
  const std::string b = request({"test-secret"});
  auto w = world_->kakeya({"wait", b, "--wait", "120"});
  ASSERT_EQ(w.exit_code, 0) << w.err << runner->log();
  const std::string log = world_->read_run_file(b, std::string(bridge::kLogsDir) + "job.log");
  EXPECT_EQ(log.find("hunter2-very-secret"), std::string::npos) << log;
  EXPECT_NE(log.find("KAKEYA_TEST_SECRET=[REDACTED]"), std::string::npos) << log;
  EXPECT_NE(log.find("KAKEYA_GIT_TOKEN=<unset>"), std::string::npos) << log;
  EXPECT_EQ(runner->log().find("s3cret-push-token"), std::string::npos);
}

TEST_P(BusE2E, RunnerOnceServesPendingRequestsAndExits) {
  std::vector<std::string> branches;
  for (int i = 0; i < 3; ++i) branches.push_back(request({"test-job", "-p", "exit=" + std::to_string(i == 2 ? 3 : 0)}));
  const auto cfg = world_->write_runner_config("once");
  std::map<std::string, std::string> env = world_->auth_env();
  env["KAKEYA_TEST_LEDGER"] = world_->ledger().string();
  auto r = run_cmd({(binary_dir() / "kakeya-runner").string(), "once", "--config", cfg.string()}, env, 120);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(status_of(branches[0])["state"], "succeeded");
  EXPECT_EQ(status_of(branches[1])["state"], "succeeded");
  const json st = status_of(branches[2]);
  EXPECT_EQ(st["state"], "failed");
  EXPECT_NE(st["reason"].get<std::string>().find("exit code 3"), std::string::npos);
  // A runner without the label never claims the labelled preset.
  const std::string labelled = request({"test-labelled"});
  auto r2 = run_cmd({(binary_dir() / "kakeya-runner").string(), "once", "--config", cfg.string()}, env, 60);
  EXPECT_EQ(r2.exit_code, 0);
  EXPECT_TRUE(status_of(labelled).is_null()) << "claimed without the gpu label";
}

TEST_P(BusE2E, WaitExitCodesForNeverClaimed) {
  const std::string b = request({"test-job"});
  auto w = world_->kakeya({"wait", b, "--wait", "1"});
  EXPECT_EQ(w.exit_code, 3) << w.out << w.err;
}

INSTANTIATE_TEST_SUITE_P(Transports, BusE2E, ::testing::Values(Transport::GitDaemon, Transport::Http),
                         [](const ::testing::TestParamInfo<Transport>& p) { return std::string(to_string(p.param)); });

// Wrong credentials fail fast with a clear error, for the client and the runner's doctor.
TEST(BusAuth, WrongPasswordFailsFastWithClearError) {
  BusWorld world(Transport::Http);
  auto r = world.kakeya({"request", "test-job", "--no-workload"}, {{"KAKEYA_GIT_TOKEN", "wrong-password"}}, 60);
  // Refused credentials are the documented retryable exit (75), not "the job failed" (1); the
  // message names where credentials come from instead of libgit2's wording.
  EXPECT_EQ(r.exit_code, kExitRemote) << r.out << r.err;
  EXPECT_NE(r.err.find("auth_failed"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("KAKEYA_GIT_TOKEN"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("allowed types"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("wrong-password"), std::string::npos) << "secret echoed: " << r.err;
}

// The client builds the request from committed objects only: the user's branch, index and
// dirty work tree are untouched, and uncommitted files are never absorbed.
TEST(BusClient, NeverTouchesTheUsersBranchIndexOrWorkTree) {
  BusWorld world(Transport::GitDaemon);
  const fs::path repo = world.dir() / "user-repo";
  auto git = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {"-C", repo.string(), "-c", "user.name=u", "-c", "user.email=u@example.invalid"});
    return run_git(args);
  };
  ASSERT_TRUE(run_git({"init", "-q", "-b", "feature", repo.string()}).ok());
  std::ofstream(repo / "a.txt") << "committed\n";
  ASSERT_TRUE(git({"add", "a.txt"}).ok());
  ASSERT_TRUE(git({"commit", "-qm", "one"}).ok());
  std::ofstream(repo / "a.txt") << "dirty edit\n";      // modified, unstaged
  std::ofstream(repo / "b.txt") << "staged only\n";     // staged, uncommitted
  ASSERT_TRUE(git({"add", "b.txt"}).ok());
  std::ofstream(repo / "c.txt") << "untracked\n";       // untracked
  const auto before_status = git({"status", "--porcelain=v1"});
  const auto before_head = git({"rev-parse", "HEAD"});
  const auto before_branch = git({"symbolic-ref", "HEAD"});
  const std::string before_index = file_text(repo / ".git" / "index");

  auto r = world.kakeya({"request", "test-job", "--repo", repo.string(), "--json"}, {}, 60, repo);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string branch = json::parse(r.out)["branch"];

  EXPECT_EQ(git({"status", "--porcelain=v1"}).value(), before_status.value());
  EXPECT_EQ(git({"rev-parse", "HEAD"}).value(), before_head.value());
  EXPECT_EQ(git({"symbolic-ref", "HEAD"}).value(), before_branch.value());
  EXPECT_EQ(file_text(repo / ".git" / "index"), before_index);
  EXPECT_EQ(file_text(repo / "a.txt"), "dirty edit\n");

  EXPECT_EQ(world.read_run_file(branch, "a.txt"), "committed\n");
  EXPECT_EQ(world.read_run_file(branch, "b.txt"), "");
  EXPECT_EQ(world.read_run_file(branch, "c.txt"), "");
  EXPECT_FALSE(world.read_run_file(branch, std::string(bridge::kRequestPath)).empty());
}

}  // namespace
}  // namespace kakeya::testing
