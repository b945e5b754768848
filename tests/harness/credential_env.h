#pragma once
// A test fixture for the credential readers (bridge/credentials.h): every KAKEYA_GIT_* variable
// they read is unset before and after each test, so tests set only what they need and leave the
// process environment as they found it; `dir_` is a fresh directory for token and store files.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "tests/harness/paths.h"

namespace kakeya::testing {

class CredentialEnvTest : public ::testing::Test {
 protected:
  void SetUp() override { clear(); }
  void TearDown() override { clear(); }
  static void clear() {
    for (const char* v : {"KAKEYA_GIT_USERNAME", "KAKEYA_GIT_TOKEN", "KAKEYA_GIT_TOKEN_FILE", "KAKEYA_GIT_SSH_KEY",
                          "KAKEYA_GIT_SSH_PASSPHRASE", "KAKEYA_GIT_CA_BUNDLE"}) {
      ::unsetenv(v);
    }
  }
  // Writes `content` to dir_/name and returns the path.
  std::filesystem::path write(const std::string& name, const std::string& content) {
    auto p = dir_.path() / name;
    std::ofstream(p) << content;
    return p;
  }
  TempDir dir_{"kakeya-cred"};
};

}  // namespace kakeya::testing
