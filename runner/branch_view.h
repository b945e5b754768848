#pragma once
// What a runner knows about one request branch at one tip: the request manifest text, the run
// status (absent = queued), and the cancel request. Also builds runner commits (status and run
// files on top of the observed tip, `[skip ci]`).
//
// Reading never fails because of what a branch holds: each of the three files is either absent,
// read (a regular file within its size limit, bridge/limits.h), or described by an error string
// that names the path and the problem (a directory, symlink, submodule, non-standard mode,
// repeated name, oversized, unparsable). The caller turns such an error into a `rejected`
// receipt. read_branch_view fails only when the tip itself cannot be read from the cache.
#include <optional>
#include <string>
#include <vector>

#include "bridge/cancel_request.h"
#include "bridge/gitbus.h"
#include "bridge/result.h"
#include "bridge/run_state.h"

namespace kakeya::runner {

struct BranchView {
  std::string ref;   // full ref, refs/heads/...
  std::string tip;   // commit oid the view was read from
  std::optional<std::string> request_json;     // .kakeya/request.json text, if present and readable
  std::string request_error;                   // non-empty: present but not a readable regular file
  std::optional<bridge::RunStatus> status;     // .kakeya/run/status.json; nullopt = queued
  std::string status_error;                    // non-empty: present but unreadable or malformed
  bool cancel_requested = false;               // .kakeya/run/cancel.json present (readable or not)
  std::optional<bridge::CancelRequest> cancel; // its content, when readable and well-formed
  std::string cancel_error;                    // non-empty: present but unreadable or malformed

  // The state as the protocol sees it: no status file means queued.
  bridge::RunState state() const { return status ? status->state : bridge::RunState::Queued; }
};

// Reads the view of `ref` at commit `tip` from the bus cache (the tip must have been fetched).
// Errors only when the commit or its root tree cannot be read (`not_fetched`, `repository`).
Result<BranchView> read_branch_view(bridge::GitBus& bus, const std::string& ref, const std::string& tip);

// Fetches `ref` and reads its view. Error if the ref no longer exists (code "ref_gone").
Result<BranchView> fetch_branch_view(bridge::GitBus& bus, const std::string& ref);

// A runner commit on top of `parent`: the parent's tree with `changes` applied, authored by the
// runner identity; the message ends with "[skip ci]" so CI systems ignore runner commits.
Result<std::string> make_runner_commit(bridge::GitBus& bus, const std::string& parent,
                                       const std::vector<bridge::FileChange>& changes,
                                       const std::string& what, const bridge::CommitAuthor& author);

// The status.json file change for `status`.
bridge::FileChange status_change(const bridge::RunStatus& status);

}  // namespace kakeya::runner
