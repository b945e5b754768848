#pragma once
// What the runner is doing, in one place, for the people and programs that watch it:
//   /metrics   Prometheus text (prometheus-cpp), served by runner/metrics_server.h
//   /healthz   health(): unhealthy when polls have failed for longer than a bound
//   status     state_json(): the daemon's state file (runner/status_file.h, `kakeya-runner status`)
//   STATUS=    status_line(): the one-line summary sent to systemd (runner/service_notify.h)
// The agent loop and the job threads report events; every method is thread-safe.
//
// Metrics (every name starts with kakeya_runner_):
//   jobs_total{preset,state}                counter  requests that reached a terminal state here
//                                                    (runs, rejections, cancels, give-ups)
//   job_duration_seconds{preset}            histogram  command wall time of jobs that ran
//   claim_attempts_total / claim_wins_total / claim_losses_total   counters  (CAS claims)
//   heartbeat_conflicts_total               counter  heartbeats that lost their CAS
//   fencing_events_total                    counter  jobs stopped because another runner claimed
//   poll_duration_seconds                   histogram  one discovery pass
//   poll_errors_total{kind}                 counter  failed polls by error code
//   spool_depth                             gauge    finished results waiting in work_dir/spool
//   last_successful_poll_timestamp_seconds  gauge    Unix time of the last poll that reached the remote
//   running_jobs                            gauge
//   work_dir_bytes{part}                    gauge    disk use of work_dir/jobs and work_dir/spool
//   kept_failed_jobs                        gauge    job directories kept for debugging
//   info{runner_id,version}                 gauge 1
// Label values: `preset` is a name from this runner's catalog or "other" (a request's preset
// name is untrusted text: it must not create series), `state` a run state, `kind` an error code.
#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bridge/result.h"

namespace prometheus {
class Registry;
}

namespace kakeya::runner {

// A job this runner runs now.
struct RunningJob {
  std::string branch;  // without refs/heads/
  std::string preset;
  int64_t claim_gen = 0;
  int64_t attempt = 0;
  std::string started_at;  // RFC 3339, when the job thread started
};

// A request that reached a terminal state on this runner (run, rejected, cancelled, given up).
struct JobOutcome {
  std::string branch;       // without refs/heads/
  std::string preset;       // as requested ("" when the request could not be read)
  std::string state;        // terminal run state
  std::string reason;       // one line
  std::string finished_at;  // RFC 3339
  std::optional<double> duration_s;  // command wall time, when the command ran
};

struct Health {
  bool healthy = true;
  std::string reason;  // one line: why (un)healthy
};

class Telemetry {
 public:
  // `presets`: the catalog's preset names (the only `preset` label values besides "other").
  // `unhealthy_after_s`: health() turns false when no poll has succeeded for this long and the
  // last poll failed (the start counts as the last success).
  Telemetry(std::string runner_id, std::vector<std::string> presets, double unhealthy_after_s);
  ~Telemetry();

  // ---- events ----
  void poll_finished(double seconds, const std::optional<Error>& error);
  void claim_attempted();
  void claim_won();
  void claim_lost();
  void heartbeat_conflict();
  void fenced();
  void job_finished(const JobOutcome& outcome);
  void set_running(std::vector<RunningJob> jobs);
  void set_spool_depth(int depth);
  // Disk use of work_dir/jobs and work_dir/spool in bytes, and how many failed job dirs are kept.
  void set_work_dir_usage(uint64_t jobs_bytes, uint64_t spool_bytes, int kept_failed);
  // "serving", "draining" or "stopped".
  void set_phase(const std::string& phase);
  // The address /metrics is served on ("127.0.0.1:9464"), recorded in the state file.
  void set_metrics_address(const std::string& address);

  // ---- views ----
  std::string metrics_text() const;  // Prometheus text exposition format 0.0.4
  Health health() const;
  // {runner_id, pid, phase, started_at, updated_at, metrics_address, health, last_poll{...},
  //  running[...], spool_depth, recent[...] (newest first, at most kRecentOutcomes), disk{...}}
  nlohmann::json state_json() const;
  // "serving: 1 running, 0 spooled, last poll ok 2s ago" / "... last poll failed (transport) ..."
  std::string status_line() const;
  bool any_poll_succeeded() const;

  static constexpr std::size_t kRecentOutcomes = 20;

 private:
  struct Metrics;
  std::string preset_label(const std::string& preset) const;

  const std::string runner_id_;
  const std::vector<std::string> presets_;
  const double unhealthy_after_s_;
  const std::chrono::steady_clock::time_point started_;
  const std::string started_at_;
  std::shared_ptr<prometheus::Registry> registry_;
  std::unique_ptr<Metrics> m_;

  mutable std::mutex mu_;  // guards everything below
  std::string phase_ = "serving";
  std::string metrics_address_;
  std::optional<std::chrono::steady_clock::time_point> last_success_;
  std::string last_success_at_;
  std::optional<Error> last_error_;
  std::string last_poll_at_;
  double last_poll_s_ = 0;
  int64_t polls_ = 0, failed_polls_in_row_ = 0;
  std::vector<RunningJob> running_;
  int spool_depth_ = 0;
  uint64_t jobs_bytes_ = 0, spool_bytes_ = 0;
  int kept_failed_ = 0;
  std::deque<JobOutcome> recent_;
};

}  // namespace kakeya::runner
