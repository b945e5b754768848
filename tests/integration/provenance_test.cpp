// Provenance end to end (DESIGN §2, issue 13) with real ssh-keygen keys, a real runner and the
// real client: a runner with identity.signing_key signs every commit it makes (real `git
// verify-commit` accepts them); `kakeya verify` accepts the run, and refuses it for a tampered
// result, an unsigned runner, and an allowed-signers file without the runner's key; a runner with
// request_signing rejects unsigned requests and requests by signers not allowed the preset, and
// runs those of authorised signers.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "bridge/layout.h"
#include "tests/harness/bus_world.h"
#include "tests/harness/ssh_keys.h"

namespace kakeya::testing {
namespace {

using nlohmann::json;

class ProvenanceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* name : {"runner_key", "other_key", "alice_key", "bob_key"}) {
      auto k = make_ssh_key(keys(), name);
      ASSERT_TRUE(k.ok()) << k.error().str();
    }
    write_signers("runner_signers", {{"runner@ci.example", "runner_key"}});
    write_signers("other_signers", {{"other@ci.example", "other_key"}});
    write_signers("request_signers", {{"alice@example.com", "alice_key"}, {"bob@example.com", "bob_key"}});
  }

  std::filesystem::path keys() const { return world_.dir(); }
  std::filesystem::path key(const std::string& name) const { return keys() / name; }

  void write_signers(const std::string& file, const std::vector<std::pair<std::string, std::string>>& lines) {
    std::ofstream out(keys() / file);
    for (const auto& [principal, k] : lines) {
      out << principal << " namespaces=\"git\" " << first_line(key(k).string() + ".pub") << "\n";
    }
  }

  std::string signing_identity() const {
    return "{name: kakeya-runner, email: runner@kakeya.invalid, signing_key: " + key("runner_key").string() + "}";
  }

  CmdResult verify(const std::string& branch, const std::string& signers_file) {
    return world_.kakeya({"verify", branch, "--allowed-signers", (keys() / signers_file).string(), "--json"});
  }

  // What anyone with push access can do: a commit over `branch`'s tip, made in a clone of the
  // server's repository, that writes `files` (path -> content) and claims to be a runner's.
  void push_forged_commit(const std::string& branch, const std::map<std::string, std::string>& files) {
    const auto clone = world_.dir() / ("forge-" + std::to_string(++forged_));
    const std::string srv = (world_.dir() / "srv" / "bus.git").string();
    ASSERT_TRUE(run_git({"clone", "-q", "--branch", branch, srv, clone.string()}).ok());
    for (const auto& [path, content] : files) {
      std::filesystem::create_directories((clone / path).parent_path());
      std::ofstream(clone / path) << content;
    }
    ASSERT_TRUE(run_git({"-C", clone.string(), "add", "-A"}).ok());
    ASSERT_TRUE(run_git({"-C", clone.string(), "-c", "user.name=kakeya-runner", "-c", "user.email=ghost@example.com",
                         "commit", "-q", "-m", "claim by ghost"})
                    .ok());
    ASSERT_TRUE(run_git({"-C", clone.string(), "push", "-q", "origin", "HEAD:refs/heads/" + branch}).ok());
  }
  // A status.json that says runner "ghost" claimed the request (and then went silent).
  static std::string ghost_claim() {
    return R"({"state": "claimed", "reason": "claimed", "runner_id": "ghost", "claim_gen": 1, "attempt": 1})";
  }

  Result<std::string> git_verify_commit(const std::string& oid, const std::string& signers_file) {
    return run_git({"-C", (world_.dir() / "srv" / "bus.git").string(), "-c",
                    "gpg.ssh.allowedSignersFile=" + (keys() / signers_file).string(), "verify-commit", oid});
  }

  BusWorld world_{Transport::GitDaemon};
  int forged_ = 0;
};

TEST_F(ProvenanceTest, SignedRunVerifiesAndTamperingIsCaught) {
  auto r = world_.start_runner("signer", {{"identity", signing_identity()}});
  const std::string branch = world_.request({"test-job", "-p", "lines=3"});
  ASSERT_EQ(world_.wait_state(branch, "terminal", 60)["state"], "succeeded") << r->log();

  auto ok = verify(branch, "runner_signers");
  ASSERT_EQ(ok.exit_code, 0) << ok.out << ok.err;
  const json rep = json::parse(ok.out);
  EXPECT_EQ(rep["verified"], true);
  ASSERT_GE(rep["commits"].size(), 2u) << rep.dump();  // claim, running/heartbeats, final
  for (const auto& c : rep["commits"]) {
    EXPECT_EQ(c["role"], "runner");
    EXPECT_EQ(c["principals"], json::array({"runner@ci.example"}));
  }
  EXPECT_EQ(rep["signed_tip"], rep["tip"]);
  EXPECT_TRUE(rep["results_tree"].is_string());
  // Real git agrees on every runner commit.
  for (const auto& c : rep["commits"]) {
    auto g = git_verify_commit(c["commit"], "runner_signers");
    EXPECT_TRUE(g.ok()) << c["commit"] << ": " << g.error().str();
  }

  // Wrong key: an allowed-signers file that does not list the runner's key.
  auto wrong = verify(branch, "other_signers");
  EXPECT_EQ(wrong.exit_code, 1) << wrong.out;
  EXPECT_EQ(json::parse(wrong.out)["error"]["code"], "untrusted_signer") << wrong.out;
  EXPECT_FALSE(git_verify_commit(rep["tip"], "other_signers").ok());

  // Tampered result: someone with push access rewrites result.json in an unsigned commit.
  bridge::GitBus& bus = world_.bus();
  const std::string ref = "refs/heads/" + branch;
  auto fetched = bus.fetch({ref});
  ASSERT_TRUE(fetched.ok());
  const std::string tip = fetched->at(ref);
  const std::string result_path = std::string(bridge::kResultsDir) + "result.json";
  auto forged = bus.make_commit(tip, tip, {{result_path, std::string("{\"tokens_per_s\": 1e9}\n")}},
                                "kakeya-runner: succeeded [skip ci]", {"kakeya-runner", "runner@kakeya.invalid"});
  ASSERT_TRUE(forged.ok()) << forged.error().str();
  ASSERT_EQ(*bus.push_cas(ref, *forged, tip), bridge::PushOutcome::Won);
  auto tampered = verify(branch, "runner_signers");
  EXPECT_EQ(tampered.exit_code, 1) << tampered.out;
  const json t = json::parse(tampered.out);
  EXPECT_EQ(t["verified"], false);
  EXPECT_EQ(t["error"]["code"], "tampered") << tampered.out;
  EXPECT_NE(t["error"]["message"].get<std::string>().find(result_path), std::string::npos) << tampered.out;
  EXPECT_NE(tampered.err.find(forged->substr(0, 12)), std::string::npos) << tampered.err;
}

TEST_F(ProvenanceTest, UnsignedRunnerAndClientCancelCommits) {
  // An unsigned runner (the default): its runs do not verify.
  auto plain = world_.start_runner("plain");
  const std::string unsigned_run = world_.request({"test-job"});
  ASSERT_EQ(world_.wait_state(unsigned_run, "terminal", 60)["state"], "succeeded") << plain->log();
  auto refused = verify(unsigned_run, "runner_signers");
  EXPECT_EQ(refused.exit_code, 1) << refused.out;
  EXPECT_EQ(json::parse(refused.out)["error"]["code"], "tampered") << refused.out;
  plain->signal(SIGTERM);
  plain->wait();

  // A signed run cancelled by the client: the client's cancel commit is unsigned but changes
  // only cancel.json, so the run still verifies.
  auto r = world_.start_runner("signer", {{"identity", signing_identity()}});
  const std::string branch = world_.request({"test-job", "-p", "sleep_ms=60000"});
  ASSERT_TRUE(world_.wait_state(branch, "running", 30).is_object()) << r->log();
  ASSERT_EQ(world_.kakeya({"cancel", branch}).exit_code, 0);
  ASSERT_EQ(world_.wait_state(branch, "terminal", 30)["state"], "cancelled") << r->log();
  auto ok = verify(branch, "runner_signers");
  ASSERT_EQ(ok.exit_code, 0) << ok.out << ok.err;
  const json rep = json::parse(ok.out);
  int cancels = 0;
  for (const auto& c : rep["commits"]) cancels += c["role"] == "cancel" ? 1 : 0;
  EXPECT_EQ(cancels, 1) << ok.out;
}

TEST_F(ProvenanceTest, RunnerRequiresSignedRequestsFromAuthorisedSigners) {
  const std::string policy = "{allowed_signers: " + (keys() / "request_signers").string() +
                             ", presets: {alice@example.com: [test-job], bob@example.com: [env-probe]}}";
  auto r = world_.start_runner("strict", {{"request_signing", policy}});
  const std::string unsigned_req = world_.request({"test-job"});
  const std::string by_alice = world_.request({"test-job"}, {{"KAKEYA_SIGNING_KEY", key("alice_key").string()}});
  const std::string by_bob = world_.request({"test-job"}, {{"KAKEYA_SIGNING_KEY", key("bob_key").string()}});
  const std::string by_stranger = world_.request({"test-job"}, {{"KAKEYA_SIGNING_KEY", key("other_key").string()}});
  const auto st = world_.wait_terminal({unsigned_req, by_alice, by_bob, by_stranger}, 60);

  EXPECT_EQ(st.at(by_alice)["state"], "succeeded") << r->log();
  EXPECT_EQ(st.at(unsigned_req)["state"], "rejected");
  EXPECT_NE(st.at(unsigned_req)["reason"].get<std::string>().find("is not signed"), std::string::npos)
      << st.at(unsigned_req).dump();
  EXPECT_EQ(st.at(by_bob)["state"], "rejected");
  EXPECT_NE(st.at(by_bob)["reason"].get<std::string>().find("bob@example.com"), std::string::npos)
      << st.at(by_bob).dump();
  EXPECT_NE(st.at(by_bob)["reason"].get<std::string>().find("may not run preset 'test-job'"), std::string::npos)
      << st.at(by_bob).dump();
  EXPECT_EQ(st.at(by_stranger)["state"], "rejected");
  EXPECT_NE(st.at(by_stranger)["reason"].get<std::string>().find("SHA256:"), std::string::npos)
      << st.at(by_stranger).dump();
  // Only alice's request ran.
  EXPECT_EQ(world_.ledger_nonces().size(), 1u);
}

// A claim vouches for nothing: a forged "claimed" status over an unsigned request, or over a
// signed request whose request.json it rewrites, is rejected when the lease runs out instead of
// taken over and run; a signed request under a forged claim is taken over and runs.
TEST_F(ProvenanceTest, TakeoverChecksTheRequestUnderTheClaim) {
  const std::string policy = "{allowed_signers: " + (keys() / "request_signers").string() +
                             ", presets: {alice@example.com: [test-job, test-idem]}}";
  const std::string unsigned_req = world_.request({"test-idem"});
  const std::string rewritten = world_.request({"test-idem"}, {{"KAKEYA_SIGNING_KEY", key("alice_key").string()}});
  const std::string by_alice = world_.request({"test-idem"}, {{"KAKEYA_SIGNING_KEY", key("alice_key").string()}});
  const std::string status_path(bridge::kStatusPath);
  push_forged_commit(unsigned_req, {{status_path, ghost_claim()}});
  push_forged_commit(by_alice, {{status_path, ghost_claim()}});
  const std::string request_json = world_.read_run_file(rewritten, std::string(bridge::kRequestPath));
  ASSERT_FALSE(request_json.empty());
  json changed = json::parse(request_json);
  changed["params"]["sleep_ms"] = 1;
  push_forged_commit(rewritten, {{status_path, ghost_claim()}, {std::string(bridge::kRequestPath), changed.dump()}});
  ASSERT_EQ(world_.state(unsigned_req), "claimed");

  auto r = world_.start_runner("strict", {{"request_signing", policy}, {"lease_s", "2"}});
  const auto st = world_.wait_terminal({unsigned_req, rewritten, by_alice}, 60);
  EXPECT_EQ(st.at(unsigned_req)["state"], "rejected") << r->log();
  EXPECT_NE(st.at(unsigned_req)["reason"].get<std::string>().find("is not signed"), std::string::npos)
      << st.at(unsigned_req).dump();
  EXPECT_EQ(st.at(unsigned_req)["claim_gen"], 2);
  EXPECT_EQ(st.at(rewritten)["state"], "rejected") << r->log();
  EXPECT_NE(st.at(rewritten)["reason"].get<std::string>().find(".kakeya/request.json"), std::string::npos)
      << st.at(rewritten).dump();
  EXPECT_EQ(st.at(by_alice)["state"], "succeeded") << st.at(by_alice).dump() << r->log();
  EXPECT_EQ(st.at(by_alice)["runner_id"], "strict");
  // Only alice's untouched request ran.
  EXPECT_EQ(world_.ledger_nonces().size(), 1u);
}

}  // namespace
}  // namespace kakeya::testing
