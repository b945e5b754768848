#include "bridge/json_strict.h"

#include <string>

#include <gtest/gtest.h>

namespace kakeya::bridge {
namespace {

TEST(JsonStrict, ParsesOrdinaryDocument) {
  auto r = parse_json_strict(R"({"a": 1, "b": [true, null, "x"], "c": {"d": 2.5}})");
  ASSERT_TRUE(r.ok()) << r.error().str();
  EXPECT_EQ(r->at("a").get<int>(), 1);
  EXPECT_TRUE(r->at("b")[0].get<bool>());
  EXPECT_TRUE(r->at("b")[1].is_null());
  EXPECT_EQ(r->at("b")[2].get<std::string>(), "x");
  EXPECT_DOUBLE_EQ(r->at("c").at("d").get<double>(), 2.5);
}

TEST(JsonStrict, ParsesScalarRoot) {
  auto r = parse_json_strict("  42 \n");
  ASSERT_TRUE(r.ok()) << r.error().str();
  EXPECT_EQ(r->get<int>(), 42);
}

TEST(JsonStrict, RejectsDuplicateTopLevelKey) {
  auto r = parse_json_strict("{\"preset\": \"a\",\n \"preset\": \"b\"}");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, errc::kDuplicateKey);
  EXPECT_NE(r.error().message.find("`preset`"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("line 2"), std::string::npos) << r.error().message;
}

TEST(JsonStrict, RejectsDuplicateNestedKeyWithPath) {
  auto r = parse_json_strict(R"({"params": {"steps": 1, "seed": 2, "steps": 3}})");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, errc::kDuplicateKey);
  EXPECT_NE(r.error().message.find("params.steps"), std::string::npos) << r.error().message;
}

TEST(JsonStrict, RejectsDuplicateInsideArrayElement) {
  auto r = parse_json_strict(R"({"xs": [{"k": 1}, {"k": 1, "k": 2}]})");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, errc::kDuplicateKey);
  EXPECT_NE(r.error().message.find("xs[1].k"), std::string::npos) << r.error().message;
}

TEST(JsonStrict, DuplicateWithContainerValueRejected) {
  auto r = parse_json_strict(R"({"a": {}, "a": {}})");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, errc::kDuplicateKey);
}

TEST(JsonStrict, SameKeyInDifferentObjectsIsFine) {
  auto r = parse_json_strict(R"({"a": {"k": 1}, "b": {"k": 2}, "k": 3})");
  ASSERT_TRUE(r.ok()) << r.error().str();
  EXPECT_EQ(r->at("b").at("k").get<int>(), 2);
}

TEST(JsonStrict, RejectsTrailingGarbage) {
  auto r = parse_json_strict(R"({"a": 1} x)");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, errc::kParseError);
  EXPECT_NE(r.error().message.find("column"), std::string::npos) << r.error().message;
}

TEST(JsonStrict, RejectsSecondDocument) {
  auto r = parse_json_strict(R"({"a": 1}{"a": 2})");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, errc::kParseError);
}

TEST(JsonStrict, RejectsInvalidJsonWithPosition) {
  auto r = parse_json_strict("{\n  \"params\": {\"steps\": tru}\n}");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, errc::kParseError);
  EXPECT_NE(r.error().message.find("line 2"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("params.steps"), std::string::npos) << r.error().message;
}

TEST(JsonStrict, RejectsEmptyInputCommentsAndTrailingComma) {
  EXPECT_FALSE(parse_json_strict("").ok());
  EXPECT_FALSE(parse_json_strict("   ").ok());
  EXPECT_FALSE(parse_json_strict("{\"a\": 1 /* c */}").ok());
  EXPECT_FALSE(parse_json_strict("{\"a\": 1,}").ok());
  EXPECT_FALSE(parse_json_strict("[1,]").ok());
  EXPECT_FALSE(parse_json_strict("{'a': 1}").ok());
}

TEST(JsonStrict, RejectsInvalidUtf8) {
  std::string bad = "{\"a\": \"\xff\xfe\"}";
  auto r = parse_json_strict(bad);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, errc::kParseError);
}

TEST(JsonStrict, RejectsExcessiveDepth) {
  std::string deep(kJsonMaxDepth + 1, '[');
  deep += std::string(kJsonMaxDepth + 1, ']');
  auto r = parse_json_strict(deep);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, errc::kTooDeep);
  std::string ok_depth(kJsonMaxDepth, '[');
  ok_depth += std::string(kJsonMaxDepth, ']');
  EXPECT_TRUE(parse_json_strict(ok_depth).ok());
}

TEST(JsonStrict, KeepsNumberKinds) {
  auto r = parse_json_strict(R"({"i": 1, "f": 1.0, "u": 18446744073709551615, "n": -3})");
  ASSERT_TRUE(r.ok()) << r.error().str();
  EXPECT_TRUE(r->at("i").is_number_integer());
  EXPECT_TRUE(r->at("f").is_number_float());
  EXPECT_TRUE(r->at("u").is_number_unsigned());
  EXPECT_EQ(r->at("n").get<int>(), -3);
}

TEST(JsonStrict, PathFormatting) {
  EXPECT_EQ(json_path_append_key("", "a"), "a");
  EXPECT_EQ(json_path_append_key("a", "b"), "a.b");
  EXPECT_EQ(json_path_append_key("a", "b c"), "a[\"b c\"]");
  EXPECT_EQ(json_path_append_index("a", 3), "a[3]");
}

TEST(JsonStrict, ExcerptIsBounded) {
  std::string s = json_excerpt(nlohmann::json(std::string(500, 'x')));
  EXPECT_LE(s.size(), 80u);
  EXPECT_EQ(json_excerpt(nlohmann::json("a\"b")), "\"a\\\"b\"");
}

}  // namespace
}  // namespace kakeya::bridge
