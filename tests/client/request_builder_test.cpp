#include "client/request_builder.h"

#include <cstdlib>

#include <gtest/gtest.h>

#include "bridge/branch.h"
#include "bridge/version.h"

namespace kakeya::client {
namespace {

constexpr const char* kBuilderCatalog = R"(version: 1
presets:
  - name: echo-test
    description: "Echo."
    argv: [/bin/echo, "{message}"]
    params:
      message: {kind: string, pattern: "[ -~]*", max_length: 20, required: true}
    timeout_s: 10
)";

TEST(ClientRequestBuilder, ManifestIsTypedValidatedAndStamped) {
  auto cat = bridge::PresetCatalog::load_string(kBuilderCatalog, "test");
  ASSERT_TRUE(cat.ok()) << cat.error().str();
  setenv("KAKEYA_REQUESTED_BY", "ci@builder", 1);
  RequestOptions o;
  o.preset = "echo-test";
  o.param_items = {"message=-rf --all"};
  auto m = build_manifest(*cat, o);
  unsetenv("KAKEYA_REQUESTED_BY");
  ASSERT_TRUE(m.ok()) << m.error().str();
  EXPECT_EQ(m->preset, "echo-test");
  EXPECT_EQ(m->params["message"], "-rf --all");
  EXPECT_TRUE(bridge::is_valid_nonce(m->nonce));
  EXPECT_TRUE(bridge::is_rfc3339(m->created_at));
  EXPECT_EQ(m->requested_by, "ci@builder");
  EXPECT_EQ(m->client.name, "kakeya");
  EXPECT_EQ(m->client.version, engine_version());
  // What is pushed parses back to the same manifest.
  auto round = bridge::parse_request(bridge::serialize_request(*m));
  ASSERT_TRUE(round.ok()) << round.error().str();
  EXPECT_EQ(round->params, m->params);
}

TEST(ClientRequestBuilder, LocalValidationRefusesBadRequests) {
  auto cat = bridge::PresetCatalog::load_string(kBuilderCatalog, "test");
  ASSERT_TRUE(cat.ok());
  RequestOptions o;
  o.preset = "rm-everything";
  auto unknown = build_manifest(*cat, o);
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().code, errc::kUnknownPreset);
  EXPECT_NE(unknown.error().message.find("echo-test"), std::string::npos);

  o.preset = "echo-test";
  auto missing = build_manifest(*cat, o);  // message is required
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code, errc::kMissingParam);

  o.param_items = {"message=" + std::string(21, 'x')};
  auto too_long = build_manifest(*cat, o);
  ASSERT_FALSE(too_long.ok());

  o.param_items = {"message=hi"};
  o.suffix = "x";
  auto bad_suffix = build_manifest(*cat, o);
  ASSERT_FALSE(bad_suffix.ok());
  EXPECT_EQ(bad_suffix.error().code, errc::kBadSuffix);
}

TEST(ClientRequestBuilder, SuffixRules) {
  for (const char* good : {"", ".2", "_retry-1", ".a.b", "-b876", "-"}) EXPECT_TRUE(validate_suffix(good).ok()) << good;
  const std::string too_long = "." + std::string(64, 'a');
  for (const char* bad : {"a", "./b", "..", ".x.lock", ".x.", ". b", "_~1", "-a/b", too_long.c_str()}) {
    EXPECT_FALSE(validate_suffix(bad).ok()) << bad;
  }
}

TEST(ClientRequestBuilder, BranchNameFollowsTheProtocol) {
  EXPECT_EQ(bridge::request_branch_name("kakeya/req/", "env-probe", "k3x9q2m7a1b4"), "kakeya/req/env-probe-k3x9q2m7a1b4");
  EXPECT_EQ(bridge::request_branch_name("agents/kakeya-", "generate", "abcd1234", "-b876"),
            "agents/kakeya-generate-abcd1234-b876");
}

}  // namespace
}  // namespace kakeya::client
