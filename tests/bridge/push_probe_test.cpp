#include "bridge/push_probe.h"

#include <gtest/gtest.h>

namespace kakeya::bridge {
namespace {

TEST(PushProbe, LiteralPrefixOfAWatchPattern) {
  EXPECT_EQ(literal_prefix("kakeya/req/**"), "kakeya/req/");
  EXPECT_EQ(literal_prefix("agents/kakeya-*"), "agents/kakeya-");
  EXPECT_EQ(literal_prefix("team/a?/x/**"), "team/a");
  EXPECT_EQ(literal_prefix("**"), "");
  EXPECT_EQ(literal_prefix("*/req/**"), "");
}

}  // namespace
}  // namespace kakeya::bridge
