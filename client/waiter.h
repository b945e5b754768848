#pragma once
// Waiting for a request to reach a terminal state (kakeya run / kakeya wait).
//
// Each poll: one ls_remote of the branch's ref; only when its oid changed, a fetch of that one
// ref and a read of `.kakeya/run/status.json` (absent = queued). Progress events go to the
// ProgressPrinter. Transient transport errors are reported on stderr and retried until the
// deadline; `auth_failed` ends the wait at once.

#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bridge/gitbus.h"
#include "bridge/result.h"
#include "client/progress.h"
#include "client/snapshot.h"

namespace kakeya::client {

struct WaitOptions {
  double timeout_s = 0;  // --wait: deadline, seconds from now (0 = look once)
  double poll_s = 1;     // --poll: seconds between polls (> 0)
};

struct WaitResult {
  BranchSnapshot last;     // the last snapshot read
  int exit_code = 0;       // wait_exit_code(last.status.state)
  double seconds = 0;      // time spent waiting
  std::vector<std::string> results;  // files under .kakeya/run/results/ of the last tip
};

// Polls refs/heads/<branch> until a terminal state or the deadline. Errors: `not_found` when
// the branch does not exist (or disappears), `auth_failed`, `bad_status`, and the last
// transport error when no snapshot could be read at all.
Result<WaitResult> wait_for_run(bridge::GitBus& bus, const std::string& branch, const WaitOptions& opts,
                                ProgressPrinter& printer, std::ostream& warnings);

// The "done" event / the summary shown at the end (see progress.h for the shape).
nlohmann::json done_event(const WaitResult& r);

// Human summary block: state, reason, exit code, seconds, runner, results.
std::string format_summary(const nlohmann::json& done);

// The job command's outcome from summary.json (bridge/summary.h), when the command was started.
const bridge::CommandOutcome* summary_command(const std::optional<bridge::RunSummary>& summary);

}  // namespace kakeya::client
