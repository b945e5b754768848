#include "client/target.h"

#include <gtest/gtest.h>

namespace kakeya::client {
namespace {

const std::vector<std::string> kBranches = {
    "main",
    "kakeya/req/env-probe-k3x9q2m7a1b4",
    "kakeya/req/generate-aaaa1111bbbb",
    "kakeya/req/generate-aaaa1111bbbb2",  // a different nonce that starts with the first
    "kakeya/req/niah-eval-zz99zz99zz99.retry",
    "other/env-probe-k3x9q2m7a1b4",       // same nonce, other prefix
    "kakeya/runners/host-1",
    "agents/kakeya-generate-gh77gh77gh77-b876",  // prefix ending inside a segment, '-' suffix
};

TEST(ClientTarget, FullBranchNameIsTakenAsIs) {
  auto r = resolve_target("kakeya/req/env-probe-k3x9q2m7a1b4", "kakeya/req/", kBranches);
  ASSERT_TRUE(r.ok()) << r.error().str();
  EXPECT_EQ(*r, "kakeya/req/env-probe-k3x9q2m7a1b4");
}

TEST(ClientTarget, RefsHeadsPrefixIsStripped) {
  auto r = resolve_target("refs/heads/other/env-probe-k3x9q2m7a1b4", "kakeya/req/", kBranches);
  ASSERT_TRUE(r.ok()) << r.error().str();
  EXPECT_EQ(*r, "other/env-probe-k3x9q2m7a1b4");
}

TEST(ClientTarget, MissingFullBranchIsNotFound) {
  auto r = resolve_target("kakeya/req/env-probe-nope", "kakeya/req/", kBranches);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, errc::kNotFound);
  EXPECT_NE(r.error().message.find("kakeya/req/env-probe-nope"), std::string::npos);
}

TEST(ClientTarget, BareNonceMatchesOnlyUnderThePrefix) {
  auto r = resolve_target("k3x9q2m7a1b4", "kakeya/req/", kBranches);
  ASSERT_TRUE(r.ok()) << r.error().str();
  EXPECT_EQ(*r, "kakeya/req/env-probe-k3x9q2m7a1b4");
  auto o = resolve_target("k3x9q2m7a1b4", "other/", kBranches);
  ASSERT_TRUE(o.ok()) << o.error().str();
  EXPECT_EQ(*o, "other/env-probe-k3x9q2m7a1b4");
}

TEST(ClientTarget, NonceIsNotMatchedAsAPrefixOfALongerNonce) {
  auto r = resolve_target("aaaa1111bbbb", "kakeya/req/", kBranches);
  ASSERT_TRUE(r.ok()) << r.error().str();
  EXPECT_EQ(*r, "kakeya/req/generate-aaaa1111bbbb");
  auto partial = resolve_target("aaaa1111", "kakeya/req/", kBranches);
  ASSERT_FALSE(partial.ok());
  EXPECT_EQ(partial.error().code, errc::kNotFound);
}

TEST(ClientTarget, NonceWithSuffixMatches) {
  auto r = resolve_target("zz99zz99zz99", "kakeya/req/", kBranches);
  ASSERT_TRUE(r.ok()) << r.error().str();
  EXPECT_EQ(*r, "kakeya/req/niah-eval-zz99zz99zz99.retry");
}

TEST(ClientTarget, AmbiguousNonceListsTheCandidates) {
  std::vector<std::string> b = {"kakeya/req/generate-abcd1234", "kakeya/req/env-probe-abcd1234"};
  auto r = resolve_target("abcd1234", "kakeya/req/", b);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, errc::kAmbiguous);
  EXPECT_NE(r.error().message.find("kakeya/req/generate-abcd1234"), std::string::npos);
  EXPECT_NE(r.error().message.find("kakeya/req/env-probe-abcd1234"), std::string::npos);
}

TEST(ClientTarget, UnknownNonceAndEmptyArgument) {
  auto r = resolve_target("qqqqqqqqqqqq", "kakeya/req/", kBranches);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, errc::kNotFound);
  auto e = resolve_target("", "kakeya/req/", kBranches);
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.error().code, errc::kUsage);
}

TEST(ClientTarget, LeafHasNonceNeedsAPresetPart) {
  EXPECT_FALSE(leaf_has_nonce("-abcd1234", "abcd1234"));
  EXPECT_TRUE(leaf_has_nonce("x-abcd1234", "abcd1234"));
  EXPECT_TRUE(leaf_has_nonce("x-abcd1234.2", "abcd1234"));
  EXPECT_TRUE(leaf_has_nonce("x-abcd1234_s", "abcd1234"));
  EXPECT_FALSE(leaf_has_nonce("x-abcd12345", "abcd1234"));
  EXPECT_TRUE(leaf_has_nonce("x-abcd-b876", "abcd"));    // a '-' suffix (DESIGN §2)
  EXPECT_TRUE(leaf_has_nonce("x-abcd-1234", "abcd-1234"));
}

TEST(ClientTarget, PrefixEndingInsideASegmentAndDashSuffix) {
  auto r = resolve_target("gh77gh77gh77", "agents/kakeya-", kBranches);
  ASSERT_TRUE(r.ok()) << r.error().str();
  EXPECT_EQ(*r, "agents/kakeya-generate-gh77gh77gh77-b876");
  EXPECT_EQ(resolve_target("gh77gh77gh77", "kakeya/req/", kBranches).error().code, errc::kNotFound);
}

TEST(ClientTarget, NonceThatStartsAnotherWithADashIsAmbiguous) {
  // With '-' suffixes, "abcd" followed by "-1234" may be nonce abcd + suffix -1234 or the nonce
  // abcd-1234: a bare nonce never silently picks one of two branches.
  std::vector<std::string> b = {"kakeya/req/generate-abcd-1234", "kakeya/req/generate-abcd"};
  auto r = resolve_target("abcd", "kakeya/req/", b);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, errc::kAmbiguous);
  auto full = resolve_target("abcd-1234", "kakeya/req/", b);
  ASSERT_TRUE(full.ok()) << full.error().str();
  EXPECT_EQ(*full, "kakeya/req/generate-abcd-1234");
}

}  // namespace
}  // namespace kakeya::client

namespace kakeya::client {
namespace {

TEST(ClientTarget, BranchWithoutItsNamespaceResolves) {
  // Under the session's prefix first, although other/ has the same leaf.
  auto r = resolve_target("env-probe-k3x9q2m7a1b4", "kakeya/req/", kBranches);
  ASSERT_TRUE(r.ok()) << r.error().str();
  EXPECT_EQ(*r, "kakeya/req/env-probe-k3x9q2m7a1b4");
  auto part = resolve_target("req/niah-eval-zz99zz99zz99.retry", "kakeya/req/", kBranches);
  ASSERT_TRUE(part.ok()) << part.error().str();
  EXPECT_EQ(*part, "kakeya/req/niah-eval-zz99zz99zz99.retry");
  auto other = resolve_target("kakeya-generate-gh77gh77gh77-b876", "kakeya/req/", kBranches);
  ASSERT_TRUE(other.ok()) << other.error().str();
  EXPECT_EQ(*other, "agents/kakeya-generate-gh77gh77gh77-b876");
}

TEST(ClientTarget, ShortNameEndingSeveralBranchesIsAmbiguous) {
  const std::vector<std::string> branches = {"a/env-probe-q1q1q1q1q1q1", "b/env-probe-q1q1q1q1q1q1"};
  auto r = resolve_target("env-probe-q1q1q1q1q1q1", "kakeya/req/", branches);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, errc::kAmbiguous);
  EXPECT_NE(r.error().message.find("a/env-probe-q1q1q1q1q1q1"), std::string::npos) << r.error().message;
}

}  // namespace
}  // namespace kakeya::client
