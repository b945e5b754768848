// Fleet proof (issue 3): leases, takeover and fencing with real runner processes.
//  - kill -9 mid-job, idempotent preset: another runner re-runs it after the lease (claim_gen 2,
//    attempt 2); the killed runner, restarted with the same id, does not publish over it.
//  - kill -9 mid-job, non-idempotent preset: infra_error, not re-run.
//  - a runner restarted after a crash resolves its own stale claim at once (no lease wait).
//  - a stalled (SIGSTOP) runner that wakes up after a takeover is fenced: it publishes nothing.
#include <gtest/gtest.h>
#include <signal.h>

#include <thread>

#include "bridge/layout.h"
#include "tests/harness/bus_world.h"
#include "tests/integration/fleet_util.h"

namespace kakeya::testing {
namespace {

using nlohmann::json;
using namespace fleet;

bool started(const BusWorld& w, const std::string& nonce, int times = 1) {
  return count_of(w.ledger_nonces(), nonce) >= times;
}

TEST(FleetTakeover, KilledRunnerIdempotentJobIsTakenOverAndRestartedRunnerDoesNotPublish) {
  BusWorld world(Transport::GitDaemon);
  auto ra = world.start_runner("ra", {{"heartbeat_s", "0.5"}});
  const std::string b = world.request({"test-idem", "-p", "sleep_ms=3000"});
  const std::string nonce = nonce_of(b, "test-idem");
  ASSERT_TRUE(wait_until([&] { return started(world, nonce); }, 30)) << ra->log();
  ASSERT_TRUE(wait_until([&] { return world.state(b) == "running"; }, 10));
  ra->signal(SIGKILL);
  ra->wait();

  auto rb = world.start_runner("rb", {{"heartbeat_s", "0.5"}, {"lease_s", "2"}});
  // Once rb holds the claim, the killed runner comes back with the same id.
  json st;
  ASSERT_TRUE(wait_until([&] { return (st = world.status(b)).is_object() && st.value("claim_gen", 0) == 2; }, 30))
      << rb->log();
  auto ra2 = world.start_runner("ra", {{"heartbeat_s", "0.5"}});
  st = world.wait_state(b, "terminal", 60);
  ASSERT_TRUE(st.is_object()) << rb->log();
  EXPECT_EQ(st["state"], "succeeded") << st.dump();
  EXPECT_EQ(st["runner_id"], "rb");
  EXPECT_EQ(st["claim_gen"], 2);
  EXPECT_EQ(st["attempt"], 2);
  EXPECT_NE(st["reason"].get<std::string>(), "");
  const json summary = json::parse(world.read_run_file(b, std::string(bridge::kSummaryPath)));
  EXPECT_EQ(summary["runner_id"], "rb");
  EXPECT_EQ(count_of(world.ledger_nonces(), nonce), 2);  // the killed attempt and the re-run
  // A little later nothing has changed: the restarted runner left the new owner's result alone.
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  EXPECT_EQ(world.status(b), st);
  EXPECT_EQ(count_of(world.ledger_nonces(), nonce), 2);
  ra2->signal(SIGTERM);
  EXPECT_EQ(ra2->wait().exit_code, 0);
}

TEST(FleetTakeover, KilledRunnerNonIdempotentJobEndsInInfraErrorWithoutRerun) {
  BusWorld world(Transport::GitDaemon);
  auto ra = world.start_runner("ra", {{"heartbeat_s", "0.5"}});
  const std::string b = world.request({"test-job", "-p", "sleep_ms=2000"});
  const std::string nonce = nonce_of(b, "test-job");
  ASSERT_TRUE(wait_until([&] { return started(world, nonce); }, 30)) << ra->log();
  ASSERT_TRUE(wait_until([&] { return world.state(b) == "running"; }, 10));
  ra->signal(SIGKILL);
  ra->wait();
  auto rb = world.start_runner("rb", {{"heartbeat_s", "0.5"}, {"lease_s", "2"}});
  const json st = world.wait_state(b, "terminal", 30);
  ASSERT_TRUE(st.is_object()) << rb->log();
  EXPECT_EQ(st["state"], "infra_error");
  EXPECT_NE(st["reason"].get<std::string>().find("not idempotent"), std::string::npos) << st.dump();
  EXPECT_NE(st["reason"].get<std::string>().find("ra"), std::string::npos) << st.dump();
  EXPECT_EQ(st["claim_gen"], 2);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  EXPECT_EQ(count_of(world.ledger_nonces(), nonce), 1) << "a non-idempotent job ran twice";
}

TEST(FleetTakeover, RestartedRunnerResolvesItsOwnStaleClaimWithoutWaitingForTheLease) {
  BusWorld world(Transport::GitDaemon);
  auto ra = world.start_runner("ra", {{"heartbeat_s", "0.5"}, {"lease_s", "300"}});
  const std::string b = world.request({"test-job", "-p", "sleep_ms=2000"});
  ASSERT_TRUE(wait_until([&] { return started(world, nonce_of(b, "test-job")); }, 30)) << ra->log();
  ASSERT_TRUE(wait_until([&] { return world.state(b) == "running"; }, 10));
  ra->signal(SIGKILL);
  ra->wait();
  auto ra2 = world.start_runner("ra", {{"heartbeat_s", "0.5"}, {"lease_s", "300"}});
  const json st = world.wait_state(b, "terminal", 20);  // far less than lease_s
  ASSERT_TRUE(st.is_object()) << ra2->log();
  EXPECT_EQ(st["state"], "infra_error");
  EXPECT_NE(st["reason"].get<std::string>().find("before a restart"), std::string::npos) << st.dump();
}

TEST(FleetTakeover, StalledRunnerIsFencedAfterTakeoverAndPublishesNothing) {
  BusWorld world(Transport::GitDaemon);
  auto ra = world.start_runner("ra", {{"heartbeat_s", "0.3"}, {"lease_s", "30"}});
  const std::string b = world.request({"test-idem", "-p", "sleep_ms=2500"});
  const std::string nonce = nonce_of(b, "test-idem");
  ASSERT_TRUE(wait_until([&] { return started(world, nonce); }, 30)) << ra->log();
  ASSERT_TRUE(wait_until([&] { return world.state(b) == "running"; }, 10));
  ra->signal(SIGSTOP);  // the runner stalls; its job keeps running in its own process group
  auto rb = world.start_runner("rb", {{"heartbeat_s", "0.3"}, {"lease_s", "1.5"}});
  ASSERT_TRUE(wait_until([&] { return world.status(b).value("claim_gen", 0) == 2; }, 30)) << rb->log();
  ra->signal(SIGCONT);
  const json st = world.wait_state(b, "terminal", 60);
  ASSERT_TRUE(st.is_object()) << rb->log();
  EXPECT_EQ(st["state"], "succeeded");
  EXPECT_EQ(st["runner_id"], "rb");
  EXPECT_EQ(st["claim_gen"], 2);
  ASSERT_TRUE(wait_until([&] { return ra->log().find("fenced") != std::string::npos; }, 15)) << ra->log();
  std::this_thread::sleep_for(std::chrono::milliseconds(600));
  EXPECT_EQ(world.status(b), st) << "the fenced runner published over the new owner";
  ra->signal(SIGTERM);
  EXPECT_EQ(ra->wait().exit_code, 0);
}

}  // namespace
}  // namespace kakeya::testing
