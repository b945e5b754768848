// kakeya_fleet_bench end to end, its discovery section only (a real lighttpd + git http-backend on
// loopback, a few finished request branches): the JSON it writes, and the documented exit 1 with
// the failed step named when a step fails (here: --out cannot be written), not an abort. Never a
// speed: only counts the section derives from the branches it made.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/engine/bench_tools.h"
#include "tests/harness/paths.h"

namespace kakeya::testing {
namespace {

bool fleet_bench_built() { return std::filesystem::exists(binary_dir() / "bench" / "kakeya_fleet_bench"); }

TEST(FleetBench, DiscoverySectionCountsTheBranchesItFinishedAndGarbageCollects) {
  if (!fleet_bench_built()) GTEST_SKIP() << "kakeya_fleet_bench is not built (needs -DKAKEYA_BENCH=ON)";
  TempDir tmp("fleet-bench");
  const auto out = tmp.path() / "fleet.json";
  const engine::test::BenchRun r = engine::test::run_bench_tool(
      "kakeya_fleet_bench", {"--only", "discovery", "--branches", "3", "--out", out.string()}, 120);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::ifstream f(out);
  const nlohmann::json j = nlohmann::json::parse(f);
  EXPECT_FALSE(j.contains("throughput"));
  EXPECT_FALSE(j.contains("env_probe"));
  const nlohmann::json& d = j.at("discovery");
  EXPECT_EQ(d.at("finished_branches"), 3);
  EXPECT_EQ(d.at("gc").at("deleted"), 3);
  ASSERT_FALSE(d.at("polls_before_gc").empty());
  EXPECT_EQ(d.at("polls_before_gc")[0].at("refs_seen"), 3);
  for (const nlohmann::json& poll : d.at("polls_after_gc")) EXPECT_EQ(poll.at("refs_seen"), 0);
}

TEST(FleetBench, UnwritableOutExitsOneNamingIt) {
  if (!fleet_bench_built()) GTEST_SKIP() << "kakeya_fleet_bench is not built (needs -DKAKEYA_BENCH=ON)";
  TempDir tmp("fleet-bench-out");
  const auto out = tmp.path() / "no-such-dir" / "fleet.json";
  const engine::test::BenchRun r = engine::test::run_bench_tool(
      "kakeya_fleet_bench", {"--only", "discovery", "--branches", "1", "--out", out.string()}, 120);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("fleet_bench: cannot write " + out.string()), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(out));
}

}  // namespace
}  // namespace kakeya::testing
