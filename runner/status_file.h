#pragma once
// The daemon's state file, work_dir/state.json: what `kakeya-runner status` shows on the host
// without talking to the daemon. Its content is Telemetry::state_json() (runner/telemetry.h):
// running jobs, last poll, spool, recent outcomes, disk use, health. The daemon rewrites it after
// every poll and at least every second while it serves (write to a temporary file, then rename,
// so a reader never sees half a file); mode 0640, so the runner's group can read it.
#include <filesystem>

#include <nlohmann/json.hpp>

#include "bridge/result.h"

namespace kakeya::runner {

inline constexpr const char* kStateFileName = "state.json";

// Writes `state` to `path` atomically. Errors: `io` naming the path and errno's text.
Status write_state_file(const std::filesystem::path& path, const nlohmann::json& state);

// Reads a state file. Errors: `not_found` (no daemon has written one: the message names the path
// and says so), `io`, `parse_error` (not a JSON object).
Result<nlohmann::json> read_state_file(const std::filesystem::path& path);

}  // namespace kakeya::runner
