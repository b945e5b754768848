#include "bridge/units.h"

#include <gtest/gtest.h>

#include "bridge/error_codes.h"

namespace kakeya::bridge {
namespace {

TEST(Units, ByteSizes) {
  EXPECT_EQ(*parse_byte_size("4096"), 4096u);
  EXPECT_EQ(*parse_byte_size("12B"), 12u);
  EXPECT_EQ(*parse_byte_size("512 KiB"), 512u * 1024);
  EXPECT_EQ(*parse_byte_size("8MiB"), 8u << 20);
  EXPECT_EQ(*parse_byte_size("1024GiB"), std::size_t{1} << 40);  // the limit
  for (const char* bad : {"", "MiB", "8MB", "-1", "1025GiB", "99999999999999999999", "8  MiB"}) {
    auto r = parse_byte_size(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().code, errc::kBadValue);
    EXPECT_NE(r.error().message.find(bad), std::string::npos) << r.error().message;
  }
}

TEST(Units, DurationsNeedAUnit) {
  EXPECT_DOUBLE_EQ(*parse_duration_s("30s"), 30);
  EXPECT_DOUBLE_EQ(*parse_duration_s("0s"), 0);
  EXPECT_DOUBLE_EQ(*parse_duration_s("30m"), 1800);
  EXPECT_DOUBLE_EQ(*parse_duration_s("1.5h"), 5400);
  EXPECT_DOUBLE_EQ(*parse_duration_s("7d"), 7 * 86400);
  auto bare = parse_duration_s("7");
  ASSERT_FALSE(bare.ok());
  EXPECT_EQ(bare.error().code, errc::kBadDuration);
  EXPECT_NE(bare.error().message.find("'7' has no unit"), std::string::npos) << bare.error().message;
  for (const char* bad : {"", "s", "-1s", "7w", "1e3s", "soon", "1..5h", " 7d", "inf"}) {
    auto r = parse_duration_s(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().code, errc::kBadDuration);
  }
}

}  // namespace
}  // namespace kakeya::bridge
