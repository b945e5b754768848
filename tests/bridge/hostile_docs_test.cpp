// Bus documents as an attacker with push access writes them: ill-formed UTF-8 in every string
// field, NUL bytes, surrogates, overlong encodings, oversized and deeply nested JSON. Every
// reader must answer with an error value whose message is well-formed, one-line, bounded UTF-8
// naming the field; every writer must produce well-formed UTF-8 without throwing.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "bridge/cancel_request.h"
#include "bridge/json_strict.h"
#include "bridge/json_text.h"
#include "bridge/limits.h"
#include "bridge/request.h"
#include "bridge/run_state.h"
#include "bridge/utf8.h"

namespace kakeya::bridge {
namespace {

using nlohmann::json;
using namespace std::string_literals;

const std::string kGoodRequest =
    R"({"schema_version": 1, "preset": "echo-test", "params": {"message": "hi"}, "nonce": "abcd1234",)"
    R"( "requested_by": "alice", "created_at": "2024-05-01T12:00:00Z",)"
    R"( "client": {"name": "kakeya", "version": "0.1.0"}})";

// Ill-formed byte sequences, raw (as an attacker writes them into a file).
const std::vector<std::string> kBadBytes = {"\xff", "\xc0\xaf", "\xed\xa0\x80", "\xe2\x82", "\x80", "\xf4\x90\x80\x80"};

// Replaces the first occurrence of `from` in `text` with `to`.
std::string with(std::string text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return text.replace(at, from.size(), to);
}

// The message is what a runner writes into status.json and its log: it must stay well-formed,
// one line and bounded whatever the input.
void expect_safe_message(const Error& e) {
  EXPECT_TRUE(is_valid_utf8(e.message)) << printable(e.message);
  EXPECT_EQ(e.message.find('\n'), std::string::npos) << printable(e.message);
  EXPECT_EQ(e.message.find('\0'), std::string::npos) << printable(e.message);
  EXPECT_LT(e.message.size(), 1024u) << printable(e.message);
}

TEST(HostileDocs, JsonTextEscapesIllFormedStringsAndKeysWithoutThrowing) {
  json doc{{"reason", "bad \xff byte"}, {"nested", {{"k\xfe", {"\xc0\xaf", "ok \xc3\xa9"}}}}};
  std::string text;
  ASSERT_NO_THROW(text = to_json_text(doc));
  EXPECT_TRUE(is_valid_utf8(text));
  EXPECT_NE(text.find(R"(bad \\xff byte)"), std::string::npos) << text;  // JSON-escaped backslash
  EXPECT_NE(text.find(R"(k\\xfe)"), std::string::npos) << text;
  EXPECT_NE(text.find("ok \xc3\xa9"), std::string::npos) << text;  // valid text untouched
  // What it wrote parses back, and shows the escapes as text.
  auto back = parse_json_strict(text);
  ASSERT_TRUE(back.ok()) << back.error().str();
  EXPECT_EQ(back->at("reason"), "bad \\xff byte");
  const std::string file = to_json_file(doc);
  EXPECT_EQ(file.back(), '\n');
  EXPECT_TRUE(is_valid_utf8(file));
}

TEST(HostileDocs, JsonTextOfValidDocumentEqualsDump) {
  json doc{{"a", 1}, {"b", {"x", "y\n"}}, {"c", "\xe2\x82\xac"}};
  EXPECT_EQ(to_json_text(doc, 2), doc.dump(2));
}

TEST(HostileDocs, InvalidUtf8InEveryRequestStringFieldIsRejectedNamingIt) {
  // Each string value of the request, and a params key, replaced by text holding a bad sequence.
  const std::vector<std::pair<std::string, std::string>> fields = {
      {"\"echo-test\"", "preset"},     {"\"hi\"", "params.message"},         {"\"abcd1234\"", "nonce"},
      {"\"alice\"", "requested_by"},   {"\"2024-05-01T12:00:00Z\"", "created_at"},
      {"\"kakeya\"", "client.name"},   {"\"0.1.0\"", "client.version"},      {"\"message\"", "params"}};
  for (const auto& bad : kBadBytes) {
    for (const auto& [value, field] : fields) {
      const std::string text = with(kGoodRequest, value, "\"x" + bad + "y\"");
      auto r = parse_request(text);
      ASSERT_FALSE(r.ok()) << field << " " << printable(bad);
      EXPECT_EQ(r.error().code, errc::kParseError) << r.error().str();
      EXPECT_NE(r.error().message.find("`" + field), std::string::npos)
          << field << " not named in: " << printable(r.error().message);
      expect_safe_message(r.error());
    }
  }
}

TEST(HostileDocs, EscapedSurrogatesNulAndControlsAreRefused) {
  // A lone surrogate escape is not a character.
  auto lone = parse_request(with(kGoodRequest, "\"alice\"", R"("a\ud800b")"));
  ASSERT_FALSE(lone.ok());
  EXPECT_NE(lone.error().message.find("requested_by"), std::string::npos) << lone.error().message;
  expect_safe_message(lone.error());
  // \u0000 parses as a NUL character: refused as a control character, shown escaped.
  auto nul = parse_request(with(kGoodRequest, "\"alice\"", R"("a\u0000b")"));
  ASSERT_FALSE(nul.ok());
  EXPECT_EQ(nul.error().code, errc::kBadValue);
  EXPECT_NE(nul.error().message.find("control character"), std::string::npos) << nul.error().message;
  expect_safe_message(nul.error());
  // A raw NUL byte in the text is not JSON.
  auto raw_nul = parse_request(with(kGoodRequest, "\"alice\"", "\"a\0b\""s));
  ASSERT_FALSE(raw_nul.ok());
  EXPECT_EQ(raw_nul.error().code, errc::kParseError);
  expect_safe_message(raw_nul.error());
}

TEST(HostileDocs, ParserDetailIsBoundedForHugeTokens) {
  // nlohmann quotes everything it read of a broken token; the message must not.
  const std::string huge = "\"" + std::string(60000, 'a') + "\xff\"";
  auto r = parse_request(with(kGoodRequest, "\"alice\"", huge));
  ASSERT_FALSE(r.ok());
  expect_safe_message(r.error());
  auto key = parse_json_strict("{\"" + std::string(5000, 'k') + "\": 1, \"" + std::string(5000, 'k') + "\": 2}");
  ASSERT_FALSE(key.ok());
  EXPECT_EQ(key.error().code, errc::kDuplicateKey);
  expect_safe_message(key.error());
}

// A document of exactly `size` bytes: `doc` followed by spaces.
std::string padded(const std::string& doc, std::size_t size) { return doc + std::string(size - doc.size(), ' '); }

TEST(HostileDocs, RequestSizeLimitAtAndOnePast) {
  EXPECT_TRUE(parse_request(padded(kGoodRequest, kMaxRequestBytes)).ok());
  auto over = parse_request(padded(kGoodRequest, kMaxRequestBytes + 1));
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.error().code, errc::kTooLarge);
  EXPECT_NE(over.error().message.find(".kakeya/request.json"), std::string::npos) << over.error().message;
  EXPECT_NE(over.error().message.find(std::to_string(kMaxRequestBytes + 1)), std::string::npos);
}

TEST(HostileDocs, StatusSizeLimitAtAndOnePast) {
  const std::string st = R"({"state": "claimed", "runner_id": "r1", "claim_gen": 1})";
  EXPECT_TRUE(parse_status(padded(st, kMaxStatusBytes)).ok());
  auto over = parse_status(padded(st, kMaxStatusBytes + 1));
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.error().code, errc::kTooLarge);
  EXPECT_NE(over.error().message.find(".kakeya/run/status.json"), std::string::npos) << over.error().message;
}

TEST(HostileDocs, CancelSizeLimitAtAndOnePast) {
  const std::string c = R"({"requested_by": "bob", "created_at": "2024-05-01T12:00:00Z", "reason": "stop"})";
  EXPECT_TRUE(parse_cancel(padded(c, kMaxCancelBytes)).ok());
  auto over = parse_cancel(padded(c, kMaxCancelBytes + 1));
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.error().code, errc::kTooLarge);
  EXPECT_NE(over.error().message.find(".kakeya/run/cancel.json"), std::string::npos) << over.error().message;
}

std::string nested(std::size_t depth) { return std::string(depth, '[') + std::string(depth, ']'); }

TEST(HostileDocs, NestingDepthAtAndOnePast) {
  EXPECT_TRUE(parse_json_strict(nested(kJsonMaxDepth)).ok());
  auto over = parse_json_strict(nested(kJsonMaxDepth + 1));
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.error().code, errc::kTooDeep);
  // Deep nesting inside a status document names where it happened.
  auto st = parse_status(R"({"state": "running", "progress": )" + nested(10000) + "}");
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, errc::kTooDeep);
  EXPECT_NE(st.error().message.find("progress"), std::string::npos) << st.error().message;
  expect_safe_message(st.error());
}

TEST(HostileDocs, StatusWithIllFormedBytesIsRejectedSafely) {
  for (const auto& bad : kBadBytes) {
    auto r = parse_status("{\"state\": \"running\", \"reason\": \"" + bad + "\"}");
    ASSERT_FALSE(r.ok()) << printable(bad);
    EXPECT_NE(r.error().message.find("reason"), std::string::npos) << printable(r.error().message);
    expect_safe_message(r.error());
  }
  auto unknown = parse_status(R"({"state": "w\u00e9ird"})");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.error().message.find("state"), std::string::npos) << unknown.error().message;
}

TEST(HostileDocs, CancelDocumentIsStrict) {
  auto ok = parse_cancel(R"({"requested_by": "bob", "created_at": "2024-05-01T12:00:00Z", "reason": "two\nlines"})");
  ASSERT_TRUE(ok.ok()) << ok.error().str();
  EXPECT_EQ(ok->reason, "two\nlines");
  auto extra = parse_cancel(R"({"requested_by": "b", "created_at": "2024-05-01T12:00:00Z", "reason": "", "x": 1})");
  ASSERT_FALSE(extra.ok());
  EXPECT_EQ(extra.error().code, errc::kUnknownKey);
  auto when = parse_cancel(R"({"requested_by": "b", "created_at": "yesterday", "reason": ""})");
  ASSERT_FALSE(when.ok());
  EXPECT_NE(when.error().message.find("created_at"), std::string::npos);
  auto who = parse_cancel(R"({"requested_by": "b\u001b[2J", "created_at": "2024-05-01T12:00:00Z", "reason": ""})");
  ASSERT_FALSE(who.ok());
  EXPECT_NE(who.error().message.find("requested_by"), std::string::npos);
  expect_safe_message(who.error());
  auto bytes = parse_cancel("{\"requested_by\": \"\xff\", \"created_at\": \"2024-05-01T12:00:00Z\", \"reason\": \"\"}");
  ASSERT_FALSE(bytes.ok());
  expect_safe_message(bytes.error());
}

TEST(HostileDocs, InMemoryManifestWithIllFormedStringsIsRefusedNotThrown) {
  // What a client could build from its own command line before pushing.
  RequestManifest m;
  m.preset = "echo-test";
  m.nonce = "abcd1234";
  m.requested_by = "me";
  m.created_at = "2024-05-01T12:00:00Z";
  m.client = {"kakeya", "0.1.0"};
  m.params = json{{"message", "a\xff"}};
  Status st = ok_status();
  ASSERT_NO_THROW(st = validate_request(m));
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find("params.message"), std::string::npos) << st.error().message;
  expect_safe_message(st.error());
  m.params = json::object();
  m.requested_by = "me\xc0\xaf";
  ASSERT_NO_THROW(st = validate_request(m));
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find("requested_by"), std::string::npos) << st.error().message;
  expect_safe_message(st.error());
}

}  // namespace
}  // namespace kakeya::bridge
