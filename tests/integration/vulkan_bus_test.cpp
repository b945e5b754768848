// A `vulkan` request over the bus (real git daemon, runner, engine processes): on a runner whose
// host has no Vulkan driver (VK_ICD_FILENAMES pointing at nothing) it ends `failed` with the
// engine's reason and never runs on the CPU, and the runner does not advertise `vulkan`; on a
// host with a device (Mesa's lavapipe here) the runner advertises it and the same request runs
// on the vulkan backend.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "bridge/layout.h"
#include "tests/harness/bus_world.h"

namespace kakeya::testing {
namespace {

using nlohmann::json;

std::string run_vulkan_request(BusWorld& world, RunnerProc& runner, json* status) {
  auto r = world.kakeya({"request", "probe-backend", "-p", "backend=vulkan", "--json", "--no-workload"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const std::string branch = json::parse(r.out).value("branch", "");
  const auto states = world.wait_terminal({branch}, 120);
  EXPECT_EQ(states.size(), 1u) << runner.log();
  *status = world.status(branch);
  return branch;
}

TEST(VulkanBus, RequestOnARunnerWithoutADeviceFailsWithTheReason) {
  BusWorld world(Transport::GitDaemon);
  auto runner = world.start_runner("nogpu", {{"labels", "[cpu, vulkan]"}},
                                   {{"VK_ICD_FILENAMES", "/nonexistent/kakeya_icd.json"}});
  json st;
  const std::string branch = run_vulkan_request(world, *runner, &st);
  EXPECT_EQ(st["state"], "failed") << st.dump() << runner->log();
  EXPECT_NE(st["log_tail"].get<std::string>().find("backend_unavailable"), std::string::npos) << st.dump();
  // The configured `vulkan` label was dropped: no device was found.
  EXPECT_EQ(st["labels"], json::array({"cpu"})) << st.dump();
  EXPECT_NE(runner->log().find("label 'vulkan' dropped"), std::string::npos) << runner->log();
}

TEST(VulkanBus, RequestOnARunnerWithADeviceRunsOnVulkan) {
  BusWorld world(Transport::GitDaemon);
  auto runner = world.start_runner("gpu");
  json st;
  const std::string branch = run_vulkan_request(world, *runner, &st);
  if (st["state"] == "failed" && st["log_tail"].get<std::string>().find("backend_unavailable") != std::string::npos)
    GTEST_SKIP() << "no Vulkan device on this machine: " << st["log_tail"];
  EXPECT_EQ(st["state"], "succeeded") << st.dump() << runner->log();
  EXPECT_NE(std::find(st["labels"].begin(), st["labels"].end(), "vulkan"), st["labels"].end()) << st.dump();
  const json report = json::parse(world.read_run_file(branch, std::string(bridge::kResultsDir) + "report.json"));
  EXPECT_EQ(report["engine"]["backend"], "vulkan");
  EXPECT_EQ(report["engine"]["backend_requested"], "vulkan");
}

}  // namespace
}  // namespace kakeya::testing
