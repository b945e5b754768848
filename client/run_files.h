#pragma once
// Copying a branch's `.kakeya/run/` into a local directory (kakeya fetch, kakeya run --fetch).

#include <filesystem>
#include <string>
#include <vector>

#include "bridge/gitbus.h"
#include "bridge/result.h"

namespace kakeya::client {

// Writes every file under `.kakeya/run/` of commit `oid` (already in the cache) to `dest`,
// keeping the layout below run/ (status.json, summary.json, gate.json, logs/..., results/...).
// `dest` is created; each path goes through safe_join, so nothing lands outside `dest`
// (error `path_escape`). Returns the written paths. Error `nothing_to_fetch` when the commit has
// no `.kakeya/run/` (a request nobody claimed yet), `io` on write failures.
Result<std::vector<std::filesystem::path>> fetch_run_files(bridge::GitBus& bus, const std::string& oid,
                                                           const std::filesystem::path& dest);

}  // namespace kakeya::client
