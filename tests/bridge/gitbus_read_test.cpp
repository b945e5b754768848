// GitBus::read_file on hand-made trees (every entry kind and odd mode git accepts on a push):
// only regular blobs are files; everything else is named in a `bad_path` error; sizes are
// checked from the object header.
#include <string>

#include <gtest/gtest.h>

#include "bridge/gitbus.h"
#include "bridge/utf8.h"
#include "tests/harness/paths.h"
#include "tests/harness/raw_objects.h"

namespace kakeya::bridge {
namespace {

using testing::RawEntry;

class GitBusRead : public ::testing::Test {
 protected:
  void SetUp() override {
    // The remote is never contacted: read_file works on the cache alone.
    auto b = GitBus::open("git://127.0.0.1:9/unused.git", tmp_.path() / "cache", Credentials{});
    ASSERT_TRUE(b.ok()) << b.error().str();
    bus_ = std::make_unique<GitBus>(std::move(b).value());
    odb_ = std::make_unique<testing::OpenOdb>((tmp_.path() / "cache").string());
    blob_ = testing::write_raw_blob(odb_->odb, "{\"x\": 1}\n");
  }

  // A commit whose root tree holds `.kakeya` = a tree of `entries`.
  std::string commit_with_kakeya(const std::vector<RawEntry>& entries) {
    const git_oid kakeya = testing::write_raw_tree(odb_->odb, entries);
    return commit_with_root({{"40000", ".kakeya", kakeya}});
  }
  std::string commit_with_root(const std::vector<RawEntry>& entries) {
    const git_oid root = testing::write_raw_tree(odb_->odb, entries);
    return testing::oid_hex(testing::write_raw_commit(odb_->odb, root));
  }

  void expect_bad_path(const std::string& commit, const std::string& path, const std::string& needle) {
    auto r = bus_->read_file(commit, path);
    ASSERT_FALSE(r.ok()) << path << " read as a file";
    EXPECT_EQ(r.error().code, errc::kBadPath) << r.error().str();
    EXPECT_NE(r.error().message.find(needle), std::string::npos) << r.error().message;
    EXPECT_TRUE(is_valid_utf8(r.error().message));
  }

  testing::TempDir tmp_{"kakeya-read"};
  std::unique_ptr<GitBus> bus_;
  std::unique_ptr<testing::OpenOdb> odb_;
  git_oid blob_;
};

TEST_F(GitBusRead, RegularAndExecutableBlobsAreFiles) {
  for (const char* mode : {"100644", "100755"}) {
    const std::string c = commit_with_kakeya({{mode, "request.json", blob_}});
    auto r = bus_->read_file(c, ".kakeya/request.json");
    ASSERT_TRUE(r.ok()) << r.error().str();
    ASSERT_TRUE(r->has_value());
    EXPECT_EQ(**r, "{\"x\": 1}\n");
  }
}

TEST_F(GitBusRead, MissingFileOrDirectoryIsNullopt) {
  const std::string c = commit_with_kakeya({{"100644", "other.json", blob_}});
  auto r = bus_->read_file(c, ".kakeya/request.json");
  ASSERT_TRUE(r.ok()) << r.error().str();
  EXPECT_FALSE(r->has_value());
  const std::string bare = commit_with_root({{"100644", "README.md", blob_}});
  auto r2 = bus_->read_file(bare, ".kakeya/run/status.json");
  ASSERT_TRUE(r2.ok()) << r2.error().str();
  EXPECT_FALSE(r2->has_value());
}

TEST_F(GitBusRead, NonRegularEntriesAreNamedWithTheirMode) {
  const git_oid sub = testing::write_raw_tree(odb_->odb, {{"100644", "a", blob_}});
  git_oid gitlink;
  ASSERT_EQ(git_oid_fromstr(&gitlink, "1111111111111111111111111111111111111111"), 0);
  const git_oid target = testing::write_raw_blob(odb_->odb, "../elsewhere/request.json");
  expect_bad_path(commit_with_kakeya({{"40000", "request.json", sub}}), ".kakeya/request.json",
                  "'.kakeya/request.json' in commit");
  expect_bad_path(commit_with_kakeya({{"40000", "request.json", sub}}), ".kakeya/request.json", "a directory (mode 040000)");
  expect_bad_path(commit_with_kakeya({{"120000", "request.json", target}}), ".kakeya/request.json", "a symlink (mode 120000)");
  expect_bad_path(commit_with_kakeya({{"160000", "request.json", gitlink}}), ".kakeya/request.json",
                  "a submodule (gitlink, mode 160000)");
  for (const char* odd : {"100664", "100600", "100000", "644", "0"}) {
    expect_bad_path(commit_with_kakeya({{odd, "request.json", blob_}}), ".kakeya/request.json", "non-standard mode");
  }
}

TEST_F(GitBusRead, LeadingComponentMustBeADirectory) {
  git_oid gitlink;
  ASSERT_EQ(git_oid_fromstr(&gitlink, "2222222222222222222222222222222222222222"), 0);
  expect_bad_path(commit_with_root({{"100644", ".kakeya", blob_}}), ".kakeya/request.json",
                  "'.kakeya' in commit");
  expect_bad_path(commit_with_root({{"100644", ".kakeya", blob_}}), ".kakeya/request.json", "not a directory");
  expect_bad_path(commit_with_root({{"120000", ".kakeya", blob_}}), ".kakeya/request.json", "a symlink");
  expect_bad_path(commit_with_root({{"160000", ".kakeya", gitlink}}), ".kakeya/request.json", "a submodule");
  // .kakeya/run as a file, with status.json asked for below it.
  expect_bad_path(commit_with_kakeya({{"100644", "run", blob_}}), ".kakeya/run/status.json", "'.kakeya/run'");
}

TEST_F(GitBusRead, ModesAreReadWithGitsRules) {
  // libgit2 reads "+40000" as a directory; git's tree walker calls the tree malformed.
  const git_oid kakeya = testing::write_raw_tree(odb_->odb, {{"100644", "request.json", blob_}});
  expect_bad_path(commit_with_root({{"+40000", ".kakeya", kakeya}}), ".kakeya/request.json", "not a well-formed tree");
  expect_bad_path(commit_with_root({{"+40000", ".kakeya", kakeya}}), ".kakeya/request.json", "the root tree");
  // A zero-padded mode (old git wrote them) is still a directory.
  auto padded = bus_->read_file(commit_with_root({{"040000", ".kakeya", kakeya}}), ".kakeya/request.json");
  ASSERT_TRUE(padded.ok()) << padded.error().str();
  EXPECT_TRUE(padded->has_value());
  // A mode libgit2 cannot parse at all (above 0177777) is named, not a failed read.
  expect_bad_path(commit_with_kakeya({{"1100644", "request.json", blob_}}), ".kakeya/request.json",
                  "non-standard mode 1100644");
}

TEST_F(GitBusRead, RepeatedNameIsAmbiguous) {
  const git_oid other = testing::write_raw_blob(odb_->odb, "{}");
  expect_bad_path(commit_with_kakeya({{"100644", "request.json", blob_}, {"100644", "request.json", other}}),
                  ".kakeya/request.json", "more than once");
}

TEST_F(GitBusRead, FileModeOnATreeObjectIsRefused) {
  const git_oid sub = testing::write_raw_tree(odb_->odb, {{"100644", "a", blob_}});
  expect_bad_path(commit_with_kakeya({{"100644", "request.json", sub}}), ".kakeya/request.json", "tree object");
}

TEST_F(GitBusRead, SizeLimitFromTheObjectHeaderAtAndOnePast) {
  const std::string content(1000, 'x');
  const git_oid big = testing::write_raw_blob(odb_->odb, content);
  const std::string c = commit_with_kakeya({{"100644", "request.json", big}});
  auto at = bus_->read_file(c, ".kakeya/request.json", 1000);
  ASSERT_TRUE(at.ok()) << at.error().str();
  EXPECT_EQ(at->value(), content);
  auto over = bus_->read_file(c, ".kakeya/request.json", 999);
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.error().code, errc::kTooLarge);
  EXPECT_NE(over.error().message.find("'.kakeya/request.json' is 1000 bytes"), std::string::npos)
      << over.error().message;
  EXPECT_NE(over.error().message.find("999"), std::string::npos) << over.error().message;
}

TEST_F(GitBusRead, ListDirSkipsSymlinksAndSubmodules) {
  git_oid gitlink;
  ASSERT_EQ(git_oid_fromstr(&gitlink, "3333333333333333333333333333333333333333"), 0);
  const git_oid results = testing::write_raw_tree(
      odb_->odb, {{"100644", "a.json", blob_}, {"120000", "link", blob_}, {"160000", "sub", gitlink},
                  {"100755", "run.sh", blob_}});
  const std::string c = commit_with_root({{"40000", "results", results}});
  auto files = bus_->list_dir(c, "results");
  ASSERT_TRUE(files.ok()) << files.error().str();
  EXPECT_EQ(*files, (std::vector<std::string>{"results/a.json", "results/run.sh"}));
}

TEST_F(GitBusRead, CheckCommitSeparatesAMissingTipFromBadFiles) {
  const std::string c = commit_with_kakeya({{"120000", "request.json", blob_}});
  EXPECT_TRUE(bus_->check_commit(c).ok());
  auto missing = bus_->check_commit("4444444444444444444444444444444444444444");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code, errc::kNotFetched);
}

}  // namespace
}  // namespace kakeya::bridge
