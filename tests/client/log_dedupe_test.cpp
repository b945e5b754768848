#include "client/log_dedupe.h"

#include <gtest/gtest.h>

namespace kakeya::client {
namespace {

using Lines = std::vector<std::string>;

TEST(ClientLogDedupe, FirstTailIsShownWhole) {
  LogTailDedupe d;
  EXPECT_EQ(d.update("a\nb\n"), (Lines{"a", "b"}));
}

TEST(ClientLogDedupe, OverlappingTailShowsOnlyNewLines) {
  LogTailDedupe d;
  d.update("l1\nl2\nl3\n");
  EXPECT_EQ(d.update("l2\nl3\nl4\nl5\n"), (Lines{"l4", "l5"}));
  EXPECT_EQ(d.update("l4\nl5\nl6\n"), (Lines{"l6"}));
}

TEST(ClientLogDedupe, IdenticalTailShowsNothing) {
  LogTailDedupe d;
  d.update("x\ny\n");
  EXPECT_TRUE(d.update("x\ny\n").empty());
}

TEST(ClientLogDedupe, PartialLastLineIsHeldBackUntilComplete) {
  LogTailDedupe d;
  EXPECT_EQ(d.update("a\nstep 1 of"), (Lines{"a"}));
  EXPECT_EQ(d.update("a\nstep 1 of 4 done\n"), (Lines{"step 1 of 4 done"}));
}

TEST(ClientLogDedupe, ByteCappedFirstLineStillOverlaps) {
  LogTailDedupe d;
  d.update("loading model weights\ntokens 10\n");
  // The window moved and cut the first line mid-way.
  EXPECT_EQ(d.update("weights\ntokens 10\ntokens 20\n"), (Lines{"tokens 20"}));
}

TEST(ClientLogDedupe, NoOverlapIsMarkedAsAGap) {
  LogTailDedupe d;
  d.update("a\nb\n");
  EXPECT_EQ(d.update("x\ny\n"), (Lines{std::string(LogTailDedupe::kGapMarker), "x", "y"}));
}

TEST(ClientLogDedupe, ResetStartsOver) {
  LogTailDedupe d;
  d.update("a\nb\n");
  d.reset();
  EXPECT_EQ(d.update("a\nb\n"), (Lines{"a", "b"}));
}

TEST(ClientLogDedupe, CompleteLinesDropsCarriageReturnAndFragment) {
  EXPECT_EQ(complete_lines("a\r\nb\nc"), (Lines{"a", "b"}));
  EXPECT_TRUE(complete_lines("").empty());
}

}  // namespace
}  // namespace kakeya::client
