#pragma once
// What a runner knows about one request branch at one tip: the request manifest text,
// the run status (absent = queued), and whether a cancel was requested. Also builds
// runner commits (status and run files on top of the observed tip, `[skip ci]`).
#include <optional>
#include <string>
#include <vector>

#include "bridge/gitbus.h"
#include "bridge/result.h"
#include "bridge/run_state.h"

namespace kakeya::runner {

struct BranchView {
  std::string ref;   // full ref, refs/heads/...
  std::string tip;   // commit oid the view was read from
  std::optional<std::string> request_json;     // .kakeya/request.json, if present
  std::optional<bridge::RunStatus> status;     // .kakeya/run/status.json; nullopt = queued
  std::string status_error;                    // non-empty if status.json exists but is malformed
  bool cancel_requested = false;               // .kakeya/run/cancel.json present

  // The state as the protocol sees it: no status file means queued.
  bridge::RunState state() const { return status ? status->state : bridge::RunState::Queued; }
};

// Reads the view of `ref` at commit `tip` from the bus cache (the tip must have been fetched).
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
