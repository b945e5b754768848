#pragma once
// Global options of the `kakeya` CLI and how their defaults are resolved.

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "bridge/exit_codes.h"
#include "bridge/layout.h"
#include "bridge/result.h"

namespace kakeya::client {

// Exit codes shared by every subcommand: bridge/exit_codes.h (wait/run add 2 and 3, see
// wait_outcome.h).
using kakeya::kExitFailure;
using kakeya::kExitOk;
using kakeya::kExitRemote;
using kakeya::kExitUsage;

struct GlobalOptions {
  std::string remote;                              // --remote, else $KAKEYA_REMOTE
  std::string prefix = std::string(bridge::kDefaultBranchPrefix);  // --prefix (request branch prefix)
  std::optional<std::filesystem::path> credentials_file;  // --credentials-file
  std::optional<std::filesystem::path> cache_dir;         // --cache-dir
  std::optional<std::filesystem::path> catalog;           // --catalog, else $KAKEYA_CATALOG
  bool json = false;                                      // --json
  std::filesystem::path exe_dir;  // directory of the running executable (catalog default)
};

// --remote, else $KAKEYA_REMOTE. Error `no_remote` (a usage error) when neither is set.
Result<std::string> resolve_remote(const GlobalOptions& opts);

// Checks a request branch prefix with bridge::is_valid_branch_prefix. Error `bad_prefix`
// (a usage error) naming the value.
Status validate_prefix(const std::string& prefix);

// --cache-dir, else ($XDG_CACHE_HOME or $HOME/.cache)/kakeya/<first 16 hex chars of
// sha256(remote)>. Error `no_cache_dir` when neither XDG_CACHE_HOME nor HOME is set.
Result<std::filesystem::path> resolve_cache_dir(const GlobalOptions& opts, const std::string& remote);

// The catalog locations tried, in order, when neither --catalog nor $KAKEYA_CATALOG is set:
// <exe_dir>/../share/kakeya/presets.yaml, <exe_dir>/../manifests/presets.yaml.
std::vector<std::filesystem::path> default_catalog_candidates(const std::filesystem::path& exe_dir);

// --catalog, else $KAKEYA_CATALOG, else the first existing default candidate.
// Error `no_catalog` listing the paths tried.
Result<std::filesystem::path> resolve_catalog_path(const GlobalOptions& opts);

// Directory of the running executable: /proc/self/exe where available, else argv0 made
// absolute; "." when neither works.
std::filesystem::path executable_dir(const char* argv0);

// $KAKEYA_REQUESTED_BY, else "<user>@<host>" ($USER or $LOGNAME or getlogin(), gethostname()).
std::string default_requested_by();

}  // namespace kakeya::client
