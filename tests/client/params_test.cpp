#include "client/params.h"

#include <gtest/gtest.h>

#include "bridge/catalog.h"
#include "client/request_flags.h"

namespace kakeya::client {
namespace {

constexpr const char* kCatalog = R"(version: 1
presets:
  - name: demo
    description: "Demo preset."
    argv: [/bin/echo, "{n}", "{ratio}", "{verbose}", "{mode}", "{text}"]
    params:
      n: {kind: int, min: -10, max: 10, default: 1}
      ratio: {kind: float, min: -1.0, max: 1.0, default: 0.5}
      verbose: {kind: bool, default: false}
      mode: {kind: enum, values: [fast, slow], default: fast}
      text: {kind: string, pattern: "[ -~]*", max_length: 16, default: ""}
    timeout_s: 10
)";

class ClientParams : public ::testing::Test {
 protected:
  void SetUp() override {
    auto c = bridge::PresetCatalog::load_string(kCatalog, "test");
    ASSERT_TRUE(c.ok()) << c.error().str();
    catalog_ = std::make_unique<bridge::PresetCatalog>(std::move(*c));
    preset_ = catalog_->find("demo");
    ASSERT_NE(preset_, nullptr);
  }
  std::unique_ptr<bridge::PresetCatalog> catalog_;
  const bridge::PresetSpec* preset_ = nullptr;
};

TEST_F(ClientParams, EachKindIsTypedFromItsText) {
  auto p = build_params(*preset_, {"n=-3", "ratio=-0.25", "verbose=true", "mode=slow", "text=-rf"}, std::nullopt);
  ASSERT_TRUE(p.ok()) << p.error().str();
  EXPECT_TRUE((*p)["n"].is_number_integer());
  EXPECT_EQ((*p)["n"].get<int64_t>(), -3);
  EXPECT_TRUE((*p)["ratio"].is_number_float());
  EXPECT_DOUBLE_EQ((*p)["ratio"].get<double>(), -0.25);
  EXPECT_EQ((*p)["verbose"], nlohmann::json(true));
  EXPECT_EQ((*p)["mode"], "slow");
  EXPECT_EQ((*p)["text"], "-rf");  // a leading '-' is a value, not a flag
  EXPECT_TRUE(bridge::validate_params(*preset_, *p).ok());
}

TEST_F(ClientParams, ValueMayContainEqualsAndBeEmpty) {
  auto p = build_params(*preset_, {"text=a=b", "mode="}, std::nullopt);
  ASSERT_TRUE(p.ok()) << p.error().str();
  EXPECT_EQ((*p)["text"], "a=b");
  EXPECT_EQ((*p)["mode"], "");
  EXPECT_FALSE(bridge::validate_params(*preset_, *p).ok());  // "" is not an enum value
}

TEST_F(ClientParams, UntypableValuesAreRefusedNamingTheParam) {
  for (const char* bad : {"n=5.0", "n=0x5", "n=", "n=1e3", "n=99999999999999999999", "ratio=abc", "ratio=inf",
                          "ratio=nan", "verbose=maybe"}) {
    auto p = build_params(*preset_, {bad}, std::nullopt);
    ASSERT_FALSE(p.ok()) << bad;
    EXPECT_EQ(p.error().code, errc::kBadParam) << bad;
    std::string key = std::string(bad).substr(0, std::string(bad).find('='));
    EXPECT_NE(p.error().message.find("params." + key), std::string::npos) << p.error().message;
  }
}

TEST_F(ClientParams, BoolSpellings) {
  for (const char* t : {"verbose=TRUE", "verbose=1", "verbose=yes", "verbose=on"}) {
    EXPECT_EQ((*build_params(*preset_, {t}, std::nullopt))["verbose"], nlohmann::json(true)) << t;
  }
  for (const char* f : {"verbose=false", "verbose=0", "verbose=No", "verbose=off"}) {
    EXPECT_EQ((*build_params(*preset_, {f}, std::nullopt))["verbose"], nlohmann::json(false)) << f;
  }
}

TEST_F(ClientParams, UnknownDuplicateAndMalformedItems) {
  auto unknown = build_params(*preset_, {"steps=3"}, std::nullopt);
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().code, errc::kUnknownParam);
  EXPECT_NE(unknown.error().message.find("n, ratio, verbose, mode, text"), std::string::npos);
  auto dup = build_params(*preset_, {"n=1", "n=2"}, std::nullopt);
  ASSERT_FALSE(dup.ok());
  EXPECT_EQ(dup.error().code, errc::kDuplicateParam);
  auto noeq = build_params(*preset_, {"-rf"}, std::nullopt);
  ASSERT_FALSE(noeq.ok());
  EXPECT_EQ(noeq.error().code, errc::kBadParam);
  auto nokey = build_params(*preset_, {"=3"}, std::nullopt);
  ASSERT_FALSE(nokey.ok());
  EXPECT_EQ(nokey.error().code, errc::kBadParam);
}

TEST_F(ClientParams, ParamsJsonIsMergedAndOverriddenByDashP) {
  auto p = build_params(*preset_, {"n=2"}, std::string(R"({"n": 7, "mode": "slow"})"));
  ASSERT_TRUE(p.ok()) << p.error().str();
  EXPECT_EQ((*p)["n"], 2);
  EXPECT_EQ((*p)["mode"], "slow");
  auto arr = build_params(*preset_, {}, std::string("[1]"));
  ASSERT_FALSE(arr.ok());
  EXPECT_EQ(arr.error().code, errc::kBadParam);
  auto dupkey = build_params(*preset_, {}, std::string(R"({"n": 1, "n": 2})"));
  ASSERT_FALSE(dupkey.ok());
  EXPECT_EQ(dupkey.error().code, errc::kBadParam);
}

// Real argv through the CLI11 flags that `kakeya request` / `kakeya run` use.
TEST(ClientRequestFlags, DashValuesStayValuesAndPositionalIsNotSwallowed) {
  CLI::App app{"t"};
  RequestOptions opts;
  add_request_flags(app, opts);
  std::vector<std::string> args = {"-p", "text=-rf", "demo", "-p", "n=-3", "--suffix=.x", "--no-workload"};
  std::vector<std::string> rev(args.rbegin(), args.rend());  // CLI11 parses a reversed vector
  ASSERT_NO_THROW(app.parse(rev));
  EXPECT_EQ(opts.preset, "demo");
  EXPECT_EQ(opts.param_items, (std::vector<std::string>{"text=-rf", "n=-3"}));
  EXPECT_EQ(opts.suffix, ".x");
  EXPECT_TRUE(opts.no_workload);
}

}  // namespace
}  // namespace kakeya::client
