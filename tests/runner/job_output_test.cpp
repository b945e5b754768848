#include "runner/job_output.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "tests/harness/paths.h"

namespace kakeya::runner {
namespace {

TEST(JobOutput, StreamsStayApartAndJobLogInterleavesWholeLines) {
  testing::TempDir dir;
  auto out = JobOutput::create(dir.path(), 1 << 20, {});
  ASSERT_TRUE(out.ok()) << out.error().str();
  // Generated text arrives in pieces on stdout while stderr redraws a progress line with '\r'.
  (*out)->write(1, "generated: alpha ");
  (*out)->write(2, "\rprogress 50%");
  (*out)->write(1, "beta\n");
  (*out)->write(2, "\rprogress 100%\n");
  (*out)->write(1, "tail without newline");
  (*out)->close();
  EXPECT_EQ(testing::file_text(dir.path() / JobOutput::kStdoutFile), "generated: alpha beta\ntail without newline");
  EXPECT_EQ(testing::file_text(dir.path() / JobOutput::kStderrFile), "\rprogress 50%\rprogress 100%\n");
  const std::string combined = testing::file_text(dir.path() / JobOutput::kCombinedFile);
  EXPECT_NE(combined.find("generated: alpha beta\n"), std::string::npos) << combined;
  EXPECT_NE(combined.find("progress 100%\n"), std::string::npos) << combined;
  EXPECT_NE(combined.find("tail without newline"), std::string::npos) << combined;
  EXPECT_EQ(combined.find("alpha \rprogress"), std::string::npos) << combined;
}

TEST(JobOutput, RedactsEveryFile) {
  testing::TempDir dir;
  auto out = JobOutput::create(dir.path(), 1 << 20, {"s3cret-value-xyz"});
  ASSERT_TRUE(out.ok()) << out.error().str();
  (*out)->write(1, "token s3cret-");
  (*out)->write(2, "warn s3cret-value-xyz\n");
  (*out)->write(1, "value-xyz end\n");
  (*out)->close();
  for (const char* f : {JobOutput::kStdoutFile, JobOutput::kStderrFile, JobOutput::kCombinedFile}) {
    const std::string text = testing::file_text(dir.path() / f);
    EXPECT_EQ(text.find("s3cret"), std::string::npos) << f << ": " << text;
    EXPECT_NE(text.find("[REDACTED]"), std::string::npos) << f << ": " << text;
  }
  EXPECT_EQ(testing::file_text(dir.path() / JobOutput::kStdoutFile), "token [REDACTED] end\n");
}

TEST(JobOutput, LongLineWithoutEndIsNotHeldForever) {
  testing::TempDir dir;
  auto out = JobOutput::create(dir.path(), 1 << 20, {});
  ASSERT_TRUE(out.ok());
  const std::string big(JobOutput::kMaxHeldLineBytes + 10, 'x');
  (*out)->write(1, big);
  EXPECT_EQ((*out)->combined().bytes_written(), big.size());
  (*out)->close();
}

}  // namespace
}  // namespace kakeya::runner
