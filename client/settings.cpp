#include "client/settings.h"

#include <unistd.h>

#include <array>
#include <cstdlib>
#include <system_error>

#include "bridge/branch.h"
#include "bridge/sha256.h"
#include "bridge/utf8.h"

namespace kakeya::client {
namespace fs = std::filesystem;

namespace {

std::optional<std::string> env(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return std::nullopt;
  return std::string(v);
}

}  // namespace

Result<std::string> resolve_remote(const GlobalOptions& opts) {
  if (!opts.remote.empty()) return opts.remote;
  if (auto v = env("KAKEYA_REMOTE")) return *v;
  return make_error(errc::kNoRemote, "no remote given: pass --remote URL or set KAKEYA_REMOTE");
}

Status validate_prefix(const std::string& prefix) {
  if (bridge::is_valid_branch_prefix(prefix)) return ok_status();
  return make_error(errc::kBadPrefix, "branch prefix '" + bridge::printable(prefix) +
                                     "': expected [A-Za-z0-9._/-] ending with '/' or inside a segment (e.g. "
                                     "kakeya/req/ or agents/kakeya-), no segment starting with '.', ending in '.lock' "
                                     "or containing '..', not under kakeya/runners/");
}

Result<fs::path> resolve_cache_dir(const GlobalOptions& opts, const std::string& remote) {
  if (opts.cache_dir) return *opts.cache_dir;
  fs::path base;
  if (auto xdg = env("XDG_CACHE_HOME")) {
    base = *xdg;
  } else if (auto home = env("HOME")) {
    base = fs::path(*home) / ".cache";
  } else {
    return make_error(errc::kNoCacheDir, "neither XDG_CACHE_HOME nor HOME is set: pass --cache-dir");
  }
  return base / "kakeya" / bridge::sha256_hex(remote).substr(0, 16);
}

std::vector<fs::path> default_catalog_candidates(const fs::path& exe_dir) {
  return {(exe_dir / ".." / "share" / "kakeya" / "presets.yaml").lexically_normal(),
          (exe_dir / ".." / "manifests" / "presets.yaml").lexically_normal()};
}

Result<fs::path> resolve_catalog_path(const GlobalOptions& opts) {
  if (opts.catalog) return *opts.catalog;
  if (auto v = env("KAKEYA_CATALOG")) return fs::path(*v);
  std::string tried;
  for (const auto& c : default_catalog_candidates(opts.exe_dir)) {
    std::error_code ec;
    if (fs::is_regular_file(c, ec)) return c;
    tried += (tried.empty() ? "" : ", ") + c.string();
  }
  return make_error(errc::kNoCatalog,
                    "no preset catalog found (tried " + tried + "): pass --catalog or set KAKEYA_CATALOG");
}

fs::path executable_dir(const char* argv0) {
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec && !self.empty()) return self.parent_path();
  if (argv0 != nullptr && std::string_view(argv0).find('/') != std::string_view::npos) {
    fs::path p = fs::absolute(argv0, ec);
    if (!ec) return p.parent_path();
  }
  return ".";
}

std::string default_requested_by() {
  if (auto v = env("KAKEYA_REQUESTED_BY")) return *v;
  std::string user;
  if (auto u = env("USER")) {
    user = *u;
  } else if (auto l = env("LOGNAME")) {
    user = *l;
  } else if (const char* g = getlogin(); g != nullptr) {
    user = g;
  } else {
    user = "unknown";
  }
  std::array<char, 256> host{};
  if (gethostname(host.data(), host.size() - 1) != 0 || host[0] == '\0') return user;
  return user + "@" + host.data();
}

}  // namespace kakeya::client
