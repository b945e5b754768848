#pragma once
// Building and pushing a request (DESIGN §2): manifest -> request commit -> create-only push.
//
// The request commit is made from objects only: tree = the committed HEAD tree of the user's
// repository (imported into the cache with GitBus::import_objects) or the empty tree, with any
// `.kakeya/run/` files of that tree removed (stale results must never look like this run's) and
// `.kakeya/request.json` added; no parent, so no history is pushed. The user's work tree, index,
// refs and current branch are never read for content nor written.

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bridge/catalog.h"
#include "bridge/request.h"
#include "bridge/result.h"
#include "client/session.h"

namespace kakeya::client {

struct RequestOptions {
  std::string preset;
  std::vector<std::string> param_items;     // -p key=value, in order
  std::optional<std::string> params_json;   // --params-json
  bool no_workload = false;                 // --no-workload: empty base tree
  std::optional<std::filesystem::path> repo;  // --repo; nullopt = the repository containing `cwd`
  std::filesystem::path cwd = ".";
  std::string suffix;                       // --suffix, appended to the branch name
};

// Checks a branch suffix with bridge::is_valid_branch_suffix ("" or '-'/'.'/'_' then up to 63 of
// [A-Za-z0-9._-], no "..", not ending in '.' or ".lock"). Error `bad_suffix`.
Status validate_suffix(const std::string& suffix);

// The manifest for `opts`: preset looked up in the catalog (`unknown_preset` listing the
// allowlist), params typed and validated locally (build_params, then validate_params — the
// runner re-validates), fresh nonce, requested_by = default_requested_by(), created_at = now,
// client = {"kakeya", engine_version()}. The params kept are the ones given (defaults are the
// runner's to fill).
Result<bridge::RequestManifest> build_manifest(const bridge::PresetCatalog& catalog, const RequestOptions& opts);

struct Submission {
  std::string branch;  // without refs/heads/
  std::string ref;     // refs/heads/<branch>
  std::string commit;  // the request commit
  std::optional<std::string> base_commit;  // the HEAD whose tree was used, nullopt for empty
  bridge::RequestManifest manifest;
};

// Builds the request commit for `manifest` and pushes it create-only to
// refs/heads/<ns>/<preset>-<nonce><suffix>. Errors: `no_head_commit`, `no_repository`,
// `branch_exists` (the create-only push lost), bus errors.
Result<Submission> submit_request(Session& session, const bridge::RequestManifest& manifest,
                                  const RequestOptions& opts);

// {branch, ref, nonce, commit, remote (userinfo redacted), preset, params, base_commit}.
nlohmann::json submission_to_json(const Submission& sub, const std::string& remote);

}  // namespace kakeya::client
