#include "client/settings.h"

#include <cstdlib>
#include <fstream>

#include <gtest/gtest.h>

#include "bridge/sha256.h"
#include "tests/harness/paths.h"

namespace kakeya::client {
namespace {
namespace fs = std::filesystem;

// Sets an environment variable for the lifetime of the object, restoring the old value.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value) {
      setenv(name, value, 1);
    } else {
      unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (old_) {
      setenv(name_, old_->c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST(ClientSettings, Sha256MatchesTheKnownVector) {
  EXPECT_EQ(bridge::sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(ClientSettings, CacheDirIsPerRemoteUnderXdgCacheHome) {
  ScopedEnv xdg("XDG_CACHE_HOME", "/tmp/xdg-test");
  GlobalOptions o;
  auto a = resolve_cache_dir(o, "git://127.0.0.1:9418/a");
  auto b = resolve_cache_dir(o, "git://127.0.0.1:9418/b");
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->parent_path(), fs::path("/tmp/xdg-test/kakeya"));
  EXPECT_EQ(a->filename().string(), bridge::sha256_hex("git://127.0.0.1:9418/a").substr(0, 16));
  EXPECT_NE(*a, *b);
  o.cache_dir = "/explicit";
  EXPECT_EQ(*resolve_cache_dir(o, "x"), fs::path("/explicit"));
}

TEST(ClientSettings, RemoteFromFlagThenEnvironmentElseError) {
  ScopedEnv none("KAKEYA_REMOTE", nullptr);
  GlobalOptions o;
  auto missing = resolve_remote(o);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code, errc::kNoRemote);
  ScopedEnv env("KAKEYA_REMOTE", "git://h/r");
  EXPECT_EQ(*resolve_remote(o), "git://h/r");
  o.remote = "git://flag/r";
  EXPECT_EQ(*resolve_remote(o), "git://flag/r");
}

TEST(ClientSettings, CatalogDefaultsToTheFirstExistingCandidate) {
  ScopedEnv none("KAKEYA_CATALOG", nullptr);
  kakeya::testing::TempDir tmp;
  fs::create_directories(tmp.path() / "bin");
  fs::create_directories(tmp.path() / "manifests");
  GlobalOptions o;
  o.exe_dir = tmp.path() / "bin";
  auto missing = resolve_catalog_path(o);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code, errc::kNoCatalog);
  std::ofstream(tmp.path() / "manifests" / "presets.yaml") << "presets: []\n";
  auto found = resolve_catalog_path(o);
  ASSERT_TRUE(found.ok()) << found.error().str();
  EXPECT_EQ(*found, tmp.path() / "manifests" / "presets.yaml");
  fs::create_directories(tmp.path() / "share" / "kakeya");
  std::ofstream(tmp.path() / "share" / "kakeya" / "presets.yaml") << "presets: []\n";
  EXPECT_EQ(*resolve_catalog_path(o), tmp.path() / "share" / "kakeya" / "presets.yaml");
}

TEST(ClientSettings, PrefixValidation) {
  for (const char* good : {"kakeya/req/", "agents/", "agents/kakeya-", "ci_", "a/b.c/d-"}) {
    EXPECT_TRUE(validate_prefix(good).ok()) << good;
  }
  for (const char* bad : {"", "/a/", "a//b/", "a/../b/", "a b/", "a/.hidden/", "x.lock/", "a/.x", "kakeya/runners/",
                          "kakeya/runners/r1-", "a\xff/"}) {
    auto s = validate_prefix(bad);
    ASSERT_FALSE(s.ok()) << bad;
    EXPECT_EQ(s.error().code, errc::kBadPrefix);
  }
}

TEST(ClientSettings, RequestedByComesFromTheEnvironment) {
  ScopedEnv by("KAKEYA_REQUESTED_BY", "ci@builder");
  EXPECT_EQ(default_requested_by(), "ci@builder");
}

}  // namespace
}  // namespace kakeya::client
