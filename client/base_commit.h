#pragma once
// Finding the committed HEAD that a request's workload is taken from — read-only.
//
// The seed client checked out branches and once swallowed uncommitted files (DESIGN §7). This
// module only opens the repository and resolves HEAD to a commit id: it never reads or writes the
// work tree or the index and never moves a ref.

#include <filesystem>
#include <optional>
#include <string>

#include "bridge/result.h"

namespace kakeya::client {

struct BaseCommit {
  std::filesystem::path repo_path;  // what git_repository_open_ext found (work tree root or .git)
  std::string head_oid;             // 40 hex chars: the commit HEAD points to
};

// Opens the git repository containing `start` (git_repository_open_ext, searching parent
// directories) and resolves HEAD to its commit. Returns nullopt when no repository contains
// `start` (the request then carries an empty base tree). Errors: `repository` when a repository
// exists but cannot be opened, `no_head_commit` when HEAD is unborn (no commit yet) — committed
// content is the only thing a request may carry.
// When `exact` is true `start` itself must be the repository (--repo PATH): a missing repository
// is then the error `no_repository` instead of nullopt.
Result<std::optional<BaseCommit>> find_base_commit(const std::filesystem::path& start, bool exact);

}  // namespace kakeya::client
