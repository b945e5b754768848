// Mixed fleets and the branch grammar (issue 10), with real runner processes on a real git daemon.
//  - Two runners with different catalogs: a request for a preset only one of them has is left
//    alone by the other and run by the one that has it; once that runner is gone (killed, so it
//    never said "stopped", and its lease ran out) the other rejects such a request, naming the
//    preset and that no live runner offers it.
//  - A runner whose branch moves faster than another runner can list and fetch it still counts as
//    offering its presets there.
//  - A runner whose branch is missing from a listing (deleted and re-created when its heartbeat
//    chain rolls over, or deleted for good) still counts as offering until its lease runs out.
//  - `kakeya presets` shows what the live runners offer, and says when it falls back to the local
//    catalog.
//  - A hosted agent's branch template: `kakeya request --prefix agents/kakeya- --suffix -b876`
//    (the value beginning with '-' as its own argv token) is served by a runner watching
//    `agents/kakeya-*`.
#include <gtest/gtest.h>
#include <signal.h>

#include <fstream>
#include <sstream>
#include <thread>

#include "bridge/branch.h"
#include "bridge/json_text.h"
#include "bridge/runner_doc.h"
#include "tests/harness/bus_world.h"
#include "tests/harness/fault_proxy.h"
#include "tests/integration/fleet_util.h"

namespace kakeya::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using namespace fleet;

// The world's test catalog plus two presets only runner "rb" has: test-b-only, and test-b-sleep,
// which sleeps a minute.
fs::path write_catalog_b(const BusWorld& w) {
  std::ifstream in(w.catalog_path());
  std::stringstream ss;
  ss << in.rdbuf();
  const fs::path p = w.dir() / "presets-b.yaml";
  const std::string job = (binary_dir() / "kakeya-test-job").string();
  std::ofstream(p) << ss.str() << "  - name: test-b-only\n"
                   << "    description: Only runner rb has this preset\n"
                   << "    argv: [" << job << ", --echo, only-b]\n"
                   << "    env: [KAKEYA_TEST_LEDGER]\n"
                   << "    timeout_s: 30\n"
                   << "  - name: test-b-sleep\n"
                   << "    description: Only runner rb has this preset; it sleeps a minute\n"
                   << "    argv: [" << job << ", --sleep-ms, \"60000\"]\n"
                   << "    timeout_s: 120\n";
  return p;
}

// `kakeya presets --json` as seen with the given catalog.
json presets_view(BusWorld& w, const fs::path& catalog, const std::string& within) {
  const CmdResult r = w.kakeya({"presets", "--json", "--within", within}, {{"KAKEYA_CATALOG", catalog.string()}});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(r.out, nullptr, false);
  return j.is_discarded() ? json(nullptr) : j;
}

std::vector<std::string> offered_by(const json& view, const std::string& preset) {
  if (!view.is_object()) return {};
  for (const auto& p : view["presets"]) {
    if (p["name"] == preset) return p["offered_by"].get<std::vector<std::string>>();
  }
  return {};
}

TEST(FleetMixed, PresetOnlyAnotherLiveRunnerHasIsLeftToItThenRejectedWhenNoneIsLive) {
  BusWorld world(Transport::GitDaemon);
  const fs::path catalog_b = write_catalog_b(world);
  // ra counts rb live while rb's branch has moved within ra's lease_s (10 s). A CI run of the
  // suite on 2 cores once saw ra reject b1 while rb was claiming it (rb won the compare-and-swap,
  // so nothing ran twice); it was read then as ra seeing no move for a 3 s lease, but the likelier
  // cause was ra dropping rb's offer whenever rb's 0.5 s heartbeats moved its branch between ra's
  // listing and its fetch (PeerMovingBetweenListingAndFetchStillCountsAsOffering, below).
  auto ra = world.start_runner("ra", {{"heartbeat_s", "0.5"}, {"lease_s", "10"}});
  auto rb = world.start_runner("rb", {{"heartbeat_s", "0.5"}, {"catalog_path", catalog_b.string()}});

  // Both runners publish what they offer; the client sees it (with catalog B for the details).
  json view;
  ASSERT_TRUE(wait_until(
      [&] {
        view = presets_view(world, catalog_b, "1m");
        return offered_by(view, "test-b-only") == std::vector<std::string>{"rb"} &&
               offered_by(view, "test-job").size() == 2;
      },
      30, 0.3))
      << view.dump(2);
  EXPECT_EQ(view["source"], "runners");
  // ra reads runner branches on every poll (0.2 s): give it a few before the request appears.
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));

  // ra has no test-b-only: it leaves the request to rb, which runs it.
  const std::string b1 = world.request({"test-b-only"}, {{"KAKEYA_CATALOG", catalog_b.string()}});
  const json st1 = world.wait_state(b1, "terminal", 60);
  ASSERT_TRUE(st1.is_object()) << ra->log() << rb->log();
  EXPECT_EQ(st1["state"], "succeeded") << st1.dump();
  EXPECT_EQ(st1["runner_id"], "rb");
  EXPECT_EQ(count_of(world.ledger_nonces(), nonce_of(b1, "test-b-only")), 1);
  EXPECT_EQ(ra->log().find(b1 + ": rejected"), std::string::npos) << ra->log();

  // rb dies without saying so. Once its branch has not moved for ra's lease_s, no live runner
  // offers test-b-only and ra rejects such a request, saying why.
  rb->signal(SIGKILL);
  rb->wait();
  const std::string b2 = world.request({"test-b-only"}, {{"KAKEYA_CATALOG", catalog_b.string()}});
  const json st2 = world.wait_state(b2, "terminal", 60);
  ASSERT_TRUE(st2.is_object()) << ra->log();
  EXPECT_EQ(st2["state"], "rejected") << st2.dump();
  EXPECT_EQ(st2["runner_id"], "ra");
  const std::string reason = st2.value("reason", "");
  EXPECT_NE(reason.find("'test-b-only'"), std::string::npos) << reason;
  EXPECT_NE(reason.find("no live runner offers it"), std::string::npos) << reason;
  EXPECT_EQ(count_of(world.ledger_nonces(), nonce_of(b2, "test-b-only")), 0);

  // The client no longer counts rb once its heartbeat is older than --within.
  ASSERT_TRUE(wait_until([&] { return offered_by(presets_view(world, catalog_b, "2s"), "test-b-only").empty(); }, 30,
                         0.5));
  // With no runner live at all it falls back to the local catalog and says so.
  ra->signal(SIGTERM);
  EXPECT_EQ(ra->wait().exit_code, 0);
  const json fallback = presets_view(world, catalog_b, "1s");
  ASSERT_TRUE(fallback.is_object());
  EXPECT_EQ(fallback["source"], "local_catalog");
  EXPECT_NE(fallback["note"].get<std::string>().find("no runner seen within"), std::string::npos) << fallback.dump();
  EXPECT_NE(fallback["note"].get<std::string>().find("presets-b.yaml"), std::string::npos) << fallback.dump();
  bool has_b = false;
  for (const auto& p : fallback["presets"]) has_b = has_b || p["name"] == "test-b-only";
  EXPECT_TRUE(has_b) << fallback.dump();
}

// A runner whose branch moves between another runner's listing and that runner's fetch (it
// heartbeats faster than the other's round trip to the server) still counts, there, as offering
// its presets: the fetch finds a newer tip than the one listed, and that commit's runner.json is
// read. Before, the other runner dropped the peer's offer at every move and read a new one only
// when the fetched tip was the listed one, so here it rejected a request the peer offered ("no
// live runner offers it"). ra reaches the server through a proxy that delays every chunk 300 ms;
// rb's branch moves every 0.2-0.4 s. rb is busy with a job (max_jobs 1), so a test-b-only request
// stays queued while rb is live, and ra looks at it again at every poll.
TEST(FleetMixed, PeerMovingBetweenListingAndFetchStillCountsAsOffering) {
  BusWorld world(Transport::GitDaemon);
  const fs::path catalog_b = write_catalog_b(world);
  auto proxy = FaultProxy::start(world.server_port());
  ASSERT_TRUE(proxy);
  proxy->set_mode(FaultProxy::Mode::Delay, 300);
  auto ra = world.start_runner("ra", {{"remote_url", world.remote_via(proxy->port())}});
  auto rb = world.start_runner("rb", {{"heartbeat_s", "0.2"}, {"catalog_path", catalog_b.string()}});
  json view;
  ASSERT_TRUE(wait_until(
      [&] {
        view = presets_view(world, catalog_b, "1m");
        return offered_by(view, "test-b-sleep") == std::vector<std::string>{"rb"};
      },
      30, 0.3))
      << view.dump(2) << rb->log();
  const std::string busy = world.request({"test-b-sleep"}, {{"KAKEYA_CATALOG", catalog_b.string()}});
  ASSERT_TRUE(world.wait_state(busy, "running", 60).is_object()) << ra->log() << rb->log();

  const std::string b = world.request({"test-b-only"}, {{"KAKEYA_CATALOG", catalog_b.string()}});
  const std::string left_to_rb = b + ": preset 'test-b-only' is not in this runner's catalog; live runner(s) rb offer it";
  auto times_left = [&] { return count_in(ra->log(), left_to_rb); };
  ASSERT_TRUE(wait_until([&] { return times_left() >= 3 || ra->log().find(b + ": rejected") != std::string::npos; },
                         90, 0.5))
      << ra->log();
  EXPECT_EQ(ra->log().find(b + ": rejected"), std::string::npos) << ra->log();
  EXPECT_GE(times_left(), 3) << ra->log();
  EXPECT_EQ(world.state(b), "");  // still queued: rb is live, offers it and is busy
}

// A peer's runner branch that is missing from a listing still counts as offering until the peer's
// lease runs out. A runner rolls its heartbeat chain over every kMaxBeatDepth beats by deleting its
// branch and creating it again (RunnerBeat::publish); the fresh-clone CI run of a407982 saw ra list
// the refs between the two, forget rb and reject a test-b-only request rb offered, in
// PeerMovingBetweenListingAndFetchStillCountsAsOffering above. Here the peer "rf" is a runner
// branch the test writes and then deletes for good: ra, with lease_s 6, must go on leaving the
// request to rf for polls after the deletion, then reject it once rf's lease has run out.
TEST(FleetMixed, PeerBranchMissingFromAListingCountsUntilItsLeaseRunsOut) {
  BusWorld world(Transport::GitDaemon);
  const fs::path catalog_b = write_catalog_b(world);
  auto ra = world.start_runner("ra", {{"lease_s", "6"}});

  bridge::RunnerDoc doc;
  doc.id = "rf";
  doc.state = "serving";
  doc.max_jobs = 1;
  doc.heartbeat_s = 0.5;
  doc.presets = {"test-b-only"};
  bridge::GitBus& bus = world.bus();
  const std::string ref = bridge::to_heads_ref(bridge::runner_branch_name("rf"));
  auto commit = bus.make_commit(std::nullopt, std::nullopt,
                                {{bridge::kRunnerDocFile, bridge::to_json_file(bridge::to_json(doc))}},
                                "runner rf serving", {"rf", "rf@example.com", {}});
  ASSERT_TRUE(commit.ok()) << commit.error().str();
  auto pushed = bus.push_cas(ref, *commit, std::nullopt);
  ASSERT_TRUE(pushed.ok()) << pushed.error().str();
  ASSERT_EQ(*pushed, bridge::PushOutcome::Won);

  const std::string b = world.request({"test-b-only"}, {{"KAKEYA_CATALOG", catalog_b.string()}});
  const std::string left_to_rf = b + ": preset 'test-b-only' is not in this runner's catalog; live runner(s) rf offer it";
  auto times_left = [&] { return count_in(ra->log(), left_to_rf); };
  ASSERT_TRUE(wait_until([&] { return times_left() >= 1 || ra->log().find(b + ": rejected") != std::string::npos; },
                         30, 0.1))
      << ra->log();
  ASSERT_GE(times_left(), 1) << ra->log();

  auto deleted = bus.delete_cas(ref, *commit);
  ASSERT_TRUE(deleted.ok()) << deleted.error().str();
  ASSERT_EQ(*deleted, bridge::PushOutcome::Won);
  const int left_before_delete = times_left();

  // ra polls every 0.2 s; the one in flight at the deletion may still have listed rf's branch,
  // so two more leavings mean at least one poll that listed no rf branch left the request to rf.
  const json st = world.wait_state(b, "terminal", 60);
  ASSERT_TRUE(st.is_object()) << ra->log();
  EXPECT_GE(times_left() - left_before_delete, 2) << ra->log();
  EXPECT_EQ(st["state"], "rejected") << st.dump();
  EXPECT_EQ(st["runner_id"], "ra");
  EXPECT_NE(st.value("reason", "").find("no live runner offers it"), std::string::npos) << st.dump();
  ra->signal(SIGTERM);
  EXPECT_EQ(ra->wait().exit_code, 0);
}

TEST(FleetMixed, HostedAgentBranchTemplateWithDashSuffix) {
  BusWorld world(Transport::GitDaemon);
  auto r = world.start_runner("ra", {{"branch_patterns", R"(["kakeya/req/**", "agents/kakeya-*"])"}});
  // "--suffix" and "-b876" are two argv tokens: the value begins with '-' and is still the value.
  const std::string b = world.request({"test-job", "--prefix", "agents/kakeya-", "--suffix", "-b876"});
  ASSERT_EQ(b.rfind("agents/kakeya-test-job-", 0), 0u) << b;
  ASSERT_TRUE(b.ends_with("-b876")) << b;
  const json st = world.wait_state(b, "terminal", 60);
  ASSERT_TRUE(st.is_object()) << r->log();
  EXPECT_EQ(st["state"], "succeeded") << st.dump();
  // The bare nonce resolves under the same prefix.
  const std::string nonce = b.substr(std::string("agents/kakeya-test-job-").size(),
                                     b.size() - std::string("agents/kakeya-test-job-").size() - 5);
  const CmdResult status = world.kakeya({"status", nonce, "--prefix", "agents/kakeya-", "--json"});
  ASSERT_EQ(status.exit_code, 0) << status.err;
  EXPECT_EQ(json::parse(status.out)["branch"], b);
  r->signal(SIGTERM);
  EXPECT_EQ(r->wait().exit_code, 0);
}

}  // namespace
}  // namespace kakeya::testing
