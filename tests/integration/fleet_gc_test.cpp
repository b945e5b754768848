// `kakeya gc --older-than D` (issues 3 and 10): deletes finished request branches with a CAS
// delete, never queued or running ones; --dry-run only lists; a too-young cutoff deletes nothing;
// a duration needs its unit; on a terminal it only lists unless told --yes.
#include <gtest/gtest.h>

#include <set>

#include "tests/harness/bus_world.h"
#include "tests/integration/fleet_util.h"

namespace kakeya::testing {
namespace {

using nlohmann::json;
using namespace fleet;

std::set<std::string> request_branches(BusWorld& w) {
  std::set<std::string> out;
  auto refs = w.bus().ls_remote("refs/heads/kakeya/req/");
  EXPECT_TRUE(refs.ok());
  if (refs.ok()) {
    for (const auto& r : *refs) out.insert(r.name.substr(11));
  }
  return out;
}

TEST(FleetGc, DeletesOnlyFinishedBranchesOlderThanTheCutoff) {
  BusWorld world(Transport::GitDaemon);
  auto r = world.start_runner("r1");
  std::vector<std::string> done;
  for (int i = 0; i < 3; ++i) done.push_back(world.request({"test-job", "-p", i == 2 ? "exit=4" : "exit=0"}));
  const auto st = world.wait_terminal(done, 60);
  for (const auto& b : done) ASSERT_TRUE(st.at(b).is_object()) << r->log();
  const std::string queued = world.request({"test-labelled"});  // no runner has the gpu label
  const std::string running = world.request({"test-long", "-p", "sleep_ms=60000"});
  ASSERT_TRUE(world.wait_state(running, "running", 30).is_object()) << r->log();

  auto young = world.kakeya({"gc", "--older-than", "1h", "--json"});
  ASSERT_EQ(young.exit_code, 0) << young.err;
  EXPECT_TRUE(json::parse(young.out)["candidates"].empty());

  auto dry = world.kakeya({"gc", "--older-than", "0s", "--dry-run", "--json"});
  ASSERT_EQ(dry.exit_code, 0) << dry.err;
  const json d = json::parse(dry.out);
  EXPECT_EQ(d["candidates"].size(), 3u) << d.dump();
  for (const auto& c : d["candidates"]) EXPECT_EQ(c["outcome"], "would_delete");
  EXPECT_EQ(request_branches(world).size(), 5u);

  auto real = world.kakeya({"gc", "--older-than", "0s", "--json"});
  ASSERT_EQ(real.exit_code, 0) << real.err;
  const json g = json::parse(real.out);
  std::set<std::string> deleted;
  for (const auto& c : g["candidates"]) {
    EXPECT_EQ(c["outcome"], "deleted") << c.dump();
    deleted.insert(c["branch"].get<std::string>());
  }
  EXPECT_EQ(deleted, std::set<std::string>(done.begin(), done.end()));
  EXPECT_EQ(request_branches(world), (std::set<std::string>{queued, running}));

  auto bad = world.kakeya({"gc", "--older-than", "soon"});
  EXPECT_EQ(bad.exit_code, 64) << bad.err;
  EXPECT_NE(bad.err.find("soon"), std::string::npos);
  auto bare = world.kakeya({"gc", "--older-than", "7"});  // 7 seconds or 7 days? Refused.
  EXPECT_EQ(bare.exit_code, 64) << bare.err;
  EXPECT_NE(bare.err.find("'7' has no unit"), std::string::npos) << bare.err;
  auto both = world.kakeya({"gc", "--older-than", "1d", "--dry-run", "--yes"});
  EXPECT_EQ(both.exit_code, 64) << both.err;

  // The running job is unaffected; end it.
  ASSERT_EQ(world.kakeya({"cancel", running}).exit_code, 0);
  world.wait_state(running, "terminal", 30);
  EXPECT_EQ(world.state(running), "cancelled");
}

// Runs the kakeya client the way a person at a terminal would: stdin (and stdout) on a
// pseudo-terminal, via util-linux script(1). Returns stdout+stderr with CRs removed.
CmdResult kakeya_on_a_terminal(BusWorld& world, const std::vector<std::string>& args) {
  auto quote = [](const std::string& s) {
    std::string q = "'";
    for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return q + "'";
  };
  std::string cmd = quote((binary_dir() / "kakeya").string());
  for (const auto& a : args) cmd += " " + quote(a);
  std::map<std::string, std::string> env = world.auth_env();
  env["KAKEYA_REMOTE"] = world.remote();
  env["KAKEYA_CATALOG"] = world.catalog_path().string();
  TempDir cache("kakeya-gc-cache");
  env["XDG_CACHE_HOME"] = cache.path().string();
  CmdResult r = run_cmd({"/usr/bin/script", "-qec", cmd, "/dev/null"}, env, 120);
  std::erase(r.out, '\r');
  return r;
}

TEST(FleetGc, ListsOnlyWhenStdinIsATerminalUnlessToldYes) {
  BusWorld world(Transport::GitDaemon);
  auto r = world.start_runner("r1");
  const std::string done = world.request({"test-job", "-p", "exit=0"});
  ASSERT_TRUE(world.wait_terminal({done}, 60).at(done).is_object()) << r->log();

  const CmdResult listed = kakeya_on_a_terminal(world, {"gc", "--older-than", "0s"});
  ASSERT_EQ(listed.exit_code, 0) << listed.out << listed.err;
  EXPECT_NE(listed.out.find("would_delete"), std::string::npos) << listed.out;
  EXPECT_NE(listed.out.find("run again with --yes"), std::string::npos) << listed.out;
  EXPECT_EQ(request_branches(world), (std::set<std::string>{done}));

  const CmdResult deleted = kakeya_on_a_terminal(world, {"gc", "--older-than", "0s", "--yes"});
  ASSERT_EQ(deleted.exit_code, 0) << deleted.out << deleted.err;
  EXPECT_NE(deleted.out.find("deleted 1 finished"), std::string::npos) << deleted.out;
  EXPECT_TRUE(request_branches(world).empty());
}

}  // namespace
}  // namespace kakeya::testing
