#pragma once
// Listing the request branches under a branch prefix (kakeya list).

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bridge/gitbus.h"
#include "bridge/result.h"
#include "bridge/run_state.h"

namespace kakeya::client {

struct ListEntry {
  std::string branch;      // without refs/heads/
  std::string commit;
  std::string preset;      // from request.json ("" when absent/malformed)
  std::string state;       // run state, or "unknown" when status.json is malformed
  std::string reason;
  std::string runner_id;
  std::string updated_at;  // status updated_at, else the request's created_at
  std::string error;       // why preset/state could not be read ("" when fine)
};

// One ls_remote under refs/heads/<prefix> (runner branches excluded), one fetch of the branches
// whose tip is not in the cache yet, then request + status of each tip. `state_filter` keeps
// only entries in that state. Sorted by updated_at, newest first, then branch.
Result<std::vector<ListEntry>> list_requests(bridge::GitBus& bus, const std::string& branch_prefix,
                                             const std::optional<bridge::RunState>& state_filter);

nlohmann::json list_entry_to_json(const ListEntry& e);

}  // namespace kakeya::client
