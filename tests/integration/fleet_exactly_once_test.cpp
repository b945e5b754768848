// Fleet proof (issue 3): 3 runners, 60 requests with random durations over a real git daemon.
// Every request ends in exactly one terminal state, each is executed exactly once (ledger), none
// is lost; max_jobs and labels are respected.
#include <gtest/gtest.h>

#include <random>
#include <set>

#include "tests/harness/bus_world.h"
#include "tests/integration/fleet_util.h"

namespace kakeya::testing {
namespace {

using nlohmann::json;
using namespace fleet;

TEST(FleetExactlyOnce, ThreeRunnersSixtyRequestsEachRunsOnceNoneLost) {
  BusWorld world(Transport::GitDaemon);
  auto r1 = world.start_runner("r1", {{"max_jobs", "2"}});
  auto r2 = world.start_runner("r2");
  auto r3 = world.start_runner("r3");
  std::mt19937 rng(20260807);
  std::uniform_int_distribution<int> sleep_ms(0, 400);
  std::vector<std::string> branches;
  std::map<std::string, std::string> expect;  // branch -> expected state
  for (int i = 0; i < 60; ++i) {
    const int code = i % 10 == 7 ? 3 : 0;
    const std::string b = world.request({"test-job", "-p", "sleep_ms=" + std::to_string(sleep_ms(rng)), "-p",
                                         "exit=" + std::to_string(code)});
    ASSERT_FALSE(b.empty());
    branches.push_back(b);
    expect[b] = code == 0 ? "succeeded" : "failed";
  }
  const auto st = world.wait_terminal(branches, 240);
  std::map<std::string, int> by_runner;
  for (const auto& b : branches) {
    ASSERT_TRUE(st.at(b).is_object()) << b << " never reached a terminal state\n" << r1->log();
    EXPECT_EQ(st.at(b)["state"], expect[b]) << b << st.at(b).dump();
    EXPECT_EQ(st.at(b)["claim_gen"], 1) << b;
    EXPECT_EQ(st.at(b)["attempt"], 1) << b;
    ++by_runner[st.at(b)["runner_id"].get<std::string>()];
  }
  const auto nonces = world.ledger_nonces();
  EXPECT_EQ(nonces.size(), 60u);
  for (const auto& b : branches) EXPECT_EQ(count_of(nonces, nonce_of(b, "test-job")), 1) << b;
  EXPECT_GE(by_runner.size(), 2u) << "the work was not shared";
  const auto spans = world.spans();
  EXPECT_EQ(spans.size(), 60u);
  EXPECT_LE(max_overlap(spans, "r1"), 2);
  EXPECT_LE(max_overlap(spans, "r2"), 1);
  EXPECT_LE(max_overlap(spans, "r3"), 1);
}

TEST(FleetExactlyOnce, LabelsAndMaxJobsAreRespected) {
  BusWorld world(Transport::GitDaemon);
  auto gpu = world.start_runner("gpu1", {{"labels", "[cpu, gpu]"}, {"max_jobs", "2"}});
  auto cpu = world.start_runner("cpu1", {{"labels", "[cpu]"}});
  std::vector<std::string> labelled, plain;
  for (int i = 0; i < 3; ++i) labelled.push_back(world.request({"test-labelled"}));
  for (int i = 0; i < 5; ++i) plain.push_back(world.request({"test-job", "-p", "sleep_ms=600"}));
  std::vector<std::string> all = labelled;
  all.insert(all.end(), plain.begin(), plain.end());
  const auto st = world.wait_terminal(all, 120);
  for (const auto& b : labelled) {
    ASSERT_TRUE(st.at(b).is_object()) << b << gpu->log();
    EXPECT_EQ(st.at(b)["state"], "succeeded");
    EXPECT_EQ(st.at(b)["runner_id"], "gpu1") << "a runner without the gpu label ran " << b;
  }
  for (const auto& b : plain) {
    ASSERT_TRUE(st.at(b).is_object()) << b;
    EXPECT_EQ(st.at(b)["state"], "succeeded");
  }
  const auto spans = world.spans();
  EXPECT_LE(max_overlap(spans, "gpu1"), 2);
  EXPECT_LE(max_overlap(spans, "cpu1"), 1);
  std::set<std::string> labelled_nonces;
  for (const auto& b : labelled) labelled_nonces.insert(nonce_of(b, "test-labelled"));
  int labelled_runs = 0;
  for (const auto& s : spans) {
    if (!labelled_nonces.count(s.nonce)) continue;
    ++labelled_runs;
    EXPECT_EQ(s.runner, "gpu1") << s.nonce;
  }
  EXPECT_EQ(labelled_runs, 3);
}

}  // namespace
}  // namespace kakeya::testing
