// Fleet proof (issue 3): `kakeya cancel` while queued (never runs), while running (process group
// gone, state cancelled), and after finish (no-op with a clear message), over smart HTTP.
#include <gtest/gtest.h>
#include <signal.h>

#include <cerrno>

#include "bridge/layout.h"
#include "client/cancel.h"
#include "tests/harness/bus_world.h"
#include "tests/integration/fleet_util.h"

namespace kakeya::testing {
namespace {

using nlohmann::json;
using namespace fleet;

TEST(FleetCancel, QueuedRunningAndFinished) {
  BusWorld world(Transport::Http);
  // 1. Cancel while queued: no runner yet.
  const std::string queued = world.request({"test-job"});
  auto c1 = world.kakeya({"cancel", queued, "--json"});
  ASSERT_EQ(c1.exit_code, 0) << c1.err;
  const json j1 = json::parse(c1.out);
  EXPECT_TRUE(j1["requested"].get<bool>());
  EXPECT_EQ(j1["state"], "queued");

  auto runner = world.start_runner("r1", {{"heartbeat_s", "2"}});
  json st = world.wait_state(queued, "terminal", 30);
  ASSERT_TRUE(st.is_object()) << runner->log();
  EXPECT_EQ(st["state"], "cancelled");
  EXPECT_TRUE(world.ledger_lines().empty()) << "a request cancelled while queued ran";

  // 2. Cancel while running: the whole process group goes, the state is cancelled.
  const std::string running = world.request({"test-long", "-p", "sleep_ms=60000"});
  const std::string nonce = nonce_of(running, "test-long");
  ASSERT_TRUE(wait_until([&] { return count_of(world.ledger_nonces(), nonce) == 1; }, 30)) << runner->log();
  ASSERT_TRUE(wait_until([&] { return world.state(running) == "running"; }, 10));
  const auto line = world.ledger_lines().back();
  const pid_t job_pid = static_cast<pid_t>(std::stol(line.substr(line.rfind(' ') + 1)));
  auto c2 = world.kakeya({"cancel", running, "--reason", "test says stop"});
  ASSERT_EQ(c2.exit_code, 0) << c2.err;
  st = world.wait_state(running, "terminal", 30);
  ASSERT_TRUE(st.is_object()) << runner->log();
  EXPECT_EQ(st["state"], "cancelled");
  EXPECT_NE(st["reason"].get<std::string>().find("cancel"), std::string::npos);
  EXPECT_FALSE(alive(job_pid)) << "job process survived the cancel";
  const std::string gc_text = world.read_run_file(running, std::string(bridge::kResultsDir) + "grandchild.pid");
  ASSERT_FALSE(gc_text.empty());
  const pid_t grandchild = static_cast<pid_t>(std::stol(gc_text));
  errno = 0;
  EXPECT_EQ(::kill(grandchild, 0), -1);
  EXPECT_EQ(errno, ESRCH) << "grandchild " << grandchild << " survived the cancel";

  // 3. Cancel after finish: a no-op with a clear message; the branch does not move.
  const std::string done = world.request({"test-job"});
  st = world.wait_state(done, "terminal", 30);
  ASSERT_TRUE(st.is_object());
  ASSERT_EQ(st["state"], "succeeded");
  auto refs_before = world.bus().ls_remote("refs/heads/" + done);
  ASSERT_TRUE(refs_before.ok());
  auto c3 = world.kakeya({"cancel", done});
  EXPECT_EQ(c3.exit_code, 0) << c3.err;
  EXPECT_NE(c3.out.find("already succeeded"), std::string::npos) << c3.out;
  auto c4 = world.kakeya({"cancel", done, "--json"});
  EXPECT_FALSE(json::parse(c4.out)["requested"].get<bool>());
  auto refs_after = world.bus().ls_remote("refs/heads/" + done);
  ASSERT_TRUE(refs_after.ok());
  ASSERT_EQ(refs_after->size(), 1u);
  EXPECT_EQ(refs_after->at(0).oid, refs_before->at(0).oid) << "cancel after finish moved the branch";
  EXPECT_EQ(world.status(done)["state"], "succeeded");
}

// A running job's heartbeats can land between a cancel's fetch and its push (the CI failure of
// 62f3782: five quick losses to 0.5 s heartbeats under ASan). The cancel retries until its
// patience runs out, loses nothing another writer committed, and when it gives up says how often
// it lost. The races are made exact: the branch is moved between the commit and its push.
TEST(FleetCancel, OutlastsCommitsRacingItAndNamesItsAttemptsWhenItGivesUp) {
  BusWorld world(Transport::GitDaemon);
  auto opened = bridge::GitBus::open(world.remote(), world.dir() / "client-cache", bridge::Credentials{});
  ASSERT_TRUE(opened.ok()) << opened.error().str();
  bridge::GitBus client_bus = std::move(opened).value();
  int moves = 0;
  auto move_branch = [&](const std::string& branch) {  // another writer's commit, as a heartbeat is
    const std::string ref = "refs/heads/" + branch;
    auto fetched = world.bus().fetch({ref});
    ASSERT_TRUE(fetched.ok()) << fetched.error().str();
    const std::string tip = fetched->at(ref);
    const std::string path = "notes/move-" + std::to_string(++moves) + ".txt";
    auto c = world.bus().make_commit(tip, tip, {{path, std::string("a commit racing the cancel\n")}}, "racer",
                                     bridge::CommitAuthor{"Racer", "racer@kakeya.invalid", {}});
    ASSERT_TRUE(c.ok()) << c.error().str();
    auto pushed = world.bus().push_cas(ref, *c, tip);
    ASSERT_TRUE(pushed.ok()) << pushed.error().str();
    ASSERT_EQ(*pushed, bridge::PushOutcome::Won);
  };

  // Three pushes lost, the fourth wins; the racer's three commits stay under the cancel.
  const std::string branch = world.request({"test-job"});
  std::vector<int> lost;
  client::CancelOptions options;
  options.on_lost = [&](int attempts) { lost.push_back(attempts); };
  options.before_push = [&] {
    if (moves < 3) move_branch(branch);
  };
  auto won = client::request_cancel(client_bus, branch, "tester", "racing heartbeats", options);
  ASSERT_TRUE(won.ok()) << won.error().str();
  EXPECT_TRUE(won->requested);
  EXPECT_EQ(won->attempts, 4);
  EXPECT_EQ(lost, (std::vector<int>{1, 2, 3}));
  EXPECT_FALSE(world.read_run_file(branch, std::string(bridge::kCancelPath)).empty());
  auto tip_files = world.bus().list_dir(won->commit, "notes");
  ASSERT_TRUE(tip_files.ok()) << tip_files.error().str();
  EXPECT_EQ(tip_files->size(), 3u) << "a commit the cancel raced was lost";

  // A branch that moves before every push: the cancel gives up after its patience, naming the
  // attempts, and leaves no cancel.json.
  const std::string busy = world.request({"test-job"});
  lost.clear();
  options.patience_s = 1.0;
  options.before_push = [&] { move_branch(busy); };
  auto gave_up = client::request_cancel(client_bus, busy, "tester", "racing heartbeats", options);
  ASSERT_FALSE(gave_up.ok());
  EXPECT_EQ(gave_up.error().code, errc::kCancelLost);
  ASSERT_FALSE(lost.empty());
  const std::string times = " lost its compare-and-swap " + std::to_string(lost.back()) + " times in ";
  EXPECT_NE(gave_up.error().message.find(times), std::string::npos) << gave_up.error().str();
  EXPECT_NE(gave_up.error().message.find(busy), std::string::npos) << gave_up.error().str();
  EXPECT_TRUE(world.read_run_file(busy, std::string(bridge::kCancelPath)).empty());

  options.patience_s = -1;
  auto refused = client::request_cancel(client_bus, busy, "tester", "racing heartbeats", options);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, errc::kBadValue);
  EXPECT_NE(refused.error().message.find("-1"), std::string::npos) << refused.error().str();
}

}  // namespace
}  // namespace kakeya::testing
