#include "bridge/request.h"

#include <set>
#include <string>

#include <gtest/gtest.h>

namespace kakeya::bridge {
namespace {

using nlohmann::json;

json good_doc() {
  return json{{"schema_version", 1},
              {"preset", "sleep-test"},
              {"params", {{"seconds", 5}}},
              {"nonce", "abc123xyz789"},
              {"requested_by", "alice@example.com"},
              {"created_at", "2024-05-01T12:00:00Z"},
              {"client", {{"name", "kakeya"}, {"version", "0.1.0"}}}};
}

// Asserts a parse failure with `code` whose message mentions every string in `needles`.
void expect_error(const std::string& text, const std::string& code, std::initializer_list<std::string> needles) {
  auto r = parse_request(text);
  ASSERT_FALSE(r.ok()) << "accepted: " << text;
  EXPECT_EQ(r.error().code, code) << r.error().str();
  for (const auto& n : needles) {
    EXPECT_NE(r.error().message.find(n), std::string::npos) << "missing '" << n << "' in: " << r.error().message;
  }
}

void expect_doc_error(const json& doc, const std::string& code, std::initializer_list<std::string> needles) {
  expect_error(doc.dump(), code, needles);
}

TEST(Request, ParsesValidManifest) {
  auto r = parse_request(good_doc().dump());
  ASSERT_TRUE(r.ok()) << r.error().str();
  EXPECT_EQ(r->schema_version, 1);
  EXPECT_EQ(r->preset, "sleep-test");
  EXPECT_EQ(r->params.at("seconds").get<int>(), 5);
  EXPECT_EQ(r->nonce, "abc123xyz789");
  EXPECT_EQ(r->requested_by, "alice@example.com");
  EXPECT_EQ(r->created_at, "2024-05-01T12:00:00Z");
  EXPECT_EQ(r->client.name, "kakeya");
  EXPECT_EQ(r->client.version, "0.1.0");
}

TEST(Request, SerializeRoundTripsAndIsStable) {
  auto r = parse_request(good_doc().dump());
  ASSERT_TRUE(r.ok());
  std::string text = serialize_request(*r);
  auto again = parse_request(text);
  ASSERT_TRUE(again.ok()) << again.error().str();
  EXPECT_EQ(serialize_request(*again), text);
  // Fixed key order, pretty printed with a trailing newline.
  EXPECT_LT(text.find("\"schema_version\""), text.find("\"preset\""));
  EXPECT_LT(text.find("\"preset\""), text.find("\"params\""));
  EXPECT_LT(text.find("\"params\""), text.find("\"nonce\""));
  EXPECT_LT(text.find("\"created_at\""), text.find("\"client\""));
  EXPECT_EQ(text.back(), '\n');
  EXPECT_NE(text.find("\n  \"preset\": \"sleep-test\""), std::string::npos) << text;
}

TEST(Request, UnknownKeysRejectedByName) {
  json d = good_doc();
  d["priority"] = 1;
  expect_doc_error(d, "unknown_key", {"priority"});
  d = good_doc();
  d["client"]["os"] = "linux";
  expect_doc_error(d, "unknown_key", {"client.os"});
}

TEST(Request, MissingKeysRejectedByName) {
  for (const char* k : {"schema_version", "preset", "params", "nonce", "requested_by", "created_at", "client"}) {
    json d = good_doc();
    d.erase(k);
    expect_doc_error(d, "missing_key", {k});
  }
  json d = good_doc();
  d["client"].erase("version");
  expect_doc_error(d, "missing_key", {"client.version"});
}

TEST(Request, DuplicateKeysRejected) {
  std::string text = good_doc().dump();
  text.insert(1, "\"nonce\": \"zzzz\", ");
  expect_error(text, "duplicate_key", {"nonce"});
  std::string nested = R"({"schema_version":1,"preset":"a-b","params":{"x":1,"x":2},"nonce":"abcd",)"
                       R"("requested_by":"","created_at":"2024-01-01T00:00:00Z","client":{"name":"k","version":"1"}})";
  expect_error(nested, "duplicate_key", {"params.x"});
}

TEST(Request, SchemaVersionMustBeJsonInteger1) {
  json d = good_doc();
  d["schema_version"] = true;
  expect_doc_error(d, "bad_type", {"schema_version", "true"});
  d["schema_version"] = 1.0;
  expect_doc_error(d, "bad_type", {"schema_version", "1.0"});
  d["schema_version"] = "1";
  expect_doc_error(d, "bad_type", {"schema_version", "\"1\""});
  d["schema_version"] = 2;
  expect_doc_error(d, "bad_value", {"schema_version", "2"});
  d["schema_version"] = nullptr;
  expect_doc_error(d, "bad_type", {"schema_version", "null"});
  // Also literally "1.0" text, not via nlohmann's serializer.
  std::string text = good_doc().dump();
  auto pos = text.find("\"schema_version\":1");
  ASSERT_NE(pos, std::string::npos);
  text.replace(pos, 18, "\"schema_version\":1.0");
  expect_error(text, "bad_type", {"schema_version"});
}

TEST(Request, WrongTypesNameFieldAndValue) {
  json d = good_doc();
  d["preset"] = 7;
  expect_doc_error(d, "bad_type", {"preset", "7"});
  d = good_doc();
  d["params"] = json::array({1});
  expect_doc_error(d, "bad_type", {"params", "[1]"});
  d = good_doc();
  d["params"] = "steps=5";
  expect_doc_error(d, "bad_type", {"params", "steps=5"});
  d = good_doc();
  d["nonce"] = 12345;
  expect_doc_error(d, "bad_type", {"nonce", "12345"});
  d = good_doc();
  d["requested_by"] = nullptr;
  expect_doc_error(d, "bad_type", {"requested_by", "null"});
  d = good_doc();
  d["created_at"] = 1714564800;
  expect_doc_error(d, "bad_type", {"created_at", "1714564800"});
  d = good_doc();
  d["client"] = "kakeya/0.1";
  expect_doc_error(d, "bad_type", {"client", "kakeya/0.1"});
  d = good_doc();
  d["client"]["version"] = 1;
  expect_doc_error(d, "bad_type", {"client.version", "1"});
}

TEST(Request, RootMustBeObject) {
  expect_error("[1,2]", "bad_type", {"object"});
  expect_error("\"x\"", "bad_type", {"object"});
}

TEST(Request, NullParamRejected) {
  json d = good_doc();
  d["params"]["seconds"] = nullptr;
  expect_doc_error(d, "bad_value", {"params.seconds", "null"});
}

TEST(Request, NestedParamRejected) {
  json d = good_doc();
  d["params"]["seconds"] = json::array({1, 2});
  expect_doc_error(d, "bad_type", {"params.seconds", "[1,2]"});
  d["params"]["seconds"] = json::object({{"a", 1}});
  expect_doc_error(d, "bad_type", {"params.seconds"});
}

TEST(Request, NoncePattern) {
  for (const char* good : {"abcd", "0abc", "a-b-c-d", "k3x9q2m7a1b4"}) {
    json d = good_doc();
    d["nonce"] = good;
    EXPECT_TRUE(parse_request(d.dump()).ok()) << good;
  }
  std::string max_len = "a" + std::string(63, 'b');
  json d = good_doc();
  d["nonce"] = max_len;
  EXPECT_TRUE(parse_request(d.dump()).ok());
  for (const std::string& bad : {std::string("abc"), std::string("-abc"), std::string("ABCD"), std::string("ab_cd"),
                                std::string("ab.cd"), std::string("ab cd"), std::string(""), max_len + "c",
                                std::string("abcd/ef")}) {
    json b = good_doc();
    b["nonce"] = bad;
    expect_doc_error(b, "bad_value", {"nonce", "\"" + bad.substr(0, 20)});
  }
}

TEST(Request, PresetNamePattern) {
  json d = good_doc();
  d["preset"] = "Env-Probe";
  expect_doc_error(d, "bad_value", {"preset", "Env-Probe"});
  d["preset"] = "../etc";
  expect_doc_error(d, "bad_value", {"preset", "../etc"});
}

TEST(Request, CreatedAtMustBeRfc3339) {
  for (const char* bad : {"2024-05-01", "2024-05-01 12:00:00Z", "2024-05-01T12:00:00", "2024-13-01T00:00:00Z",
                          "2023-02-29T00:00:00Z", "2024-05-01T24:00:00Z", "2024-05-01T12:00:00+0100", "yesterday",
                          "2024-05-01T12:00:00.Z"}) {
    json d = good_doc();
    d["created_at"] = bad;
    expect_doc_error(d, "bad_value", {"created_at", bad});
  }
}

TEST(Request, Rfc3339Accepts) {
  EXPECT_TRUE(is_rfc3339("2024-02-29T23:59:60Z"));
  EXPECT_TRUE(is_rfc3339("2024-05-01T12:00:00.123456+05:30"));
  EXPECT_TRUE(is_rfc3339("2024-05-01t12:00:00z"));
  EXPECT_TRUE(is_rfc3339("2000-02-29T00:00:00-08:00"));
  EXPECT_FALSE(is_rfc3339("1900-02-29T00:00:00Z"));
  EXPECT_FALSE(is_rfc3339("2024-05-01T12:00:00+24:00"));
  EXPECT_FALSE(is_rfc3339("2024-05-01T12:00:00Zjunk"));
}

TEST(Request, InformationalStringsBounded) {
  json d = good_doc();
  d["requested_by"] = std::string(300, 'a');
  expect_doc_error(d, "bad_value", {"requested_by"});
  d = good_doc();
  d["requested_by"] = "alice\nbob";
  expect_doc_error(d, "bad_value", {"requested_by", "control"});
  d = good_doc();
  d["client"]["name"] = "";
  expect_doc_error(d, "bad_value", {"client.name"});
}

TEST(Request, NewNonceIsValidAndRandom) {
  std::set<std::string> seen;
  for (int i = 0; i < 200; ++i) {
    std::string n = new_nonce();
    ASSERT_EQ(n.size(), 12u);
    for (char c : n) ASSERT_TRUE((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')) << n;
    EXPECT_TRUE(is_valid_nonce(n)) << n;
    seen.insert(n);
  }
  EXPECT_EQ(seen.size(), 200u);
}

TEST(Request, NowIsRfc3339Utc) {
  std::string t = now_rfc3339();
  EXPECT_EQ(t.size(), 20u) << t;
  EXPECT_EQ(t.back(), 'Z');
  EXPECT_TRUE(is_rfc3339(t)) << t;
}

TEST(Request, ValidateRequestChecksInMemoryManifest) {
  RequestManifest m;
  m.preset = "env-probe";
  m.nonce = new_nonce();
  m.created_at = now_rfc3339();
  m.client = {"kakeya", "0.1.0"};
  EXPECT_TRUE(validate_request(m).ok());
  m.params = json::array();
  EXPECT_FALSE(validate_request(m).ok());
  m.params = json::object();
  m.schema_version = 2;
  EXPECT_FALSE(validate_request(m).ok());
}

}  // namespace
}  // namespace kakeya::bridge
