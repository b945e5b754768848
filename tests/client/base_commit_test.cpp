#include "client/base_commit.h"

#include <fstream>

#include <gtest/gtest.h>

#include "tests/harness/git_servers.h"
#include "tests/harness/paths.h"

namespace kakeya::client {
namespace {
namespace fs = std::filesystem;
using kakeya::testing::run_git;

std::string git(const fs::path& repo, std::vector<std::string> args) {
  args.insert(args.begin(), {"-C", repo.string()});
  auto r = run_git(args);
  EXPECT_TRUE(r.ok()) << r.error().str();
  return r.ok() ? *r : "";
}

TEST(ClientBaseCommit, FindsHeadFromASubdirectoryAndTouchesNothing) {
  kakeya::testing::TempDir tmp;
  fs::path repo = tmp.path() / "w";
  fs::create_directories(repo / "sub");
  git(repo, {"init", "-q", "-b", "feature"});
  git(repo, {"config", "user.email", "t@t"});
  git(repo, {"config", "user.name", "t"});
  std::ofstream(repo / "sub" / "a.txt") << "one\n";
  git(repo, {"add", "."});
  git(repo, {"commit", "-q", "-m", "c1"});
  std::ofstream(repo / "sub" / "a.txt", std::ios::app) << "dirty\n";
  std::ofstream(repo / "new.txt") << "untracked\n";
  const std::string before = git(repo, {"status", "--porcelain"});

  auto b = find_base_commit(repo / "sub", false);
  ASSERT_TRUE(b.ok()) << b.error().str();
  ASSERT_TRUE(b->has_value());
  EXPECT_EQ((*b)->head_oid, git(repo, {"rev-parse", "HEAD"}));
  EXPECT_EQ(git(repo, {"status", "--porcelain"}), before);
  EXPECT_EQ(git(repo, {"rev-parse", "--abbrev-ref", "HEAD"}), "feature");
}

TEST(ClientBaseCommit, UnbornHeadAndMissingRepository) {
  kakeya::testing::TempDir tmp;
  git(tmp.path(), {"init", "-q"});
  auto unborn = find_base_commit(tmp.path(), true);
  ASSERT_FALSE(unborn.ok());
  EXPECT_EQ(unborn.error().code, errc::kNoHeadCommit);

  kakeya::testing::TempDir plain;
  auto none = find_base_commit(plain.path(), true);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().code, errc::kNoRepository);
}

}  // namespace
}  // namespace kakeya::client
