#include "client/run_log.h"

#include <gtest/gtest.h>

#include <sstream>

namespace kakeya::client {
namespace {

TEST(RunLog, LastLines) {
  EXPECT_EQ(last_lines("a\nb\nc\n", 2), (std::vector<std::string>{"b", "c"}));
  EXPECT_EQ(last_lines("a\nb\nc", 2), (std::vector<std::string>{"b", "c"}));
  EXPECT_EQ(last_lines("a\nb\n", 10), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(last_lines("\n\nx\n", 3), (std::vector<std::string>{"", "", "x"}));
  EXPECT_TRUE(last_lines("", 3).empty());
  EXPECT_TRUE(last_lines("a\n", 0).empty());
}

TEST(RunLog, StreamNames) {
  EXPECT_EQ(*parse_log_stream("stderr"), LogStream::Stderr);
  auto bad = parse_log_stream("both");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, errc::kUsage);
  EXPECT_NE(bad.error().message.find("both"), std::string::npos);
}

TEST(RunLog, EndContextNamesReasonAndShowsEscapedLines) {
  BranchSnapshot snap;
  snap.branch = "kakeya/req/test-job-abc";
  snap.has_status = true;
  snap.status.state = bridge::RunState::Failed;
  snap.status.reason = "exit code 3";
  std::ostringstream out;
  print_end_context(out, snap, std::string("one\ntwo\x1b[31m\nthree\n"), 2);
  const std::string text = out.str();
  EXPECT_NE(text.find("kakeya/req/test-job-abc: failed: exit code 3"), std::string::npos) << text;
  EXPECT_NE(text.find("last 2 lines"), std::string::npos) << text;
  EXPECT_NE(text.find("  | three\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("  | one"), std::string::npos) << text;
  EXPECT_EQ(text.find('\x1b'), std::string::npos) << "terminal escapes from the job are shown escaped";

  // No published log: the last heartbeat's tail.
  snap.status.log_tail = "from heartbeat\n";
  std::ostringstream tail;
  print_end_context(tail, snap, std::nullopt, 5);
  EXPECT_NE(tail.str().find("(from the last heartbeat)"), std::string::npos) << tail.str();
  EXPECT_NE(tail.str().find("  | from heartbeat\n"), std::string::npos) << tail.str();
}

}  // namespace
}  // namespace kakeya::client
