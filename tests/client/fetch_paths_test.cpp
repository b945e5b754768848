#include "client/fetch_paths.h"

#include <gtest/gtest.h>

#include "tests/harness/paths.h"

namespace kakeya::client {
namespace {
namespace fs = std::filesystem;

TEST(ClientFetchPaths, NestedRelativePathJoins) {
  kakeya::testing::TempDir tmp;
  auto r = safe_join(tmp.path(), "logs/job.log");
  ASSERT_TRUE(r.ok()) << r.error().str();
  EXPECT_EQ(*r, tmp.path() / "logs" / "job.log");
}

TEST(ClientFetchPaths, EscapingPathsAreRefused) {
  kakeya::testing::TempDir tmp;
  for (const char* bad : {"../x", "a/../../x", "/etc/passwd", "a//b", "./a", "a/.", "", "a\\..\\b"}) {
    auto r = safe_join(tmp.path(), bad);
    ASSERT_FALSE(r.ok()) << "accepted '" << bad << "'";
    EXPECT_EQ(r.error().code, errc::kPathEscape) << bad;
  }
}

TEST(ClientFetchPaths, SymlinkLeadingOutsideIsRefused) {
  kakeya::testing::TempDir tmp;
  kakeya::testing::TempDir outside;
  fs::create_directories(tmp.path() / "dest");
  fs::create_directory_symlink(outside.path(), tmp.path() / "dest" / "logs");
  auto r = safe_join(tmp.path() / "dest", "logs/job.log");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, errc::kPathEscape);
  auto ok = safe_join(tmp.path() / "dest", "results/report.json");
  EXPECT_TRUE(ok.ok());
}

}  // namespace
}  // namespace kakeya::client
