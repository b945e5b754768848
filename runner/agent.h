#pragma once
// The runner's worker loop (Buildkite `agent/` style): discover -> validate -> claim -> run.
//
// Discovery (DESIGN §2): one `ls-remote` advertisement per poll, oids compared with a cache,
// only changed branches fetched by explicit refspec. Per branch:
//   no status            -> queued: validate; malformed -> `rejected` on its own branch (never
//                           blocks the queue); cancel requested -> `cancelled`; else claim if
//                           this runner has the labels/models and a free slot.
//   claimed/running      -> someone's job. Its tip is timed on this runner's monotonic clock;
//                           unchanged for lease_s -> takeover (re-run only if the command never
//                           started or the preset is idempotent; at most 3 attempts, else
//                           `infra_error`). Our own runner id but no live job here -> a stale
//                           claim from before a crash: resolved at once by the same rule.
//   terminal             -> remembered; never looked at again while its tip is unchanged.
// REQUIRES: one thread calls poll_once()/run_*; jobs run on their own threads.
#include <atomic>
#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "bridge/catalog.h"
#include "bridge/gitbus.h"
#include "bridge/result.h"
#include "runner/config.h"
#include "runner/job.h"
#include "runner/runner_beat.h"

namespace kakeya::runner {

struct PollStats {
  int refs_seen = 0;      // request branches in the advertisement
  int fetched = 0;        // branches fetched this poll
  int started = 0;        // jobs started (claims attempted)
  int rejected = 0;       // requests rejected this poll
  int pending = 0;        // queued requests this runner could run but had no slot for
};

class Agent {
 public:
  Agent(RunnerConfig cfg, bridge::PresetCatalog catalog, bridge::Credentials creds);
  ~Agent();

  Status init();                     // opens the bus and the work dirs
  Result<PollStats> poll_once();     // one discovery pass (non-blocking: jobs run in threads)

  // Serve until `stop` says so. 1 = drain (stop claiming, finish jobs), 2 = cancel running jobs.
  Status run_daemon(const std::atomic<int>& stop);
  // Serve what is pending now, wait for those jobs, exit (CI workflows).
  // `stop` as for run_daemon: 1 stops claiming, 2 cancels running jobs.
  Status run_once(double max_seconds, const std::atomic<int>& stop);

  int active_jobs() const;
  void cancel_all(const std::string& reason);
  void wait_jobs();

 private:
  struct Tracked {
    std::string oid;
    bool terminal = false;
    std::chrono::steady_clock::time_point first_seen;  // when this oid was first seen
    std::optional<BranchView> view;                    // parsed view of `oid`, if read
  };
  struct Slot {
    std::unique_ptr<Job> job;
    std::thread thread;
    std::atomic<bool> done{false};
  };

  void handle_branch(const BranchView& view, PollStats& stats);
  void reject(const BranchView& view, const std::string& reason);
  void publish_terminal_without_run(const BranchView& view, bridge::RunState state, const std::string& reason,
                                    int64_t claim_gen);
  bool can_run(const bridge::PresetSpec& preset, std::string* why) const;
  bool start_job(JobRequest req);
  void reap();
  void flush_spool();
  Result<std::unique_ptr<bridge::GitBus>> open_bus(const std::string& name);
  std::chrono::duration<double> next_poll_delay(bool had_error);
  // Pushes runner.json on kakeya/runners/<id> when due (or always when `force`); logs failures.
  void beat_runner(const std::string& state, bool force);

  RunnerConfig cfg_;
  bridge::PresetCatalog catalog_;
  bridge::Credentials creds_;
  std::unique_ptr<bridge::GitBus> bus_;
  std::map<std::string, Tracked> tracked_;           // ref -> last classification
  mutable std::mutex slots_mu_;
  std::vector<std::unique_ptr<Slot>> slots_;
  std::set<std::string> active_refs_;
  int job_counter_ = 0;
  int consecutive_errors_ = 0;
  RunnerBeat beat_{cfg_};
};

}  // namespace kakeya::runner
