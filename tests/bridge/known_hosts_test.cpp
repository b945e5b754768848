// known_hosts lookups (bridge/known_hosts.h) with keys and hashed names made by the real
// ssh-keygen: plain and [host]:port names, patterns and negation, hashed entries (ssh-keygen -H),
// changed keys, @revoked lines winning over a pinning line, and missing files.
#include "bridge/known_hosts.h"

#include <gtest/gtest.h>

#include <fstream>

#include "bridge/child_process.h"
#include "tests/harness/paths.h"
#include "tests/harness/ssh_keys.h"

namespace kakeya::bridge {
namespace {

class KnownHostsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* name : {"host", "other"}) {
      auto k = testing::make_ssh_key(tmp_.path(), name);
      ASSERT_TRUE(k.ok()) << k.error().str();
    }
    auto host = parse_public_key_text(pub("host"));
    ASSERT_TRUE(host.ok());
    host_ = *host;
  }
  std::string pub(const std::string& name) { return testing::first_line(tmp_.path() / (name + ".pub")); }
  HostKeyCheck check(const std::string& text, const std::string& host, int port) {
    return check_known_host_text(text, "kh", host, port, host_);
  }
  testing::TempDir tmp_{"kakeya-known-hosts"};
  SshPublicKey host_;
};

TEST_F(KnownHostsTest, NamesPortsAndPatterns) {
  EXPECT_EQ(known_hosts_name("Git.Example", 22), "git.example");
  EXPECT_EQ(known_hosts_name("127.0.0.1", 2222), "[127.0.0.1]:2222");

  EXPECT_EQ(check("git.example " + pub("host") + "\n", "git.example", 22).verdict, HostKeyVerdict::Known);
  // A port other than 22 is looked up as [host]:port only.
  EXPECT_EQ(check("127.0.0.1 " + pub("host") + "\n", "127.0.0.1", 2222).verdict, HostKeyVerdict::Unknown);
  EXPECT_EQ(check("[127.0.0.1]:2222 " + pub("host") + "\n", "127.0.0.1", 2222).verdict, HostKeyVerdict::Known);
  EXPECT_EQ(check("*.example,!evil.example " + pub("host") + "\n", "git.example", 22).verdict,
            HostKeyVerdict::Known);
  EXPECT_EQ(check("*.example,!evil.example " + pub("host") + "\n", "evil.example", 22).verdict,
            HostKeyVerdict::Unknown);
  // Comments, blank and unreadable lines are skipped.
  const auto c = check("# c\n\nbroken line\ngit.example " + pub("host") + "\n", "git.example", 22);
  EXPECT_EQ(c.verdict, HostKeyVerdict::Known);
  EXPECT_NE(c.detail.find("kh:4"), std::string::npos) << c.detail;
}

TEST_F(KnownHostsTest, HashedNamesFromSshKeygen) {
  const auto file = tmp_.path() / "known_hosts";
  std::ofstream(file) << "[127.0.0.1]:2222 " << pub("host") << "\n";
  auto hashed = run_child({"ssh-keygen", "-H", "-f", file.string()}, "", 60);
  ASSERT_TRUE(hashed.ok() && hashed->succeeded()) << (hashed.ok() ? hashed->err : hashed.error().str());
  const std::string text = testing::first_line(file);
  ASSERT_TRUE(text.starts_with("|1|")) << text;
  EXPECT_EQ(check_known_host(file, "127.0.0.1", 2222, host_).verdict, HostKeyVerdict::Known);
  EXPECT_EQ(check_known_host(file, "127.0.0.2", 2222, host_).verdict, HostKeyVerdict::Unknown);
}

TEST_F(KnownHostsTest, ChangedRevokedAndMissing) {
  const auto changed = check("git.example " + pub("other") + "\n", "git.example", 22);
  EXPECT_EQ(changed.verdict, HostKeyVerdict::Changed);
  EXPECT_NE(changed.detail.find(host_.fingerprint()), std::string::npos) << changed.detail;

  const auto revoked = check("git.example " + pub("host") + "\n@revoked * " + pub("host") + "\n", "git.example", 22);
  EXPECT_EQ(revoked.verdict, HostKeyVerdict::Revoked);
  EXPECT_NE(revoked.detail.find("kh:2"), std::string::npos) << revoked.detail;

  const auto missing = check_known_host(tmp_.path() / "absent", "git.example", 22, host_);
  EXPECT_EQ(missing.verdict, HostKeyVerdict::Unknown);
  EXPECT_NE(missing.detail.find("absent"), std::string::npos) << missing.detail;
}

}  // namespace
}  // namespace kakeya::bridge
