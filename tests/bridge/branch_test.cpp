#include "bridge/branch.h"

#include <gtest/gtest.h>

#include "bridge/layout.h"

namespace kakeya::bridge {
namespace {

RequestManifest manifest(const std::string& preset, const std::string& nonce) {
  RequestManifest m;
  m.preset = preset;
  m.nonce = nonce;
  return m;
}

TEST(Branch, RequestBranchName) {
  EXPECT_EQ(request_branch_name(kDefaultBranchPrefix, "env-probe", "abc123"), "kakeya/req/env-probe-abc123");
  EXPECT_EQ(request_branch_name("agents/", "sleep-test", "n0nce", "_01ABCdef"), "agents/sleep-test-n0nce_01ABCdef");
  EXPECT_EQ(request_branch_name("agents/kakeya-", "generate", "abcd1234", "-b876"), "agents/kakeya-generate-abcd1234-b876");
  EXPECT_TRUE(check_request_branch_parts(kDefaultBranchPrefix, "env-probe", "abc123").ok());
  EXPECT_TRUE(check_request_branch_parts("a/b.c/d_e/", "env-probe", "abc123", ".x-1").ok());
  EXPECT_TRUE(check_request_branch_parts("agents/kakeya-", "generate", "abcd1234", "-b876").ok());
  EXPECT_TRUE(check_request_branch_parts("ci_", "generate", "abcd1234").ok());
}

TEST(Branch, RequestBranchPartsRejected) {
  auto expect_bad = [](std::string_view prefix, std::string_view preset, std::string_view nonce, std::string_view suffix,
                       const std::string& needle) {
    Status s = check_request_branch_parts(prefix, preset, nonce, suffix);
    ASSERT_FALSE(s.ok()) << prefix << " " << preset << " " << nonce << " " << suffix;
    EXPECT_EQ(s.error().code, errc::kBadBranch);
    EXPECT_NE(s.error().message.find(needle), std::string::npos) << s.error().message;
  };
  expect_bad("", "env-probe", "abcd", "", "prefix");
  expect_bad("a//b/", "env-probe", "abcd", "", "a//b/");
  expect_bad("/a/", "env-probe", "abcd", "", "prefix");
  expect_bad("a b/", "env-probe", "abcd", "", "prefix");
  expect_bad("a/.hidden/", "env-probe", "abcd", "", ".hidden");
  expect_bad("a/.x", "env-probe", "abcd", "", "prefix");      // the partial segment starts with '.'
  expect_bad("a/x.lock/", "env-probe", "abcd", "", "x.lock");
  expect_bad("a..b/", "env-probe", "abcd", "", "a..b");
  expect_bad("kakeya/runners/", "env-probe", "abcd", "", "kakeya/runners");
  expect_bad("kakeya/runners/r1-", "env-probe", "abcd", "", "kakeya/runners/r1-");
  expect_bad("a\xff/", "env-probe", "abcd", "", "a\\xff/");  // shown escaped
  expect_bad("kakeya/req/", "Env", "abcd", "", "preset");
  expect_bad("kakeya/req/", "env-probe", "AB", "", "nonce");
  expect_bad("kakeya/req/", "env-probe", "abcd", "x", "suffix");
  expect_bad("kakeya/req/", "env-probe", "abcd", "_a/b", "suffix");
  expect_bad("kakeya/req/", "env-probe", "abcd", "." + std::string(64, 'a'), "suffix");
  expect_bad("kakeya/req/", "env-probe", "abcd", ".x.lock", "suffix");
  expect_bad("kakeya/req/", "env-probe", "abcd", "_a..b", "suffix");
  // Each part valid, the whole name too long (kMaxBranchNameBytes).
  expect_bad(std::string(100, 'p') + "/" + std::string(100, 'q') + "/", "env-probe", std::string(64, 'n'), "", "branch");
}

TEST(Branch, SuffixRules) {
  EXPECT_TRUE(is_valid_branch_suffix(""));
  EXPECT_TRUE(is_valid_branch_suffix("_"));
  EXPECT_TRUE(is_valid_branch_suffix(".v2"));
  EXPECT_TRUE(is_valid_branch_suffix("-b876"));
  EXPECT_TRUE(is_valid_branch_suffix("_" + std::string(63, 'Z')));
  EXPECT_FALSE(is_valid_branch_suffix("_" + std::string(64, 'Z')));
  EXPECT_FALSE(is_valid_branch_suffix("x"));
  EXPECT_FALSE(is_valid_branch_suffix("_x y"));
  EXPECT_FALSE(is_valid_branch_suffix("-a/b"));
}

TEST(Branch, PrefixRules) {
  for (const char* good : {"kakeya/req/", "agents/", "agents/kakeya-", "a/b/c/", "ci_", "x"}) {
    EXPECT_TRUE(is_valid_branch_prefix(good)) << good;
  }
  for (const char* bad : {"", "/", "/a/", "a//", "a/../", "a/.b/", ".a/", "a/.b", "a/b.lock/", "a b/", "a~/",
                          "kakeya/runners/", "kakeya/runners/x-"}) {
    EXPECT_FALSE(is_valid_branch_prefix(bad)) << bad;
  }
}

TEST(Branch, MatchesManifest) {
  RequestManifest m = manifest("env-probe", "abc123");
  EXPECT_TRUE(check_branch_matches("kakeya/req/env-probe-abc123", m).ok());
  EXPECT_TRUE(check_branch_matches("refs/heads/kakeya/req/env-probe-abc123", m).ok());
  EXPECT_TRUE(check_branch_matches("agents/env-probe-abc123_01HXYZ", m).ok());
  EXPECT_TRUE(check_branch_matches("a/b/c/env-probe-abc123.retry", m).ok());
  EXPECT_TRUE(check_branch_matches("agents/kakeya-env-probe-abc123-b876", m).ok());
  // A prefix may end inside a segment, so any valid prefix before <preset>-<nonce> will do.
  EXPECT_TRUE(check_branch_matches("kakeya/req/xenv-probe-abc123", m).ok());
}

TEST(Branch, MatchingUsesTheManifestSoDashesAreNeverAmbiguous) {
  // agents/kakeya-generate-abcd-b876 is generate/abcd with suffix -b876, or generate/abcd-b876
  // without one: the manifest on the branch decides, and both readings are consistent with it.
  EXPECT_TRUE(check_branch_matches("agents/kakeya-generate-abcd-b876", manifest("generate", "abcd")).ok());
  EXPECT_TRUE(check_branch_matches("agents/kakeya-generate-abcd-b876", manifest("generate", "abcd-b876")).ok());
  // The preset is fixed by the manifest too: "kakeya-generate" is not a preset here.
  EXPECT_FALSE(check_branch_matches("agents/kakeya-generate-abcd-b876", manifest("env-probe", "abcd")).ok());
  EXPECT_FALSE(check_branch_matches("agents/kakeya-generate-abcd-b876", manifest("generate", "b876")).ok());
}

TEST(Branch, MismatchNamesBoth) {
  RequestManifest m = manifest("env-probe", "abc123");
  for (const char* bad : {"kakeya/req/sleep-test-abc123", "kakeya/req/env-probe-abc124", "kakeya/req/env-probe-abc1234",
                          "env-probe-abc123", "kakeya/req/env-probe-abc123_bad/x", "a//env-probe-abc123",
                          "kakeya/req/env-probe-abc123.", "/env-probe-abc123", ".x/env-probe-abc123"}) {
    Status s = check_branch_matches(bad, m);
    ASSERT_FALSE(s.ok()) << bad;
    EXPECT_EQ(s.error().code, errc::kBranchMismatch) << bad << ": " << s.error().message;
    EXPECT_NE(s.error().message.find(bad), std::string::npos) << s.error().message;
    EXPECT_NE(s.error().message.find("env-probe"), std::string::npos) << s.error().message;
    EXPECT_NE(s.error().message.find("abc123"), std::string::npos) << s.error().message;
  }
}

TEST(Branch, RunnerBranchNeverARequest) {
  EXPECT_TRUE(is_runner_branch("kakeya/runners/gpu-1"));
  EXPECT_TRUE(is_runner_branch("refs/heads/kakeya/runners/gpu-1"));
  EXPECT_FALSE(is_runner_branch("kakeya/runners/"));
  EXPECT_FALSE(is_runner_branch("kakeya/runnersx/a"));
  EXPECT_FALSE(is_runner_branch("kakeya/req/env-probe-abcd"));
  EXPECT_EQ(runner_branch_name("gpu-1"), "kakeya/runners/gpu-1");

  EXPECT_FALSE(branch_glob_match("kakeya/**", "kakeya/runners/gpu-1"));
  EXPECT_FALSE(branch_glob_match("**", "refs/heads/kakeya/runners/gpu-1"));
  EXPECT_TRUE(branch_glob_match("kakeya/**", "kakeya/req/env-probe-abcd"));
  EXPECT_TRUE(glob_match("kakeya/**", "kakeya/runners/gpu-1"));  // plain glob has no such rule

  RequestManifest m = manifest("gpu-1", "abcd");
  Status s = check_branch_matches("kakeya/runners/gpu-1-abcd", m);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, errc::kBadBranch);
}

TEST(Branch, Globs) {
  EXPECT_TRUE(glob_match("kakeya/req/**", "kakeya/req/env-probe-abcd"));
  EXPECT_TRUE(glob_match("kakeya/req/**", "kakeya/req/team/a/env-probe-abcd"));
  EXPECT_FALSE(glob_match("kakeya/req/**", "kakeya/req"));
  EXPECT_FALSE(glob_match("kakeya/req/**", "kakeya/request/x"));
  EXPECT_TRUE(glob_match("kakeya/req/*", "kakeya/req/env-probe-abcd"));
  EXPECT_FALSE(glob_match("kakeya/req/*", "kakeya/req/team/env-probe-abcd"));
  EXPECT_TRUE(glob_match("agents/kakeya-*", "agents/kakeya-env-probe-abcd"));
  EXPECT_FALSE(glob_match("agents/kakeya-*", "agents/kakeya-x/env-probe-abcd"));
  EXPECT_FALSE(glob_match("agents/kakeya-*", "agents/other"));
  EXPECT_TRUE(glob_match("*/env-probe-*", "x/env-probe-abcd"));
  EXPECT_TRUE(glob_match("a?c", "abc"));
  EXPECT_FALSE(glob_match("a?c", "a/c"));
  EXPECT_TRUE(glob_match("**", "anything/at/all"));
  EXPECT_TRUE(glob_match("a*", "a"));
  EXPECT_TRUE(glob_match("exact/name", "exact/name"));
  EXPECT_FALSE(glob_match("exact/name", "exact/name2"));
  EXPECT_FALSE(glob_match("", "x"));
  EXPECT_TRUE(glob_match("", ""));
  EXPECT_TRUE(glob_match("a/**/z", "a/b/c/z"));
  EXPECT_TRUE(glob_match("*-*-*", "a-b-c"));
  EXPECT_FALSE(glob_match("*-*-*", "a-b"));
  // Many stars on a long non-matching name finish (no exponential backtracking).
  EXPECT_FALSE(glob_match("*a*a*a*a*a*a*a*a*a*a*b", std::string(2000, 'a')));
  // refs/heads/ on either side is ignored by branch_glob_match.
  EXPECT_TRUE(branch_glob_match("refs/heads/kakeya/req/**", "kakeya/req/x-abcd"));
  EXPECT_TRUE(branch_glob_match("kakeya/req/**", "refs/heads/kakeya/req/x-abcd"));
  EXPECT_TRUE(branch_matches_any({"nope/*", "agents/kakeya-*"}, "agents/kakeya-env-probe-abcd"));
  EXPECT_FALSE(branch_matches_any({"nope/*"}, "agents/kakeya-env-probe-abcd"));
  EXPECT_FALSE(branch_matches_any({}, "kakeya/req/x"));
}

TEST(Branch, RefHelpers) {
  EXPECT_EQ(strip_heads_prefix("refs/heads/a/b"), "a/b");
  EXPECT_EQ(strip_heads_prefix("a/b"), "a/b");
  EXPECT_EQ(strip_heads_prefix("refs/tags/v1"), "refs/tags/v1");
  EXPECT_EQ(to_heads_ref("a/b"), "refs/heads/a/b");
  EXPECT_EQ(to_heads_ref("refs/heads/a/b"), "refs/heads/a/b");
}

}  // namespace
}  // namespace kakeya::bridge
