// Signed commits made by the git bus (CommitAuthor::signing_key) against real git: pushed to a git
// daemon, `git verify-commit` / `git log --show-signature` with an allowed-signers file accept
// them, and bridge/commit_signature.h agrees with git on good, unsigned, untrusted and tampered
// commits.
#include <gtest/gtest.h>

#include <fstream>

#include "bridge/commit_signature.h"
#include "bridge/gitbus.h"
#include "tests/harness/git_servers.h"
#include "tests/harness/paths.h"
#include "tests/harness/ssh_keys.h"

namespace kakeya::bridge {
namespace {

using testing::run_git;

class GitBusSigningTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto oid = testing::make_bare_repo(tmp_.path(), "bus.git");
    ASSERT_TRUE(oid.ok()) << oid.error().str();
    daemon_ = testing::GitDaemon::start(tmp_.path());
    ASSERT_NE(daemon_, nullptr);
    auto key = testing::make_ssh_key(tmp_.path(), "runner_key");
    auto other = testing::make_ssh_key(tmp_.path(), "other_key");
    ASSERT_TRUE(key.ok() && other.ok());
    key_ = *key;
    allowed_ = tmp_.path() / "allowed_signers";
    std::ofstream(allowed_) << "runner@example.com " << testing::first_line(key_.string() + ".pub") << "\n";
    other_allowed_ = tmp_.path() / "other_signers";
    std::ofstream(other_allowed_) << "other@example.com " << testing::first_line(other->string() + ".pub") << "\n";
    auto bus = GitBus::open(daemon_->url("bus.git"), tmp_.path() / "cache", Credentials{});
    ASSERT_TRUE(bus.ok()) << bus.error().str();
    bus_ = std::make_unique<GitBus>(std::move(bus).value());
  }

  // `git verify-commit` in the bare repository with `signers` as the allowed-signers file.
  Result<std::string> git_verify(const std::string& oid, const std::filesystem::path& signers) {
    return run_git({"-C", bare().string(), "-c", "gpg.ssh.allowedSignersFile=" + signers.string(), "verify-commit",
                    "--raw", oid});
  }
  std::filesystem::path bare() const { return tmp_.path() / "bus.git"; }

  std::string push_new(const std::string& ref, const CommitAuthor& author) {
    auto c = bus_->make_commit(std::nullopt, std::nullopt, {{".kakeya/run/status.json", std::string("{}\n")}},
                               "kakeya-runner: claimed [skip ci]", author);
    EXPECT_TRUE(c.ok()) << c.error().str();
    if (!c.ok()) return "";
    auto pushed = bus_->push_cas(ref, *c, std::nullopt);
    EXPECT_TRUE(pushed.ok() && *pushed == PushOutcome::Won);
    return *c;
  }

  testing::TempDir tmp_{"kakeya-signing"};
  std::unique_ptr<testing::GitDaemon> daemon_;
  std::unique_ptr<GitBus> bus_;
  std::filesystem::path key_, allowed_, other_allowed_;
};

TEST_F(GitBusSigningTest, GitVerifiesWhatTheBusSigns) {
  const std::string oid = push_new("refs/heads/signed", {"kakeya-runner", "runner@kakeya.invalid", key_});
  ASSERT_FALSE(oid.empty());

  auto git_ok = git_verify(oid, allowed_);
  ASSERT_TRUE(git_ok.ok()) << git_ok.error().str();
  auto shown = run_git({"-C", bare().string(), "-c", "gpg.ssh.allowedSignersFile=" + allowed_.string(), "log",
                        "--show-signature", "-1", oid});
  ASSERT_TRUE(shown.ok()) << shown.error().str();
  EXPECT_NE(shown->find("Good \"git\" signature for runner@example.com"), std::string::npos) << *shown;

  auto info = bus_->read_commit(oid);
  ASSERT_TRUE(info.ok()) << info.error().str();
  ASSERT_TRUE(info->signature.has_value());
  EXPECT_EQ(info->summary, "kakeya-runner: claimed [skip ci]");
  EXPECT_TRUE(info->parents.empty());
  auto signers = AllowedSigners::load_file(allowed_);
  ASSERT_TRUE(signers.ok());
  auto who = verify_commit_signature(*info, *signers);
  ASSERT_TRUE(who.ok()) << who.error().str();
  EXPECT_EQ(who->principals, std::vector<std::string>{"runner@example.com"});
  EXPECT_EQ(who->key_type, "ssh-ed25519");

  // Another allowed-signers file: a good signature by a key it does not list. git agrees.
  auto others = AllowedSigners::load_file(other_allowed_);
  ASSERT_TRUE(others.ok());
  auto untrusted = verify_commit_signature(*info, *others);
  ASSERT_FALSE(untrusted.ok());
  EXPECT_EQ(untrusted.error().code, errc::kUntrustedSigner);
  EXPECT_NE(untrusted.error().message.find(who->fingerprint), std::string::npos);
  EXPECT_FALSE(git_verify(oid, other_allowed_).ok());
}

TEST_F(GitBusSigningTest, UnsignedAndTamperedCommitsAreRefusedByBothGitAndTheBus) {
  auto signers = AllowedSigners::load_file(allowed_);
  ASSERT_TRUE(signers.ok());
  const std::string plain = push_new("refs/heads/plain", {"kakeya-runner", "runner@kakeya.invalid"});
  auto plain_info = bus_->read_commit(plain);
  ASSERT_TRUE(plain_info.ok());
  EXPECT_FALSE(plain_info->signature.has_value());
  auto unsigned_check = verify_commit_signature(*plain_info, *signers);
  ASSERT_FALSE(unsigned_check.ok());
  EXPECT_EQ(unsigned_check.error().code, errc::kNotSigned);
  EXPECT_FALSE(git_verify(plain, allowed_).ok());

  // Tamper with a signed commit's message on the server (the gpgsig header stays), as someone
  // with push access could, and point a branch at the result.
  const std::string good = push_new("refs/heads/good", {"kakeya-runner", "runner@kakeya.invalid", key_});
  auto raw = run_git({"-C", bare().string(), "cat-file", "commit", good});
  ASSERT_TRUE(raw.ok());
  std::string forged = *raw + "\n";
  const std::string from = "claimed";
  forged.replace(forged.rfind(from), from.size(), "succeeded");
  auto forged_oid = run_git({"-C", bare().string(), "hash-object", "-t", "commit", "-w", "--stdin"}, forged);
  ASSERT_TRUE(forged_oid.ok()) << forged_oid.error().str();
  ASSERT_TRUE(run_git({"-C", bare().string(), "update-ref", "refs/heads/forged", *forged_oid}).ok());
  EXPECT_FALSE(git_verify(*forged_oid, allowed_).ok());

  auto fetched = bus_->fetch({"refs/heads/forged"});
  ASSERT_TRUE(fetched.ok()) << fetched.error().str();
  auto info = bus_->read_commit(*forged_oid);
  ASSERT_TRUE(info.ok());
  ASSERT_TRUE(info->signature.has_value());
  auto tampered = verify_commit_signature(*info, *signers);
  ASSERT_FALSE(tampered.ok());
  EXPECT_EQ(tampered.error().code, errc::kBadSignature);
  EXPECT_NE(tampered.error().message.find(forged_oid->substr(0, 12)), std::string::npos) << tampered.error().message;
}

TEST_F(GitBusSigningTest, AMissingKeyIsAnErrorNotAnUnsignedCommit) {
  auto c = bus_->make_commit(std::nullopt, std::nullopt, {{"a", std::string("a")}}, "m",
                             {"kakeya-runner", "runner@kakeya.invalid", tmp_.path() / "no-such-key"});
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().code, errc::kChildFailed);
  EXPECT_NE(c.error().message.find("no-such-key"), std::string::npos) << c.error().message;
}

}  // namespace
}  // namespace kakeya::bridge
