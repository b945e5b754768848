#include "runner/job_log.h"

#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "tests/harness/paths.h"

namespace kakeya::runner {
namespace {

TEST(JobLog, RedactsBeforeWriting) {
  testing::TempDir dir;
  const auto path = dir.path() / "job.log";
  auto log = JobLog::create(path, 1 << 20, {"hunter22-token"});
  ASSERT_TRUE(log.ok()) << log.error().str();
  log->write("token is hunter22-");
  log->write("token, again: hunter22-token\n");
  log->close();
  EXPECT_EQ(testing::file_text(path), "token is [REDACTED], again: [REDACTED]\n");
  EXPECT_EQ(log->bytes_written(), testing::file_text(path).size());
  EXPECT_FALSE(log->truncated());
  EXPECT_FALSE(log->error().has_value());
}

TEST(JobLog, CapWritesOneMarkerAndCountsDroppedBytes) {
  testing::TempDir dir;
  const auto path = dir.path() / "job.log";
  auto log = JobLog::create(path, 10, {});
  ASSERT_TRUE(log.ok());
  log->write("0123456");
  log->write("789abcdef");
  log->write("more\n");
  log->close();
  EXPECT_EQ(testing::file_text(path), "0123456789\n" + truncation_marker(10));
  EXPECT_EQ(truncation_marker(10), "[kakeya: log truncated at 10 bytes]\n");
  EXPECT_EQ(log->bytes_written(), 10u);
  EXPECT_EQ(log->bytes_dropped(), 6u + 5u);
  EXPECT_TRUE(log->truncated());
}

TEST(JobLog, MarkerNeedsNoExtraNewlineAfterCompleteLine) {
  testing::TempDir dir;
  auto log = JobLog::create(dir.path() / "l", 6, {});
  ASSERT_TRUE(log.ok());
  log->write("line1\nline2\n");
  log->close();
  EXPECT_EQ(testing::file_text(dir.path() / "l"), "line1\n" + truncation_marker(6));
}

TEST(JobLog, SecretStraddlingTheCapIsNeverWritten) {
  testing::TempDir dir;
  const std::string secret = "s3cr3t-value-xyz";
  const std::string a = "0123456789s3cr3t-val", b = "ue-xyz tail s3cr3t-value-xyz end\n";
  const std::string redacted = redact_all(a + b, {secret});
  for (std::size_t cap = 1; cap < redacted.size() + 2; ++cap) {
    const auto path = dir.path() / ("l" + std::to_string(cap));
    auto log = JobLog::create(path, cap, {secret});
    ASSERT_TRUE(log.ok());
    log->write(a);
    log->write(b);
    log->close();
    const std::string body = testing::file_text(path);
    EXPECT_EQ(body.find(secret), std::string::npos) << "cap " << cap << ": " << body;
    if (cap < redacted.size()) {
      const std::string head = redacted.substr(0, cap);
      EXPECT_EQ(body, head + (head.back() == '\n' ? "" : "\n") + truncation_marker(cap));
      EXPECT_EQ(log->bytes_dropped(), redacted.size() - cap);
    } else {
      EXPECT_EQ(body, redacted);
      EXPECT_FALSE(log->truncated());
    }
  }
}

TEST(JobLog, ConcurrentWritersKeepEveryChunkWhole) {
  testing::TempDir dir;
  const auto path = dir.path() / "job.log";
  auto log = JobLog::create(path, 1 << 20, {"PASSWORD123"});
  ASSERT_TRUE(log.ok());
  JobLog& l = *log;
  auto writer = [&l](char who) {
    for (int i = 0; i < 2000; ++i) l.write(std::string(1, who) + "-" + std::to_string(i) + "\n");
  };
  std::thread a(writer, 'A'), b(writer, 'B');
  a.join();
  b.join();
  l.close();
  std::istringstream in(testing::file_text(path));
  std::set<std::string> lines;
  std::string line;
  std::size_t count = 0;
  while (std::getline(in, line)) {
    lines.insert(line);
    ++count;
  }
  EXPECT_EQ(count, 4000u);
  EXPECT_EQ(lines.size(), 4000u);
  EXPECT_TRUE(lines.count("A-1999") && lines.count("B-0"));
}

TEST(JobLog, TailReturnsLastBytesOnACharacterBoundary) {
  testing::TempDir dir;
  auto log = JobLog::create(dir.path() / "l", 1 << 20, {"secretive"});
  ASSERT_TRUE(log.ok());
  log->write("first line\nsecond secretive line\n");
  EXPECT_EQ(log->tail(16), "[REDACTED] line\n");
  EXPECT_EQ(log->tail(1000), "first line\nsecond [REDACTED] line\n");
  log->write("caf\xC3\xA9!");  // "café!": tail(2) would start inside the two-byte é
  EXPECT_EQ(log->tail(2), "!");
  EXPECT_EQ(log->tail(3), "\xC3\xA9!");
  const std::string big(JobLog::kTailKeepBytes * 3, 'x');
  log->write(big);
  EXPECT_EQ(log->tail(SIZE_MAX).size(), JobLog::kTailKeepBytes);
}

TEST(JobLog, TailIncludesTruncationMarker) {
  testing::TempDir dir;
  auto log = JobLog::create(dir.path() / "l", 4, {});
  ASSERT_TRUE(log.ok());
  log->write("abcdefgh");
  EXPECT_EQ(log->tail(100), "abcd\n" + truncation_marker(4));
}

TEST(JobLog, WritesAfterCloseAreIgnored) {
  testing::TempDir dir;
  auto log = JobLog::create(dir.path() / "l", 100, {});
  ASSERT_TRUE(log.ok());
  log->write("a");
  log->close();
  log->write("b");
  log->close();
  EXPECT_EQ(testing::file_text(dir.path() / "l"), "a");
}

TEST(JobLog, CreateErrors) {
  testing::TempDir dir;
  auto bad_dir = JobLog::create(dir.path() / "missing" / "l", 100, {});
  ASSERT_FALSE(bad_dir.ok());
  EXPECT_EQ(bad_dir.error().code, errc::kIo);
  EXPECT_NE(bad_dir.error().message.find("missing/l"), std::string::npos);
  auto zero = JobLog::create(dir.path() / "l", 0, {});
  ASSERT_FALSE(zero.ok());
  EXPECT_EQ(zero.error().code, errc::kBadValue);
  auto short_secret = JobLog::create(dir.path() / "l", 10, {"abc"});
  ASSERT_TRUE(short_secret.ok());
  EXPECT_EQ(short_secret->ignored_secrets().size(), 1u);
}

}  // namespace
}  // namespace kakeya::runner
