// Fleet proof under faults (issue 3):
//  - the git server is stopped during a job (well past 2x the poll interval): the runner keeps
//    running, spools the finished result and publishes it when the server is back;
//  - a black-holing proxy (connections accepted, never answered): every git operation hits its
//    deadline instead of hanging, and the job is published once the network is back;
//  - a slow (delaying) proxy still works;
//  - a second client push on a claimed request branch is handled without running it twice.
#include <gtest/gtest.h>

#include <thread>

#include "bridge/layout.h"
#include "tests/harness/bus_world.h"
#include "tests/harness/fault_proxy.h"
#include "tests/integration/fleet_util.h"

namespace kakeya::testing {
namespace {

using nlohmann::json;
using namespace fleet;

bool finished(const BusWorld& w, const std::string& nonce) {
  for (const auto& s : w.spans()) {
    if (s.nonce == nonce) return true;
  }
  return false;
}

TEST(FleetFaults, ServerDownDuringJobResultIsSpooledAndPublishedWhenItReturns) {
  BusWorld world(Transport::GitDaemon);
  auto r = world.start_runner("r1", {{"poll_interval_s", "0.5"},
                                     {"heartbeat_s", "0.5"},
                                     {"git_timeout_s", "2"},
                                     {"publish_retry_s", "1"}});
  const std::string b = world.request({"test-job", "-p", "sleep_ms=1500"});
  const std::string nonce = nonce_of(b, "test-job");
  ASSERT_TRUE(wait_until([&] { return world.state(b) == "running"; }, 30)) << r->log();
  world.stop_server();
  ASSERT_TRUE(wait_until([&] { return finished(world, nonce); }, 20));
  // Down for several poll intervals after the job ended: the result must wait on disk.
  ASSERT_TRUE(wait_until([&] { return spooled(world, "r1") == 1; }, 20)) << r->log();
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  EXPECT_TRUE(alive(r->pid())) << r->log();
  ASSERT_TRUE(world.restart_server().ok());
  const json st = world.wait_state(b, "terminal", 60);
  ASSERT_TRUE(st.is_object()) << r->log();
  EXPECT_EQ(st["state"], "succeeded");
  EXPECT_EQ(st["claim_gen"], 1);
  EXPECT_TRUE(wait_until([&] { return spooled(world, "r1") == 0; }, 10));
  EXPECT_EQ(count_of(world.ledger_nonces(), nonce), 1);
  EXPECT_NE(world.read_run_file(b, std::string(bridge::kResultsDir) + "result.json"), "");
  // The runner serves new work afterwards.
  const std::string b2 = world.request({"test-job"});
  world.wait_state(b2, "terminal", 30);
  EXPECT_EQ(world.state(b2), "succeeded") << r->log();
}

TEST(FleetFaults, BlackholedNetworkHitsDeadlinesNotHangsAndJobIsPublishedAfter) {
  BusWorld world(Transport::Http);
  auto proxy = FaultProxy::start(world.server_port());
  ASSERT_TRUE(proxy);
  auto r = world.start_runner("r1", {{"remote_url", world.remote_via(proxy->port())},
                                     {"poll_interval_s", "0.3"},
                                     {"heartbeat_s", "0.5"},
                                     {"git_timeout_s", "1"},
                                     {"publish_retry_s", "600"}});
  const std::string b = world.request({"test-job", "-p", "sleep_ms=2000"});
  const std::string nonce = nonce_of(b, "test-job");
  ASSERT_TRUE(wait_until([&] { return world.state(b) == "running"; }, 30)) << r->log();
  proxy->set_mode(FaultProxy::Mode::Blackhole);
  ASSERT_TRUE(wait_until([&] { return finished(world, nonce); }, 20));
  // Heartbeats, polls and the final publish all time out while the network is black-holed.
  ASSERT_TRUE(wait_until([&] { return r->log().find("exceeded op_timeout_s") != std::string::npos; }, 15))
      << r->log();
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  EXPECT_TRUE(world.state(b) == "running");
  proxy->set_mode(FaultProxy::Mode::Pass);
  json st = world.wait_state(b, "terminal", 60);
  ASSERT_TRUE(st.is_object()) << r->log();
  EXPECT_EQ(st["state"], "succeeded");
  EXPECT_EQ(count_of(world.ledger_nonces(), nonce), 1);
  // A slow network (every chunk delayed) still carries a whole request.
  proxy->set_mode(FaultProxy::Mode::Delay, 20);
  const std::string b2 = world.request({"test-job"});
  st = world.wait_state(b2, "terminal", 60);
  ASSERT_TRUE(st.is_object()) << r->log();
  EXPECT_EQ(st["state"], "succeeded");
  EXPECT_TRUE(alive(r->pid()));
}

TEST(FleetFaults, SecondClientPushAfterClaimIsHandledWithoutRunningTwice) {
  BusWorld world(Transport::GitDaemon);
  auto r1 = world.start_runner("r1", {{"heartbeat_s", "0.3"}});
  auto r2 = world.start_runner("r2", {{"heartbeat_s", "0.3"}, {"lease_s", "5"}});
  const std::string b = world.request({"test-job", "-p", "sleep_ms=2000"});
  const std::string ref = "refs/heads/" + b;
  ASSERT_TRUE(wait_until([&] { return world.state(b) == "running"; }, 30));
  // The client pushes another commit on the claimed branch (CAS; retried if a heartbeat wins).
  auto& bus = world.bus();
  bool pushed = false;
  for (int i = 0; i < 20 && !pushed; ++i) {
    auto oids = bus.fetch({ref});
    ASSERT_TRUE(oids.ok()) << oids.error().str();
    const std::string tip = oids->at(ref);
    auto c = bus.make_commit(tip, tip, {{"notes/extra.txt", "added after the claim\n"}}, "client note",
                             {"t", "t@example.invalid"});
    ASSERT_TRUE(c.ok()) << c.error().str();
    auto p = bus.push_cas(ref, c.value(), tip);
    ASSERT_TRUE(p.ok()) << p.error().str();
    pushed = p.value() == bridge::PushOutcome::Won;
  }
  ASSERT_TRUE(pushed);
  const json st = world.wait_state(b, "terminal", 60);
  ASSERT_TRUE(st.is_object()) << r1->log() << r2->log();
  EXPECT_EQ(st["state"], "succeeded");
  EXPECT_EQ(st["claim_gen"], 1);
  EXPECT_EQ(world.read_run_file(b, "notes/extra.txt"), "added after the claim\n");
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  EXPECT_EQ(count_of(world.ledger_nonces(), nonce_of(b, "test-job")), 1);
}

}  // namespace
}  // namespace kakeya::testing
