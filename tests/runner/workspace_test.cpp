#include "runner/workspace.h"

#include <gtest/gtest.h>

#include <fstream>

#include "tests/harness/paths.h"

namespace kakeya::runner {
namespace {

namespace fs = std::filesystem;

void make_job(const fs::path& dir, std::size_t bytes, int age_s) {
  fs::create_directories(dir / "out");
  std::ofstream(dir / "out" / "data.bin") << std::string(bytes, 'a');
  fs::last_write_time(dir, fs::file_time_type::clock::now() - std::chrono::seconds(age_s));
}

TEST(Workspace, DirectoryBytesCountsRegularFilesRecursively) {
  testing::TempDir tmp;
  make_job(tmp.path() / "j", 1000, 0);
  std::ofstream(tmp.path() / "j" / "job.log") << "12345";
  EXPECT_EQ(directory_bytes(tmp.path() / "j"), 1005u);
  EXPECT_EQ(directory_bytes(tmp.path() / "absent"), 0u);
}

TEST(Workspace, PruneKeepsTheNewestWithinCountAndBytes) {
  testing::TempDir tmp;
  const fs::path jobs = tmp.path() / "jobs";
  make_job(jobs / "old", 100, 300);
  make_job(jobs / "mid", 100, 200);
  make_job(jobs / "new", 100, 100);
  make_job(jobs / "running", 100, 400);
  const auto r = prune_job_dirs(jobs, {jobs / "running"}, 2, 1 << 20);
  EXPECT_EQ(r.kept, 2);
  EXPECT_EQ(r.removed, 1);
  EXPECT_EQ(r.kept_bytes, 200u);
  EXPECT_TRUE(fs::exists(jobs / "new"));
  EXPECT_TRUE(fs::exists(jobs / "mid"));
  EXPECT_FALSE(fs::exists(jobs / "old"));
  EXPECT_TRUE(fs::exists(jobs / "running")) << "a running job's directory is never pruned";
}

TEST(Workspace, PruneHonoursTheByteBound) {
  testing::TempDir tmp;
  const fs::path jobs = tmp.path() / "jobs";
  make_job(jobs / "huge", 5000, 10);  // newest, but alone larger than the bound
  make_job(jobs / "small", 100, 20);
  const auto r = prune_job_dirs(jobs, {}, 10, 1000);
  EXPECT_FALSE(fs::exists(jobs / "huge"));
  EXPECT_TRUE(fs::exists(jobs / "small"));
  EXPECT_EQ(r.kept, 1);
  EXPECT_EQ(r.kept_bytes, 100u);
}

TEST(Workspace, KeepZeroRemovesEverything) {
  testing::TempDir tmp;
  const fs::path jobs = tmp.path() / "jobs";
  make_job(jobs / "a", 10, 10);
  const auto r = prune_job_dirs(jobs, {}, 0, 1 << 20);
  EXPECT_EQ(r.removed, 1);
  EXPECT_FALSE(fs::exists(jobs / "a"));
}

TEST(Workspace, ReleaseRemovesOrMarksNewest) {
  testing::TempDir tmp;
  make_job(tmp.path() / "ok", 10, 1000);
  make_job(tmp.path() / "failed", 10, 1000);
  release_job_dir(tmp.path() / "ok", false);
  release_job_dir(tmp.path() / "failed", true);
  EXPECT_FALSE(fs::exists(tmp.path() / "ok"));
  ASSERT_TRUE(fs::exists(tmp.path() / "failed"));
  EXPECT_GT(fs::last_write_time(tmp.path() / "failed"), fs::file_time_type::clock::now() - std::chrono::seconds(500));
}

}  // namespace
}  // namespace kakeya::runner
