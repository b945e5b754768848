#include "bridge/utf8.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace kakeya::bridge {
namespace {

using namespace std::string_literals;

// Ill-formed inputs of every class in Unicode Table 3-7, with their escaped forms.
struct Case {
  const char* what;
  std::string in;
  std::string escaped;
};

std::vector<Case> ill_formed() {
  return {
      {"lone high byte", "a\xff" "b", "a\\xffb"},
      {"two invalid bytes (a branch segment)", "\xff\xfe", "\\xff\\xfe"},
      {"stray continuation byte", "x\x80y", "x\\x80y"},
      {"overlong 2-byte slash", "\xc0\xaf", "\\xc0\\xaf"},
      {"overlong 2-byte C1 lead", "\xc1\xbf", "\\xc1\\xbf"},
      {"overlong 3-byte", "\xe0\x80\xaf", "\\xe0\\x80\\xaf"},
      {"overlong 4-byte", "\xf0\x8f\xbf\xbf", "\\xf0\\x8f\\xbf\\xbf"},
      {"encoded high surrogate", "\xed\xa0\x80", "\\xed\\xa0\\x80"},
      {"encoded low surrogate", "\xed\xbf\xbf", "\\xed\\xbf\\xbf"},
      {"above U+10FFFF", "\xf4\x90\x80\x80", "\\xf4\\x90\\x80\\x80"},
      {"F5 lead", "\xf5\x80\x80\x80", "\\xf5\\x80\\x80\\x80"},
      {"truncated 3-byte at end", "ab\xe2\x82", "ab\\xe2\\x82"},
      {"truncated 3-byte before ASCII", "\xe2\x82z", "\\xe2\\x82z"},
      {"truncated 4-byte at end", "\xf0\x9f\x98", "\\xf0\\x9f\\x98"},
      {"valid then invalid", "\xc3\xa9\xff", "\xc3\xa9\\xff"},
  };
}

TEST(Utf8, WellFormedSequencesAreValid) {
  EXPECT_TRUE(is_valid_utf8(""));
  EXPECT_TRUE(is_valid_utf8("plain ASCII with NUL \0 inside"s));
  EXPECT_TRUE(is_valid_utf8("\xc3\xa9"));                  // U+00E9
  EXPECT_TRUE(is_valid_utf8("\xe2\x82\xac"));              // U+20AC
  EXPECT_TRUE(is_valid_utf8("\xed\x9f\xbf"));              // U+D7FF, just below the surrogates
  EXPECT_TRUE(is_valid_utf8("\xee\x80\x80"));              // U+E000, just above them
  EXPECT_TRUE(is_valid_utf8("\xf0\x9f\x98\x80"));          // U+1F600
  EXPECT_TRUE(is_valid_utf8("\xf4\x8f\xbf\xbf"));          // U+10FFFF, the last code point
}

TEST(Utf8, EveryIllFormedClassIsInvalidAndEscaped) {
  for (const auto& c : ill_formed()) {
    EXPECT_FALSE(is_valid_utf8(c.in)) << c.what;
    const std::string out = escape_invalid_utf8(c.in);
    EXPECT_EQ(out, c.escaped) << c.what;
    EXPECT_TRUE(is_valid_utf8(out)) << c.what;
  }
}

TEST(Utf8, EscapeKeepsWellFormedTextAndControls) {
  const std::string text = "line 1\nline 2\t\xc3\xa9\xe2\x82\xac\0end"s;
  EXPECT_EQ(escape_invalid_utf8(text), text);
}

TEST(Utf8, PrintableEscapesControlsAndInvalidBytes) {
  EXPECT_EQ(printable("a\nb\r\x1b[31m\x7f"), "a\\x0ab\\x0d\\x1b[31m\\x7f");
  EXPECT_EQ(printable("nul\0byte"s), "nul\\x00byte");
  EXPECT_EQ(printable("\xc2\x9b" "c1 CSI"), "\\xc2\\x9bc1 CSI");  // U+009B, a C1 control
  EXPECT_EQ(printable("kakeya/req/\xff\xfe/echo-test-abcd"), "kakeya/req/\\xff\\xfe/echo-test-abcd");
  EXPECT_EQ(printable("caf\xc3\xa9"), "caf\xc3\xa9");  // printable non-ASCII stays
}

TEST(Utf8, PrintableCutsAtCharacterBoundary) {
  EXPECT_EQ(printable("abcdef", 6), "abcdef");
  EXPECT_EQ(printable("abcdefg", 6), "abcdef...");
  // "é" is 2 bytes: cutting at 4 bytes keeps "ab" + "é" (4 bytes), never half of one.
  EXPECT_EQ(printable("ab\xc3\xa9\xc3\xa9", 5), "ab\xc3\xa9...");
  // An escape is not split either: "\xff" is 4 characters.
  EXPECT_EQ(printable("ab\xff", 5), "ab...");
  EXPECT_TRUE(is_valid_utf8(printable(std::string(100, '\xe2'), 17)));
}

TEST(Utf8, TailAndHeadStayOnBoundaries) {
  const std::string s = "a\xc3\xa9z\xe2\x82\xac";  // a é z €  (1+2+1+3 bytes)
  EXPECT_EQ(utf8_tail(s, 100), s);
  EXPECT_EQ(utf8_tail(s, 3), "\xe2\x82\xac");
  EXPECT_EQ(utf8_tail(s, 2), "");              // the 2 last bytes are inside "€"
  EXPECT_EQ(utf8_tail(s, 5), "z\xe2\x82\xac");
  EXPECT_EQ(utf8_head(s, 2), "a");             // "é" does not fit
  EXPECT_EQ(utf8_head(s, 3), "a\xc3\xa9");
  EXPECT_EQ(utf8_head(s, 0), "");
}

std::string stream_escape(const std::string& in, std::size_t chunk) {
  std::string out;
  Utf8StreamEscaper esc([&](std::string_view d) {
    EXPECT_TRUE(is_valid_utf8(d));  // whole characters per call
    out.append(d);
  });
  for (std::size_t i = 0; i < in.size(); i += chunk) esc.write(std::string_view(in).substr(i, chunk));
  esc.flush();
  return out;
}

TEST(Utf8, StreamEscaperEqualsWholeStringForEveryChunking) {
  std::string all = "start \xe2\x82\xac \xf0\x9f\x98\x80 ";
  for (const auto& c : ill_formed()) all += c.in + "|";
  all += "\xe2\x82";  // ends inside a character: escaped at flush
  const std::string want = escape_invalid_utf8(all);
  for (std::size_t chunk = 1; chunk <= 7; ++chunk) EXPECT_EQ(stream_escape(all, chunk), want) << "chunk " << chunk;
}

TEST(Utf8, StreamEscaperJoinsACharacterSplitAcrossWrites) {
  std::string out;
  Utf8StreamEscaper esc([&](std::string_view d) { out.append(d); });
  esc.write("\xe2");
  EXPECT_EQ(out, "");  // held back: more bytes may complete it
  esc.write("\x82");
  esc.write("\xac!");
  EXPECT_EQ(out, "\xe2\x82\xac!");
  esc.write("\xf0\x9f");
  esc.flush();
  EXPECT_EQ(out, "\xe2\x82\xac!\\xf0\\x9f");
}

}  // namespace
}  // namespace kakeya::bridge
