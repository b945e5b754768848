#include "bridge/credentials.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

#include "tests/harness/credential_env.h"

namespace kakeya::bridge {
namespace {

using CredentialsTest = testing::CredentialEnvTest;

TEST_F(CredentialsTest, StoreFileMatchesSchemeAndHost) {
  auto file = write("store", "# comment\n\nhttps://alice:tok%40en@other.example\n"
                             "http://bob:plain@git.example:8080\n"
                             "https://carol:s3cret@git.example:8080/ignored/path\n");
  auto c = load_credentials("https://git.example:8080/org/repo.git", file);
  ASSERT_TRUE(c.ok()) << c.error().str();
  EXPECT_EQ(c->username, "carol");
  EXPECT_EQ(c->token, "s3cret");
  auto other = load_credentials("https://other.example/x.git", file);
  ASSERT_TRUE(other.ok());
  EXPECT_EQ(other->token, "tok@en");  // percent-decoded as git-credential-store writes it
}

TEST_F(CredentialsTest, NoMatchingHostNamesFileAndHost) {
  auto file = write("store", "https://alice:secret-token@a.example\n");
  auto c = load_credentials("https://b.example/r.git", file);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().code, errc::kCredentialsNotFound);
  EXPECT_NE(c.error().message.find(file.string()), std::string::npos);
  EXPECT_NE(c.error().message.find("b.example"), std::string::npos);
  EXPECT_EQ(c.error().message.find("secret-token"), std::string::npos);
}

TEST_F(CredentialsTest, MalformedLineNamesLineButNotToken) {
  auto file = write("store", "https://ok:fine@a.example\nhttps://user-only-secretish@b.example\n");
  auto c = load_credentials("https://b.example/r.git", file);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().code, errc::kBadCredentialsLine);
  EXPECT_NE(c.error().message.find("line 2"), std::string::npos) << c.error().message;
  EXPECT_EQ(c.error().message.find("user-only-secretish"), std::string::npos);
}

TEST_F(CredentialsTest, EnvironmentTokenWinsOverFile) {
  auto file = write("store", "https://alice:file-token@a.example\n");
  ::setenv("KAKEYA_GIT_TOKEN", "env-token", 1);
  auto c = load_credentials("https://a.example/r.git", file);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->token, "env-token");
  EXPECT_EQ(c->username, "x-access-token");
  ::setenv("KAKEYA_GIT_USERNAME", "dave", 1);
  auto named = load_credentials("https://a.example/r.git", std::nullopt);
  ASSERT_TRUE(named.ok());
  EXPECT_EQ(named->username, "dave");
}

TEST_F(CredentialsTest, TokenFileFirstLineAndConflict) {
  auto tf = write("token", "from-file  \nsecond line\n");
  ::setenv("KAKEYA_GIT_TOKEN_FILE", tf.c_str(), 1);
  auto c = load_credentials("https://a.example/r.git", std::nullopt);
  ASSERT_TRUE(c.ok()) << c.error().str();
  EXPECT_EQ(c->token, "from-file");
  ::setenv("KAKEYA_GIT_TOKEN", "x", 1);
  auto both = load_credentials("https://a.example/r.git", std::nullopt);
  ASSERT_FALSE(both.ok());
  EXPECT_EQ(both.error().code, errc::kCredentialsConflict);
}

TEST_F(CredentialsTest, NothingConfiguredIsAnonymous) {
  auto c = load_credentials("git://127.0.0.1:9418/r.git", std::nullopt);
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(c->username.empty());
  EXPECT_TRUE(c->token.empty());
}

TEST(UrlTest, ParseAndRedact) {
  auto p = parse_url("https://u%20x:p%3Aw@Git.Example:443/a/b.git");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->scheme, "https");
  EXPECT_EQ(p->username, "u x");
  EXPECT_EQ(p->password, "p:w");
  EXPECT_EQ(p->host, "git.example:443");
  auto scp = parse_url("git@github.com:org/repo.git");
  ASSERT_TRUE(scp.ok());
  EXPECT_EQ(scp->scheme, "");
  EXPECT_EQ(scp->username, "git");
  EXPECT_EQ(scp->host, "github.com");
  EXPECT_FALSE(parse_url("/local/path").ok());
  EXPECT_EQ(redact_url("https://u:secret@h.example/r.git"), "https://h.example/r.git");
  EXPECT_EQ(redact_url("git://h.example/a@b"), "git://h.example/a@b");
}

}  // namespace
}  // namespace kakeya::bridge
