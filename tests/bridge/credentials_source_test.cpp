// Where credentials came from (Credentials::source), credentials embedded in a URL, and auth
// failures restated with the variables and files that supply credentials.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

#include "bridge/credentials.h"
#include "tests/harness/credential_env.h"

namespace kakeya::bridge {
namespace {

using CredentialSourceTest = testing::CredentialEnvTest;

TEST_F(CredentialSourceTest, SourceNamesTheVariableOrFileLineNeverTheToken) {
  ::setenv("KAKEYA_GIT_TOKEN", "s3cr3t-token", 1);
  auto env = load_credentials("https://a.example/r.git", std::nullopt);
  ASSERT_TRUE(env.ok());
  EXPECT_EQ(env->source, "KAKEYA_GIT_TOKEN");
  ::unsetenv("KAKEYA_GIT_TOKEN");

  const auto token_file = dir_.path() / "token";
  std::ofstream(token_file) << "file-token\n";
  ::setenv("KAKEYA_GIT_TOKEN_FILE", token_file.c_str(), 1);
  auto from_file = load_credentials("https://a.example/r.git", std::nullopt);
  ASSERT_TRUE(from_file.ok());
  EXPECT_EQ(from_file->source, "KAKEYA_GIT_TOKEN_FILE (" + token_file.string() + ")");
  ::unsetenv("KAKEYA_GIT_TOKEN_FILE");

  const auto store = dir_.path() / "store";
  std::ofstream(store) << "# comment\nhttps://u:store-secret@b.example\nhttps://v:other@a.example\n";
  auto stored = load_credentials("https://a.example/r.git", store);
  ASSERT_TRUE(stored.ok());
  EXPECT_EQ(stored->source, "credentials file " + store.string() + " line 3");
  EXPECT_EQ(stored->source.find("other"), std::string::npos);

  ::setenv("KAKEYA_GIT_SSH_KEY", "/keys/id_ed25519", 1);
  auto anon = load_credentials("ssh://git@a.example/r.git", std::nullopt);
  ASSERT_TRUE(anon.ok());
  EXPECT_EQ(anon->source, "none (anonymous), ssh key /keys/id_ed25519");
}

TEST_F(CredentialSourceTest, PasswordInUrlIsRefusedWithoutRepeatingIt) {
  auto r = load_credentials("https://alice:hunter2-token@git.example/r.git", std::nullopt);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, errc::kCredentialsInUrl);
  EXPECT_EQ(r.error().message.find("hunter2"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("https://git.example/r.git"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("KAKEYA_GIT_TOKEN"), std::string::npos) << r.error().message;
  // A user name alone is not a secret (ssh://git@host, https://user@host).
  EXPECT_TRUE(load_credentials("ssh://git@git.example/r.git", std::nullopt).ok());
  EXPECT_TRUE(load_credentials("https://alice@git.example/r.git", std::nullopt).ok());
}

TEST_F(CredentialSourceTest, AuthFailureNamesWhatWasSentAndWhereCredentialsComeFrom) {
  const Error libgit2_style = make_error(errc::kAuthFailed,
                                         "authentication to http://127.0.0.1:1/git/r.git failed (connect): the server "
                                         "asks for credentials (allowed types 1) and none of that kind are configured");
  Credentials none;
  none.source = "none (anonymous)";
  const Error told = explain_auth_failure(libgit2_style, "http://127.0.0.1:1/git/r.git", none, "--credentials-file FILE");
  EXPECT_EQ(told.code, errc::kAuthFailed);
  EXPECT_EQ(told.message.find("allowed types"), std::string::npos) << told.message;
  for (const char* needle : {"http://127.0.0.1:1/git/r.git", "no credentials were configured", "KAKEYA_GIT_TOKEN",
                             "KAKEYA_GIT_TOKEN_FILE", "KAKEYA_GIT_USERNAME", "--credentials-file FILE",
                             "http://USER:TOKEN@127.0.0.1:1"}) {
    EXPECT_NE(told.message.find(needle), std::string::npos) << needle << " in " << told.message;
  }
  Credentials sent;
  sent.token = "never-shown";
  sent.source = "KAKEYA_GIT_TOKEN";
  const Error refused = explain_auth_failure(libgit2_style, "https://h.example/r.git", sent, "credentials_file");
  EXPECT_NE(refused.message.find("refused the credentials from KAKEYA_GIT_TOKEN"), std::string::npos) << refused.message;
  EXPECT_EQ(refused.message.find("never-shown"), std::string::npos);
  const Error ssh = explain_auth_failure(libgit2_style, "ssh://git@h.example/r.git", sent, "credentials_file");
  EXPECT_NE(ssh.message.find("KAKEYA_GIT_SSH_KEY"), std::string::npos) << ssh.message;
  // Other errors pass unchanged.
  const Error other = make_error(errc::kTransport, "connection refused");
  EXPECT_EQ(explain_auth_failure(other, "https://h.example/r.git", sent, "x").message, "connection refused");
}

}  // namespace
}  // namespace kakeya::bridge
