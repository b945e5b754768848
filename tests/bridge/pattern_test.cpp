// Catalog string patterns (bridge/pattern.h): whole-value PCRE2 matching over bytes.
#include "bridge/pattern.h"

#include <gtest/gtest.h>

#include <string>

namespace kakeya::bridge {
namespace {

bool matches(const std::string& pattern, const std::string& value) {
  auto p = Pattern::compile(pattern);
  EXPECT_TRUE(p.ok()) << pattern;
  auto m = p.value().full_match(value);
  EXPECT_TRUE(m.ok()) << m.error().str();
  return m.ok() && m.value();
}

TEST(Pattern, MatchesTheWholeValueOnly) {
  EXPECT_TRUE(matches("[a-z]{1,8}", "abc"));
  EXPECT_FALSE(matches("[a-z]{1,8}", "abc!"));
  EXPECT_FALSE(matches("[a-z]{1,8}", "!abc"));
  EXPECT_FALSE(matches("[a-z]{1,8}", ""));
  EXPECT_TRUE(matches("a|ab", "ab"));  // alternation is anchored as a whole, not per branch
  EXPECT_TRUE(matches("(layers:[0-9]{1,3}|quant:q4_0|lookup:[0-9]{1,2})", "quant:q4_0"));
  EXPECT_FALSE(matches("(layers:[0-9]{1,3}|quant:q4_0|lookup:[0-9]{1,2})", "quant:q4_0x"));
}

TEST(Pattern, HexEscapesAndBytes) {
  const std::string printable = "[^\\x00-\\x08\\x0B\\x0C\\x0E-\\x1F\\x7F]*";
  EXPECT_TRUE(matches(printable, "tab\there\nline \xC3\xBC"));  // UTF-8 bytes are >= 0x80
  EXPECT_FALSE(matches(printable, std::string("bell\x07")));
  EXPECT_FALSE(matches(printable, std::string("nul\0x", 5)));
  EXPECT_FALSE(matches(printable, "del\x7F"));
}

TEST(Pattern, LongValuesDoNotRecurse) {
  EXPECT_TRUE(matches("[^\\x00-\\x1F]*", std::string(1 << 20, 'a')));  // 1 MiB
}

TEST(Pattern, InvalidPatternNamesItAndTheOffset) {
  auto p = Pattern::compile("[a-z");
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.error().code, errc::kBadPattern);
  EXPECT_NE(p.error().message.find("[a-z"), std::string::npos);
  EXPECT_NE(p.error().message.find("offset 4"), std::string::npos) << p.error().message;
}

TEST(Pattern, CatastrophicBacktrackingIsAnErrorNotAHang) {
  auto p = Pattern::compile("(a|aa)+");  // every split of the a-run is tried before failing
  ASSERT_TRUE(p.ok());
  auto m = p.value().full_match(std::string(60, 'a') + "b");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error().code, errc::kPatternLimit);
  EXPECT_NE(m.error().message.find("(a|aa)+"), std::string::npos);
}

}  // namespace
}  // namespace kakeya::bridge
