#pragma once
// The shared tail of `kakeya run` and `kakeya wait`: wait with live progress, print the summary,
// optionally fetch the run files, return the wait exit code (0/1/2/3, see wait_outcome.h).

#include <filesystem>
#include <optional>
#include <string>

#include "client/session.h"
#include "client/waiter.h"

namespace kakeya::client {

// Progress: with `g.json`, JSON events on stdout ending with the "done" event; otherwise state
// changes and new log lines on stderr when it is a TTY, then the human summary on stdout. A run
// that ends in a terminal state other than succeeded also gets its reason and the last 20 lines
// of its job log on stderr, TTY or not (client/run_log.h print_end_context).
// `fetch_dir`: after the wait, copy `.kakeya/run/` of the last tip there (a fetch failure is
// reported and turns exit 0 into 1).
int wait_and_report(const GlobalOptions& g, Session& session, const std::string& branch, const WaitOptions& wait,
                    const std::optional<std::filesystem::path>& fetch_dir);

}  // namespace kakeya::client
