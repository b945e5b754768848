#include "runner/redact.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

namespace kakeya::runner {
namespace {

// Feeds `chunks` through a redactor and returns everything the sink received.
std::string stream(const std::vector<std::string>& secrets, const std::vector<std::string>& chunks,
                   std::size_t* max_pending = nullptr) {
  std::string out;
  StreamingRedactor r(secrets, [&](std::string_view s) { out.append(s); });
  for (const std::string& c : chunks) {
    r.write(c);
    if (max_pending != nullptr) *max_pending = std::max(*max_pending, r.pending_bytes());
  }
  r.flush();
  EXPECT_EQ(r.pending_bytes(), 0u);
  return out;
}

TEST(RedactAll, ReplacesEveryOccurrence) {
  EXPECT_EQ(redact_all("token=hunter22 and hunter22.", {"hunter22"}),
            "token=[REDACTED] and [REDACTED].");
  EXPECT_EQ(redact_all("nothing here", {"hunter22"}), "nothing here");
  EXPECT_EQ(redact_all("", {"hunter22"}), "");
}

TEST(RedactAll, LongestMatchWinsAtAPosition) {
  EXPECT_EQ(redact_all("xxabcdefyy", {"abcd", "abcdef"}), "xx[REDACTED]yy");
  // Leftmost wins over longer-but-later: "abcd" starts first, "cdefgh" is then broken.
  EXPECT_EQ(redact_all("abcdefgh", {"abcd", "cdefgh"}), "[REDACTED]efgh");
}

TEST(StreamingRedactor, ShortSecretsAreIgnoredWithAReason) {
  StreamingRedactor r({"abc", "", "long-enough"}, [](std::string_view) {});
  ASSERT_EQ(r.ignored().size(), 2u);
  EXPECT_EQ(r.ignored()[0].index, 0u);
  EXPECT_NE(r.ignored()[0].reason.find("shorter than 4"), std::string::npos);
  EXPECT_EQ(r.ignored()[0].reason.find("abc"), std::string::npos);  // never echoes the value
  EXPECT_EQ(r.ignored()[1].index, 1u);
  EXPECT_EQ(r.secret_count(), 1u);
  EXPECT_EQ(stream({"abc"}, {"abc abc"}), "abc abc");
}

TEST(StreamingRedactor, NoSecretsPassesThroughImmediately) {
  std::string out;
  StreamingRedactor r({}, [&](std::string_view s) { out.append(s); });
  r.write("hello");
  EXPECT_EQ(out, "hello");
}

TEST(StreamingRedactor, EmitsUndecidableBytesPromptly) {
  std::string out;
  StreamingRedactor r({"secret-value"}, [&](std::string_view s) { out.append(s); });
  r.write("log line: sec");
  EXPECT_EQ(out, "log line: ");  // "sec" could still become the secret
  EXPECT_EQ(r.pending_bytes(), 3u);
  r.write("ond line\n");
  EXPECT_EQ(out, "log line: second line\n");
  r.write("secret-valu");
  EXPECT_EQ(out, "log line: second line\n");
  r.write("e!");
  EXPECT_EQ(out, "log line: second line\n[REDACTED]!");
}

TEST(StreamingRedactor, SecretAtEndIsRedactedOnFlush) {
  std::string out;
  StreamingRedactor r({"abcd", "abcdefgh"}, [&](std::string_view s) { out.append(s); });
  r.write("x abcd");  // could still grow into "abcdefgh"
  EXPECT_EQ(out, "x ");
  r.flush();
  EXPECT_EQ(out, "x [REDACTED]");
}

// Every way of cutting a stream into two and into three chunks gives the reference output.
TEST(StreamingRedactor, EverySplitPointMatchesReference) {
  const std::vector<std::vector<std::string>> secret_sets = {
      {"hunter22"},
      {"abcd", "abcdef", "cdefgh"},          // overlapping / nested
      {"aaaa", "aaab"},                      // self-overlapping
      {"TOKEN_123", "tok", "xyzw", "wxyz"},  // one ignored (short)
  };
  const std::vector<std::string> texts = {
      "pre hunter22 mid hunter2 hunter22",
      "abcdefgh abcdef abcd cdefgh abcdefabcd abcabcdefgh",
      "aaaaaaab aaa aaaab aaaaaaaa",
      "TOKEN_12 TOKEN_123 xyzwxyz wxyzw tok",
      "ends with secret abcdefgh",
  };
  for (const auto& secrets : secret_sets) {
    for (const auto& text : texts) {
      const std::string want = redact_all(text, secrets);
      for (std::size_t a = 0; a <= text.size(); ++a) {
        ASSERT_EQ(stream(secrets, {text.substr(0, a), text.substr(a)}), want)
            << "split at " << a << " of '" << text << "'";
        for (std::size_t b = a; b <= text.size(); b += 3) {
          ASSERT_EQ(stream(secrets, {text.substr(0, a), text.substr(a, b - a), text.substr(b)}),
                    want)
              << "splits at " << a << "," << b;
        }
      }
      // One byte at a time.
      std::vector<std::string> bytes;
      for (char c : text) bytes.emplace_back(1, c);
      ASSERT_EQ(stream(secrets, bytes), want);
    }
  }
}

TEST(StreamingRedactor, ManySecrets) {
  std::vector<std::string> secrets;
  std::string text;
  for (int i = 0; i < 200; ++i) {
    secrets.push_back("secret-" + std::to_string(i * 7919) + "-end");
    text += "line " + std::to_string(i) + " " + secrets.back() + "\n";
  }
  const std::string out = stream(secrets, {text.substr(0, 1000), text.substr(1000)});
  for (const std::string& s : secrets) EXPECT_EQ(out.find(s), std::string::npos) << s;
  EXPECT_EQ(out, redact_all(text, secrets));
  EXPECT_NE(out.find("line 199 [REDACTED]\n"), std::string::npos);
}

// Property test: random streams over a small alphabet (so secrets occur and overlap often),
// random secrets, random chunking == the non-streaming reference; pending never exceeds
// max_secret_len - 1; and no secret survives in the output.
TEST(StreamingRedactor, RandomizedAgainstReference) {
  std::mt19937 rng(20240607);
  auto rand_str = [&](std::size_t len) {
    std::string s;
    for (std::size_t i = 0; i < len; ++i) s += static_cast<char>('a' + rng() % 3);
    return s;
  };
  for (int iter = 0; iter < 3000; ++iter) {
    std::vector<std::string> secrets;
    const int n = 1 + static_cast<int>(rng() % 5);
    for (int i = 0; i < n; ++i) secrets.push_back(rand_str(2 + rng() % 7));
    const std::string text = rand_str(rng() % 200);
    std::vector<std::string> chunks;
    for (std::size_t pos = 0; pos < text.size();) {
      const std::size_t len = std::min<std::size_t>(rng() % 12, text.size() - pos);
      chunks.push_back(text.substr(pos, len));
      pos += len;
    }
    std::size_t max_pending = 0;
    const std::string got = stream(secrets, chunks, &max_pending);
    const std::string want = redact_all(text, secrets);
    ASSERT_EQ(got, want) << "iteration " << iter << " text " << text;
    std::size_t max_len = 0;
    for (const auto& s : secrets) {
      if (s.size() >= kMinSecretLen) {
        max_len = std::max(max_len, s.size());
        ASSERT_EQ(got.find(s), std::string::npos) << s << " survived in " << got;
      }
    }
    if (max_len > 0) {
      ASSERT_LE(max_pending, max_len - 1);
    }
  }
}

}  // namespace
}  // namespace kakeya::runner
