#include "runner/log_filter.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "bridge/utf8.h"
#include "runner/job_log.h"
#include "tests/harness/paths.h"

namespace kakeya::runner {
namespace {

using namespace std::string_literals;

// Everything `chunks` become through a LogFilter with `secrets`; checks per-call well-formedness.
std::string filter(const std::vector<std::string>& secrets, const std::vector<std::string>& chunks) {
  std::string out;
  LogFilter f(secrets, [&](std::string_view d) {
    EXPECT_TRUE(bridge::is_valid_utf8(d)) << bridge::printable(d);
    out.append(d);
  });
  for (const auto& c : chunks) f.write(c);
  f.flush();
  return out;
}

TEST(LogFilter, EscapesIllFormedBytesAndKeepsText) {
  EXPECT_EQ(filter({}, {"ok \xc3\xa9\n", "bin \xff\xfe\x00 end\n"s}), "ok \xc3\xa9\nbin \\xff\\xfe\x00 end\n"s);
  // A character split by the pipe is joined, not escaped.
  EXPECT_EQ(filter({}, {"euro \xe2", "\x82", "\xac!"}), "euro \xe2\x82\xac!");
  // Cut short at the end of the stream: escaped.
  EXPECT_EQ(filter({}, {"tail \xe2\x82"}), "tail \\xe2\\x82");
}

TEST(LogFilter, RedactsSecretsSplitAcrossWrites) {
  EXPECT_EQ(filter({"hunter22-token"}, {"a hunt", "er22-to", "ken b"}), "a [REDACTED] b");
}

TEST(LogFilter, RedactsASecretWithIllFormedBytesBeforeEscaping) {
  const std::string secret = "k\xff\xfe-key";
  EXPECT_EQ(filter({secret}, {"x k\xff", "\xfe-key y"}), "x [REDACTED] y");
}

TEST(LogFilter, RedactsASecretThatEscapingWouldSpellOut) {
  // The job writes the byte FF then "abcd": escaped, that is the text \xffabcd, which is the secret.
  EXPECT_EQ(filter({"\\xffabcd"}, {"see \xff", "abcd now"}), "see [REDACTED] now");
}

TEST(LogFilter, IllFormedSecretNeverCutsACharacter) {
  // "\x82\xac" + "AB" is a suffix of the bytes of "€AB": redacting it in escaped text would leave
  // a lone E2. The raw pass sees the job's bytes and redacts there; the output stays well-formed.
  const std::string out = filter({"\x82\xac" "AB"}, {"\xe2\x82\xac" "AB"});
  EXPECT_TRUE(bridge::is_valid_utf8(out)) << bridge::printable(out);
  EXPECT_EQ(out, "\\xe2[REDACTED]");
}

TEST(JobLogUtf8, FileAndTailAreWellFormedWhateverTheJobWrites) {
  testing::TempDir dir;
  const auto path = dir.path() / "job.log";
  auto log = JobLog::create(path, 1 << 20, {"secret-value"});
  ASSERT_TRUE(log.ok()) << log.error().str();
  log->write("\xc0\xaf overlong, \xed\xa0\x80 surrogate, \x80 stray, secret-value, \xe2");
  log->write("\x82\xac joined\n\xf0\x9f");
  EXPECT_TRUE(bridge::is_valid_utf8(log->tail(5)));
  log->close();
  const std::string text = testing::file_text(path);
  EXPECT_TRUE(bridge::is_valid_utf8(text)) << bridge::printable(text);
  EXPECT_EQ(text,
            "\\xc0\\xaf overlong, \\xed\\xa0\\x80 surrogate, \\x80 stray, [REDACTED], \xe2\x82\xac joined\n\\xf0\\x9f");
  for (std::size_t n = 0; n < 12; ++n) EXPECT_TRUE(bridge::is_valid_utf8(log->tail(n))) << n;
}

TEST(JobLogUtf8, CapCutsBetweenCharacters) {
  testing::TempDir dir;
  const auto path = dir.path() / "job.log";
  auto log = JobLog::create(path, 5, {});
  ASSERT_TRUE(log.ok());
  log->write("ab\xe2\x82\xac\xe2\x82\xac");  // 2 + 3 + 3 bytes; the cap (5) ends after the first "€"
  log->close();
  const std::string text = testing::file_text(path);
  EXPECT_TRUE(bridge::is_valid_utf8(text)) << bridge::printable(text);
  EXPECT_EQ(text, "ab\xe2\x82\xac\n" + truncation_marker(5));
  EXPECT_EQ(log->bytes_written(), 5u);
  EXPECT_EQ(log->bytes_dropped(), 3u);
}

}  // namespace
}  // namespace kakeya::runner
