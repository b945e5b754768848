#pragma once
// Fleet views for the client (issue 3): which runners were seen recently (`kakeya runners`) and
// garbage collection of finished request branches (`kakeya gc`).

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bridge/gitbus.h"
#include "bridge/result.h"
#include "bridge/runner_doc.h"

namespace kakeya::client {

// Seconds since the Unix epoch of an RFC 3339 timestamp ("2026-01-02T03:04:05Z", fractional
// seconds and +hh:mm offsets accepted). nullopt when it is not one.
std::optional<double> rfc3339_to_epoch(std::string_view text);

struct RunnerEntry {
  std::string id;                    // from the branch name kakeya/runners/<id>
  std::string commit;
  nlohmann::json doc;                // runner.json as published (null when unreadable)
  std::optional<bridge::RunnerDoc> runner;  // the same, read as bridge::RunnerDoc (nullopt: unreadable)
  std::string error;                 // why doc could not be read
  std::optional<double> age_s;       // now - updated_at (the runner's clock; informational)
};

// One ls_remote under refs/heads/kakeya/runners/, one fetch of those branches, runner.json of
// each tip. Sorted by id.
Result<std::vector<RunnerEntry>> list_runners(bridge::GitBus& bus);

struct GcEntry {
  std::string branch;    // without refs/heads/
  std::string commit;    // the tip the decision was made on (the CAS expectation)
  std::string state;
  std::string updated_at;
  double age_s = 0;
  std::string outcome;   // "deleted", "would_delete", "lost" (the tip moved: kept), "error: ..."
};

struct GcReport {
  std::vector<GcEntry> candidates;  // terminal and older than the cutoff
  int kept = 0;                     // request branches not eligible (not terminal, or too recent)
};

// Whether `kakeya gc` only lists what it would delete: `--dry-run` lists, `--yes` deletes; with
// neither it lists when stdin is a terminal (a person sees what would go before anything goes)
// and deletes otherwise (scripts and CI, which say what they mean by running it).
// REQUIRES: not both flags (the command refuses that as a usage error).
bool gc_is_dry_run(bool dry_run_flag, bool yes_flag, bool stdin_is_tty);

// Ref deletions sent in one push by gc_requests (one connection each batch).
inline constexpr std::size_t kGcBatchRefs = 500;

// Deletes the request branches under `branch_prefix` whose state is terminal and whose status
// updated_at is more than `older_than_s` seconds in the past, each a compare-and-swap against the
// tip that was read (a branch that moved meanwhile is kept: "lost"), kGcBatchRefs of them per push
// (GitBus::delete_cas_many). Never deletes queued, claimed or running requests, nor branches
// whose status cannot be read. `dry_run`: decide only. A batch that fails as a whole (transport,
// auth) marks each of its entries "error: ..." and the next batch is still tried.
Result<GcReport> gc_requests(bridge::GitBus& bus, const std::string& branch_prefix, double older_than_s,
                             bool dry_run);

}  // namespace kakeya::client
