#pragma once
// The job log of a run as the client shows it: `kakeya logs`, and the context `kakeya run/wait`
// print on stderr when a run ends in anything but `succeeded`.
//
// The runner publishes three logs under `.kakeya/run/logs/` (runner/job_output.h): job.log (both
// streams, interleaved by whole lines), stdout.log and stderr.log (each stream alone, present when
// the command ran). All are redacted, well-formed UTF-8, capped by the runner's log_cap_bytes.
#include <cstddef>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "bridge/gitbus.h"
#include "bridge/result.h"
#include "client/snapshot.h"

namespace kakeya::client {

enum class LogStream { Combined, Stdout, Stderr };

// "combined" | "stdout" | "stderr". Errors: `usage` naming the value.
Result<LogStream> parse_log_stream(std::string_view text);

// The published log of commit `oid` (already in the cache): nullopt when the run has none yet
// (it has not finished, or it never ran a command). Errors: the bus's (`bad_path`, `too_large`,
// `not_fetched`).
Result<std::optional<std::string>> read_run_log(bridge::GitBus& bus, const std::string& oid, LogStream stream);

// The last `n` lines of `text` (a final line without '\n' counts), without their '\n'.
std::vector<std::string> last_lines(std::string_view text, std::size_t n);

// Writes why the run ended and the last `n` lines of its log (or of the status's log_tail when
// no log was published) to `out`, each line escaped (bridge/utf8.h printable):
//   kakeya: kakeya/req/test-job-abc: failed: exit code 3
//   kakeya: last 20 lines of the job log (all of it: kakeya logs kakeya/req/test-job-abc):
//     | line ...
void print_end_context(std::ostream& out, const BranchSnapshot& snap, const std::optional<std::string>& log,
                       std::size_t n);

}  // namespace kakeya::client
