#pragma once
// The commits of a run branch above its request commit. A request branch starts with the
// client's request commit (.kakeya/request.json over the workload tree, no .kakeya/run); every
// later commit (runner claims, heartbeats, results, the client's cancel) writes under
// .kakeya/run/ and has exactly one parent. Used by `kakeya verify` (client/verify.h) and by a
// runner that takes over a claimed request (runner/request_signing.h), which must know which
// commit is the client's.
#include <cstddef>
#include <string>
#include <vector>

#include "bridge/gitbus.h"
#include "bridge/result.h"

namespace kakeya::bridge {

// The most commits above a request commit that a reader walks (heartbeats included).
inline constexpr std::size_t kMaxRunCommits = 100000;

struct RunHistory {
  std::string request_commit;      // the newest first-parent ancestor (or the tip) with no .kakeya/run
  std::vector<CommitInfo> above;   // the commits above it, newest first (the tip first)
};

// Walks the first-parent chain from `tip` (fetched into the bus cache) down to the request
// commit, reading at most `max_commits` commits above it. `branch` names the branch in messages.
// Errors: `tampered` (a commit above the request commit with other than one parent, naming it),
// `too_large` (more than max_commits above it), and read_commit/entry_oid's.
Result<RunHistory> read_run_history(GitBus& bus, const std::string& tip, const std::string& branch,
                                    std::size_t max_commits);

// The files a commit above the request commit may change: those under .kakeya/run/.
bool is_run_path(const std::string& path);

}  // namespace kakeya::bridge
