// Fleet proof (issue 3): `kakeya cancel` while queued (never runs), while running (process group
// gone, state cancelled), and after finish (no-op with a clear message), over smart HTTP.
#include <gtest/gtest.h>
#include <signal.h>

#include <cerrno>

#include "bridge/layout.h"
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

  auto runner = world.start_runner("r1", {{"heartbeat_s", "0.5"}});
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

}  // namespace
}  // namespace kakeya::testing
