// Fleet proof (issue 3): SIGTERM drains (the running job completes and publishes, nothing new is
// claimed, exit 0); a second SIGTERM cancels (state cancelled, process group gone, exit 0). The
// runner heartbeat branch shows what a runner runs and that it stopped (`kakeya runners`).
#include <gtest/gtest.h>
#include <signal.h>

#include <thread>

#include "tests/harness/bus_world.h"
#include "tests/integration/fleet_util.h"

namespace kakeya::testing {
namespace {

using nlohmann::json;
using namespace fleet;

json runner_entry(BusWorld& w, const std::string& id) {
  auto r = w.kakeya({"runners", "--all", "--json"});
  if (r.exit_code != 0) return nullptr;
  for (const auto& e : json::parse(r.out)) {
    if (e.value("id", "") == id) return e;
  }
  return nullptr;
}

TEST(FleetShutdown, SigtermDrainsThenSecondSigtermCancels) {
  BusWorld world(Transport::GitDaemon);
  // No Vulkan driver for this runner (the host may have lavapipe): its labels are exactly the
  // configured ones, without a detected `vulkan`.
  auto r1 = world.start_runner("r1", {{"labels", "[cpu, fast]"}, {"heartbeat_s", "0.5"}},
                               {{"VK_ICD_FILENAMES", "/nonexistent/kakeya_icd.json"}});
  const std::string a = world.request({"test-job", "-p", "sleep_ms=2500"});
  ASSERT_TRUE(wait_until([&] { return count_of(world.ledger_nonces(), nonce_of(a, "test-job")) == 1; }, 30))
      << r1->log();
  // The runner's heartbeat lists the job it runs, its labels and max_jobs.
  json e;
  ASSERT_TRUE(wait_until(
      [&] {
        e = runner_entry(world, "r1");
        return e.is_object() && e["running"].size() == 1;
      },
      10, 0.2))
      << e.dump();
  EXPECT_EQ(e["running"][0], a);
  EXPECT_EQ(e["labels"], json::array({"cpu", "fast"}));
  EXPECT_EQ(e["max_jobs"], 1);
  EXPECT_EQ(e["state"], "serving");
  auto table = world.kakeya({"runners"});
  EXPECT_EQ(table.exit_code, 0);
  EXPECT_NE(table.out.find("r1"), std::string::npos) << table.out;

  const std::string b = world.request({"test-job"});  // queued behind a (max_jobs 1)
  r1->signal(SIGTERM);
  const auto res = r1->wait();
  EXPECT_EQ(res.exit_code, 0) << r1->log();
  EXPECT_EQ(world.status(a)["state"], "succeeded") << r1->log();
  EXPECT_TRUE(world.status(b).is_null()) << "a draining runner claimed new work";
  e = runner_entry(world, "r1");
  ASSERT_TRUE(e.is_object());
  EXPECT_EQ(e["state"], "stopped");
  EXPECT_TRUE(e["running"].empty());

  // Second runner: b is served, then a long job is cancelled by the second SIGTERM.
  auto r2 = world.start_runner("r2", {{"heartbeat_s", "0.5"}});
  ASSERT_TRUE(world.wait_state(b, "succeeded", 30).is_object()) << r2->log();
  const std::string c = world.request({"test-long", "-p", "sleep_ms=60000"});
  ASSERT_TRUE(wait_until([&] { return count_of(world.ledger_nonces(), nonce_of(c, "test-long")) == 1; }, 30))
      << r2->log();
  const auto line = world.ledger_lines().back();
  const pid_t job_pid = static_cast<pid_t>(std::stol(line.substr(line.rfind(' ') + 1)));
  r2->signal(SIGTERM);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_TRUE(alive(job_pid)) << "the first SIGTERM must not stop the job";
  r2->signal(SIGTERM);
  const auto t0 = std::chrono::steady_clock::now();
  const auto res2 = r2->wait();
  EXPECT_EQ(res2.exit_code, 0) << r2->log();
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 30);
  const json st = world.status(c);
  ASSERT_TRUE(st.is_object());
  EXPECT_EQ(st["state"], "cancelled") << st.dump() << r2->log();
  EXPECT_FALSE(alive(job_pid));
}

}  // namespace
}  // namespace kakeya::testing
