#pragma once
// What a request branch says at one tip: the request, the run status and the summary.

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "bridge/gitbus.h"
#include "bridge/request.h"
#include "bridge/result.h"
#include "bridge/run_state.h"
#include "bridge/summary.h"

namespace kakeya::client {

struct BranchSnapshot {
  std::string branch;  // without "refs/heads/"
  std::string oid;     // the tip read
  std::optional<bridge::RequestManifest> request;  // nullopt when absent or malformed
  std::string request_error;                       // why `request` is nullopt ("" when fine)
  bool has_status = false;                         // false: no status.json yet (queued)
  bridge::RunStatus status;                        // RunStatus{} (queued) when !has_status
  std::optional<bridge::RunSummary> summary;       // summary.json when present and valid
  std::string summary_error;                       // why a present summary.json is not used ("" when fine)
  bool cancel_requested = false;                   // .kakeya/run/cancel.json present
};

// Reads the snapshot of commit `oid` (already in the cache). Errors: `bad_status` when
// status.json does not parse (the message carries the parse error), bus errors.
Result<BranchSnapshot> read_snapshot(bridge::GitBus& bus, const std::string& branch, const std::string& oid);

// Fetches refs/heads/<branch> and reads its tip. nullopt when the branch does not exist (any more).
Result<std::optional<BranchSnapshot>> fetch_snapshot(bridge::GitBus& bus, const std::string& branch);

// {branch, commit, request: request.json object | null, request_error (only when null),
//  status: status.json object (queued defaults when absent), status_present, cancel_requested,
//  summary: summary.json object | null, summary_error (only when a present summary is invalid)}:
//  the machine form of `kakeya status --json`.
nlohmann::json snapshot_to_json(const BranchSnapshot& snap);

}  // namespace kakeya::client
