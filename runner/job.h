#pragma once
// One claimed request, from claim to final commit (DESIGN §2):
//   claim (CAS, claim_gen+1) -> running (CAS, pushed BEFORE the command starts, so a
//   takeover can tell "may have started") -> execute the preset argv (no shell, own process
//   group, timeout) -> heartbeats (CAS every heartbeat_s with progress and log tail) ->
//   final commit (status, summary, logs, declared results, gate verdict).
// A rejected heartbeat refetches: a client cancel stops the job and publishes `cancelled`; a
// higher claim_gen means this runner was fenced: the job is killed and nothing is published.
#include <atomic>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bridge/catalog.h"
#include "bridge/gitbus.h"
#include "bridge/request.h"
#include "bridge/run_state.h"
#include "bridge/summary.h"
#include "runner/branch_view.h"
#include "runner/config.h"
#include "runner/telemetry.h"

namespace kakeya::runner {

struct JobRequest {
  BranchView view;                     // as observed before claiming
  bridge::RequestManifest manifest;
  const bridge::PresetSpec* preset = nullptr;  // from the runner's installed catalog
  nlohmann::json params;               // the request's params (validated again before running)
  int64_t claim_gen = 1;               // the generation this runner claims with
  int64_t attempt = 1;
  std::string takeover_note;           // non-empty when this is a takeover
};

enum class JobEnd {
  ClaimLost,   // another runner won the claim; nothing ran
  Published,   // terminal state committed
  Fenced,      // superseded by a higher claim_gen; killed and published nothing
  Spooled,     // finished, but the remote is unreachable: result kept on disk for later
  Gone,        // the request branch disappeared
};

const char* to_string(JobEnd);

class Job {
 public:
  // `bus` is this job's own connection (GitBus needs external synchronization). Claims,
  // heartbeat conflicts, fencing and the outcome are reported to `telemetry`.
  // REQUIRES: cfg and telemetry outlive the job.
  Job(const RunnerConfig& cfg, JobRequest req, std::unique_ptr<bridge::GitBus> bus,
      std::filesystem::path job_dir, std::filesystem::path spool_dir, Telemetry& telemetry);

  // Runs to the end. Thread: the job's own. Never throws: an exception inside (a bug, memory)
  // is logged and, once the claim is ours, ends the run `infra_error` with the reason.
  JobEnd run();

  // Shutdown: cancel the running command and publish `cancelled` with `reason`. Any thread.
  void cancel(const std::string& reason);

  const std::string& ref() const { return req_.view.ref; }
  const std::filesystem::path& dir() const { return dir_; }
  bool command_started() const { return command_started_.load(); }
  // What the job is, for the runner's status (branch, preset, claim_gen, attempt, started_at).
  const RunningJob& info() const { return info_; }
  // The terminal state this job published or spooled; nullopt when it published none (claim
  // lost, fenced, branch gone). REQUIRES: run() returned.
  std::optional<bridge::RunState> final_state() const { return final_state_; }

 private:
  enum class Push { Won, Lost, Failed };  // a status push: CAS won, CAS lost, or no answer
  JobEnd run_unguarded();
  std::string shown_ref() const;  // the branch for log lines (escaped)
  Push push_status(bridge::RunStatus st, const std::string& what);
  // The final commit: status, summary (argv and, when the command was started, its outcome),
  // logs, declared results and the gate verdict.
  JobEnd finish(bridge::RunState state, const std::string& reason, std::vector<std::string> argv,
                std::optional<bridge::CommandOutcome> command, const std::string& log_text);

  const RunnerConfig& cfg_;
  JobRequest req_;
  Telemetry& telemetry_;
  RunningJob info_;
  std::optional<bridge::RunState> final_state_;
  std::unique_ptr<bridge::GitBus> bus_;
  std::filesystem::path dir_;
  std::filesystem::path spool_dir_;
  bridge::RunStatus status_;
  std::string tip_;
  std::atomic<bool> command_started_{false};
  bool claimed_ = false;  // our claim commit won (job thread only)
  std::mutex cancel_mu_;
  std::string cancel_reason_;
  std::atomic<bool> cancel_requested_{false};
};

// The git identity the runner commits as, with its SSH signing key when identity.signing_key is
// configured (every runner commit is then signed; unsigned is the default).
bridge::CommitAuthor runner_author(const RunnerConfig& cfg);

}  // namespace kakeya::runner
