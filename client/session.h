#pragma once
// A connection context for one CLI invocation: the remote, its namespace and a GitBus over the
// per-remote cache directory.

#include <optional>
#include <string>
#include <vector>

#include "bridge/catalog.h"
#include "bridge/gitbus.h"
#include "bridge/result.h"
#include "client/settings.h"

namespace kakeya::client {

struct Session {
  std::string remote;  // as given (may carry userinfo: redact_url() before printing)
  std::string prefix;  // request branch prefix, e.g. "kakeya/req/" or "agents/kakeya-" (bridge/branch.h)
  bridge::GitBus bus;
};

// Resolves the remote (usage error `no_remote`), validates the prefix, loads credentials
// (bridge::load_credentials with --credentials-file) and opens the GitBus over the cache dir
// (created if missing). No network traffic.
Result<Session> open_session(const GlobalOptions& opts);

// Branch names (without "refs/heads/") the remote advertises, from one ls_remote.
Result<std::vector<std::string>> list_remote_branches(bridge::GitBus& bus);

// "refs/heads/" + branch (bridge::to_heads_ref).
std::string head_ref(const std::string& branch);

// The commit author of client commits: name "kakeya", email "<requested_by>" when it looks like
// an address, else "kakeya@localhost". When $KAKEYA_SIGNING_KEY names an SSH key file (a private
// key, or a public key whose private half is in ssh-agent), request and cancel commits are signed
// with it (gpg.format=ssh style), for runners that require signed requests.
bridge::CommitAuthor client_author(const std::string& requested_by);

}  // namespace kakeya::client

namespace kakeya::client {

// Loads the preset catalog from resolve_catalog_path(opts). Errors: `no_catalog`, and those of
// PresetCatalog::load_file (bridge/catalog.h).
Result<bridge::PresetCatalog> load_catalog(const GlobalOptions& opts);

// Resolves a BRANCH|NONCE argument against the remote's branches (one ls_remote; see
// resolve_target).
Result<std::string> resolve_branch_arg(Session& session, const std::string& arg);

}  // namespace kakeya::client
