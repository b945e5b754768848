#include "bridge/yaml_strict.h"

#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "bridge/error_codes.h"
#include "tests/harness/paths.h"

namespace kakeya::bridge {
namespace {

YamlDocument parse_ok(const std::string& text) {
  auto doc = YamlDocument::parse(text, "t.yaml");
  EXPECT_TRUE(doc.ok()) << doc.error().str();
  return std::move(doc).value();
}

// The error of `r`, which must have failed with `code` and a message holding every needle.
template <typename T>
void expect_error(const Result<T>& r, ErrorCode code, std::initializer_list<std::string> needles) {
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, code) << r.error().str();
  for (const auto& n : needles) EXPECT_NE(r.error().message.find(n), std::string::npos) << r.error().str();
}

TEST(YamlStrict, ParseErrorNamesOriginLineAndColumn) {
  expect_error(YamlDocument::parse("a: [unclosed\n", "t.yaml"), errc::kParseError, {"t.yaml:", "invalid YAML"});
  expect_error(YamlDocument::parse(std::string(kMaxYamlBytes + 1, ' '), "big.yaml"), errc::kTooLarge,
               {"big.yaml", std::to_string(kMaxYamlBytes + 1)});
  EXPECT_TRUE(YamlDocument::parse(std::string(kMaxYamlBytes, ' '), "edge.yaml").ok());
}

TEST(YamlStrict, TextMustBeWellFormedUtf8) {
  expect_error(YamlDocument::parse("a: 1\nb: \"caf\xc3\"\n", "t.yaml"), errc::kParseError, {"t.yaml:2:", "UTF-8"});
  expect_error(YamlDocument::parse("a: \xed\xa0\x80\n", "t.yaml"), errc::kParseError, {"t.yaml:1:"});  // a surrogate
  YamlDocument doc = parse_ok("a: \"caf\xc3\xa9\"\n");
  EXPECT_EQ(doc.root().get("a").string("a").value(), "caf\xc3\xa9");
}

TEST(YamlStrict, FoundTextIsShownOnOneLine) {
  YamlDocument doc = parse_ok("\"a\\nb\": 1\nn: \"x\\ty\"\n");
  expect_error(doc.root().check_map("the file", {"n"}), errc::kUnknownKey, {"`a\\x0ab`"});
  expect_error(doc.root().get("n").integer("n"), errc::kBadType, {"\"x\\x09y\""});
}

TEST(YamlStrict, CheckMapRefusesDuplicateUnknownAndNonScalarKeys) {
  YamlDocument doc = parse_ok("a: 1\nb: 2\na: 3\n");
  expect_error(doc.root().check_map("the file", {"a", "b"}), errc::kDuplicateKey, {"t.yaml:3:1", "`a`", "the file"});
  doc = parse_ok("a: 1\nc: 2\n");
  expect_error(doc.root().check_map("the file", {"a", "b"}), errc::kUnknownKey, {"t.yaml:2:1", "`c`"});
  EXPECT_TRUE(doc.root().check_map("the file").ok());  // free-form: any unique keys
  doc = parse_ok("[1, 2]: x\n");
  expect_error(doc.root().check_map("the file"), errc::kBadType, {"non-scalar key"});
  doc = parse_ok("- 1\n");
  expect_error(doc.root().check_map("the file", {"a"}), errc::kBadType, {"the file must be a mapping", "a list"});
}

TEST(YamlStrict, GetRequireAndAbsentKeys) {
  YamlDocument doc = parse_ok("a: 1\nn: ~\nm: {x: y}\n");
  const YamlNode root = doc.root();
  EXPECT_TRUE(root.get("a").present());
  EXPECT_FALSE(root.get("zz").present());
  EXPECT_TRUE(root.get("zz").is_null());
  EXPECT_TRUE(root.get("n").present());
  EXPECT_TRUE(root.get("n").is_null());
  EXPECT_FALSE(root.has("n"));
  EXPECT_TRUE(root.has("m"));
  EXPECT_EQ(root.get("m").get("x").string("x").value(), "y");
  EXPECT_FALSE(root.get("a").get("x").present());  // a scalar has no keys; nothing throws
  expect_error(root.require("zz", "the file"), errc::kMissingKey, {"the file needs `zz`"});
  expect_error(root.require("n", "the file"), errc::kMissingKey, {"`n`"});
  // An absent key's messages point at the mapping it is missing from.
  EXPECT_EQ(root.get("m").get("missing").where(), "t.yaml:3:4");
}

TEST(YamlStrict, IntegersArePlainDecimalWithinBounds) {
  YamlDocument doc = parse_ok("a: 42\nb: -7\nq: \"5\"\nf: 5.0\nx: 0x1f\np: +5\ne: 1e3\nbig: 9223372036854775808\n");
  const YamlNode r = doc.root();
  EXPECT_EQ(r.get("a").integer("a").value(), 42);
  EXPECT_EQ(r.get("b").integer("b").value(), -7);
  expect_error(r.get("q").integer("q"), errc::kBadType, {"q must be an integer", "\"5\""});
  for (const char* k : {"f", "x", "p", "e"}) expect_error(r.get(k).integer(k), errc::kBadType, {k});
  expect_error(r.get("big").integer("big"), errc::kOutOfRange, {"64-bit"});
  expect_error(r.get("a").integer("a", 1, 10), errc::kOutOfRange, {"t.yaml:1:4", "a 42 is outside 1..10"});
  EXPECT_EQ(r.get("a").integer("a", 42, 42).value(), 42);  // bounds are inclusive
}

TEST(YamlStrict, NumbersAreFiniteDecimals) {
  YamlDocument doc = parse_ok("a: 0.05\nb: 3\nc: -1.5e2\nd: .5\ninf: .inf\nnan: .nan\nq: \"1\"\nh: 0x10\nw: 1e999\n");
  const YamlNode r = doc.root();
  EXPECT_DOUBLE_EQ(r.get("a").number("a").value(), 0.05);
  EXPECT_DOUBLE_EQ(r.get("b").number("b").value(), 3);
  EXPECT_DOUBLE_EQ(r.get("c").number("c").value(), -150);
  EXPECT_DOUBLE_EQ(r.get("d").number("d").value(), 0.5);
  for (const char* k : {"inf", "nan", "q", "h", "w"}) {
    expect_error(r.get(k).number(k), errc::kBadType, {std::string(k) + " must be a finite number"});
  }
  expect_error(r.get("a").number("a", 0.1, 1), errc::kOutOfRange, {"a 0.05 is outside 0.1..1"});
}

TEST(YamlStrict, BooleansAreTrueOrFalseOnly) {
  YamlDocument doc = parse_ok("t: true\nf: false\ny: yes\nq: \"true\"\n");
  const YamlNode r = doc.root();
  EXPECT_TRUE(r.get("t").boolean("t").value());
  EXPECT_FALSE(r.get("f").boolean("f").value());
  expect_error(r.get("y").boolean("y"), errc::kBadType, {"true or false", "`yes`"});
  expect_error(r.get("q").boolean("q"), errc::kBadType, {"\"true\""});
}

TEST(YamlStrict, StringsAndStringLists) {
  YamlDocument doc = parse_ok("s: hello\nn: 5\nl: [a, \"b\", 3]\nbad: [a, [b]]\nm: {k: v}\nempty:\n");
  const YamlNode r = doc.root();
  EXPECT_EQ(r.get("s").string("s").value(), "hello");
  EXPECT_EQ(r.get("n").string("n").value(), "5");  // a scalar's text
  expect_error(r.get("m").string("m"), errc::kBadType, {"m must be a string", "a mapping"});
  EXPECT_EQ(r.get("l").string_list("l").value(), (std::vector<std::string>{"a", "b", "3"}));
  expect_error(r.get("bad").string_list("bad"), errc::kBadType, {"bad[1] must be a string", "a list"});
  expect_error(r.get("s").string_list("s"), errc::kBadType, {"s must be a list"});
  EXPECT_TRUE(r.get("empty").string_list("empty").value().empty());
  EXPECT_TRUE(r.get("absent").string_list("absent").value().empty());
}

TEST(YamlStrict, ByteSizes) {
  YamlDocument doc = parse_ok("a: 8MiB\nb: 4096\nc: 512 KiB\nd: 8 MB\ne: 100\nl: [1]\n");
  const YamlNode r = doc.root();
  EXPECT_EQ(r.get("a").byte_size("a", 0, 1u << 30).value(), 8u << 20);
  EXPECT_EQ(r.get("b").byte_size("b", 0, 1u << 30).value(), 4096u);
  EXPECT_EQ(r.get("c").byte_size("c", 0, 1u << 30).value(), 512u * 1024);
  expect_error(r.get("d").byte_size("d", 0, 1u << 30), errc::kBadType, {"d:", "unknown unit"});
  expect_error(r.get("e").byte_size("e", 1024, 2048), errc::kOutOfRange, {"e 100 is outside 1024..2048 bytes"});
  expect_error(r.get("l").byte_size("l", 0, 10), errc::kBadType, {"l must be a byte size"});
}

TEST(YamlStrict, PathsResolveHomeAndBaseDir) {
  YamlDocument doc = parse_ok("rel: a/../b\nabs: /x/y\nhome: ~/m\ntilde: ~\nempty: ''\n");
  const YamlNode r = doc.root();
  EXPECT_EQ(r.get("rel").path("rel", "/etc/k", "/home/u").value(), std::filesystem::path("/etc/k/b"));
  EXPECT_EQ(r.get("abs").path("abs", "/etc/k", "/home/u").value(), std::filesystem::path("/x/y"));
  EXPECT_EQ(r.get("home").path("home", "/etc/k", "/home/u").value(), std::filesystem::path("/home/u/m"));
  expect_error(r.get("home").path("home", "/etc/k", ""), errc::kBadValue, {"home uses ~"});
  expect_error(r.get("empty").path("empty", "/etc/k", "/home/u"), errc::kBadValue, {"empty must not be empty"});
  // A plain `~` is YAML's null, not the home directory.
  expect_error(r.get("tilde").path("tilde", "/etc/k", "/home/u"), errc::kBadType, {"nothing (null)"});
}

TEST(YamlStrict, LoadFileNamesThePath) {
  testing::TempDir dir;
  const auto path = dir.path() / "c.yaml";
  std::ofstream(path) << "a: 1\nb: [\n";
  expect_error(YamlDocument::load_file(path), errc::kParseError, {path.string() + ":"});
  expect_error(YamlDocument::load_file(dir.path() / "none.yaml"), errc::kIo, {"none.yaml"});
}

TEST(YamlStrict, EmptyDocumentIsNull) {
  YamlDocument doc = parse_ok("");
  EXPECT_TRUE(doc.root().is_null());
  EXPECT_EQ(doc.root().where(), "t.yaml");  // no position known
}

}  // namespace
}  // namespace kakeya::bridge
