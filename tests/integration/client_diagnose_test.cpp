// Diagnosing a run from the client (issue 13): `kakeya run/wait` print why a run failed and the
// end of its log on stderr without a TTY; `kakeya logs` (whole log, one stream, --follow); the
// names users copy from output resolve.
#include <gtest/gtest.h>

#include "tests/harness/bus_world.h"

namespace kakeya::testing {
namespace {

std::string branch_nonce(const std::string& branch) { return branch.substr(branch.rfind('-') + 1); }

TEST(ClientDiagnose, FailedRunShowsReasonAndLogTailThenLogsShowsTheWholeLog) {
  BusWorld world(Transport::GitDaemon);
  auto r1 = world.start_runner("r1");
  auto run = world.kakeya({"run", "test-progress", "-p", "exit=3", "--wait", "60"});
  EXPECT_EQ(run.exit_code, 1) << run.err;
  EXPECT_NE(run.err.find(": failed: exit code 3"), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("  | generated: alpha beta"), std::string::npos) << run.err;
  const auto pos = run.err.find("kakeya logs ");
  ASSERT_NE(pos, std::string::npos) << run.err;
  const std::string branch = run.err.substr(pos + 12, run.err.find(')', pos) - pos - 12);
  ASSERT_EQ(world.state(branch), "failed") << branch;

  auto logs = world.kakeya({"logs", branch_nonce(branch)});
  EXPECT_EQ(logs.exit_code, 0) << logs.err;
  EXPECT_EQ(logs.out, world.read_run_file(branch, ".kakeya/run/logs/job.log"));
  EXPECT_NE(logs.out.find("generated: alpha beta\n"), std::string::npos) << logs.out;
  auto out = world.kakeya({"logs", "--stream", "stdout", branch});
  EXPECT_EQ(out.out, "generated: alpha beta\ndone\n") << out.err;
  auto err = world.kakeya({"logs", "--stream", "stderr", branch});
  EXPECT_EQ(err.out, "\rprogress 50%\rprogress 100%\n") << err.err;
  EXPECT_EQ(world.kakeya({"logs", "--stream", "both", branch}).exit_code, 64);

  // `wait` on the finished run says the same, without a TTY.
  auto wait = world.kakeya({"wait", branch_nonce(branch), "--wait", "5"});
  EXPECT_EQ(wait.exit_code, 1);
  EXPECT_NE(wait.err.find("  | generated: alpha beta"), std::string::npos) << wait.err;

  // The names users copy: the leaf without its namespace, a partial namespace, the nonce.
  const std::string leaf = branch.substr(std::string("kakeya/req/").size());
  for (const std::string& name : {branch, leaf, "req/" + leaf, branch_nonce(branch), "refs/heads/" + branch}) {
    auto st = world.kakeya({"status", "--json", name});
    EXPECT_EQ(st.exit_code, 0) << name << ": " << st.err;
    EXPECT_NE(st.out.find(branch), std::string::npos) << name;
  }
  EXPECT_EQ(world.kakeya({"status", "no-such-run-zzzz"}).exit_code, 1);
}

TEST(ClientDiagnose, LogsFollowsARunningJobThroughItsHeartbeats) {
  BusWorld world(Transport::GitDaemon);
  const std::string branch = world.request({"test-job", "-p", "sleep_ms=3000", "-p", "lines=3"});
  auto r1 = world.start_runner("r1", {{"heartbeat_s", "0.5"}});
  ASSERT_TRUE(world.wait_state(branch, "running", 30).is_object()) << r1->log();
  auto follow = world.kakeya({"logs", "--follow", "--poll", "0.2", branch}, {}, 60);
  EXPECT_EQ(follow.exit_code, 0) << follow.err;
  EXPECT_NE(follow.err.find("following its heartbeats"), std::string::npos) << follow.err;
  for (const char* line : {"line 0 of job", "line 2 of job", "done"}) {
    EXPECT_NE(follow.out.find(line), std::string::npos) << line << " in:\n" << follow.out;
  }
  EXPECT_EQ(world.state(branch), "succeeded");
}

}  // namespace
}  // namespace kakeya::testing
