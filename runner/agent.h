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
// No content of any branch can stop the runner (issue 10): a branch whose files are the wrong
// kind, oversized or unparsable gets exactly one `rejected` receipt naming the path, field or
// value (runner/branch_view.h); a receipt (reject, cancel, give-up) is built once and, when its
// push does not win, pushed again with back-off (1 s doubling to 5 min) without re-reading the
// branch; a branch that cannot be fetched or read backs off the same way; an exception while
// handling one branch is caught and logged there, and the poll itself runs behind a second wall.
// Mixed fleets: the other runners' kakeya/runners/<id> branches say which presets each offers
// (bridge/runner_doc.h). A runner is live while its branch has moved within lease_s (timed on
// this runner's monotonic clock) and it has not published state "stopped". A request for a
// preset this runner's catalog lacks is left alone while a live runner offers it, and rejected
// (naming the preset) when none does; a claimed/running one whose lease expired ends
// `infra_error` when no live runner offers its preset.
// REQUIRES: one thread calls poll_once()/run_*; jobs run on their own threads.
#include <atomic>
#include <chrono>
#include <functional>
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
#include "bridge/runner_doc.h"
#include "runner/config.h"
#include "runner/job.h"
#include "runner/runner_beat.h"
#include "runner/telemetry.h"

namespace kakeya::runner {

struct PollStats {
  int refs_seen = 0;      // request branches in the advertisement
  int fetched = 0;        // branches fetched this poll
  int started = 0;        // jobs started (claims attempted)
  int rejected = 0;       // requests rejected this poll
  int pending = 0;        // queued requests this runner could run but had no slot for
};

// What the serve loop reports as it goes; runner/cmd/serve.cpp wires it to systemd
// (runner/service_notify.h) and the state file (runner/status_file.h). Hooks run on the loop's
// thread; any may be empty.
struct LoopHooks {
  // Called at least every 50 ms while serving or draining, and between the branches of a poll
  // (the watchdog's proof of life: a poll that blocks in git blocks it too, for at most
  // git_timeout_s per operation).
  std::function<void()> tick;
  // After each poll, with its outcome.
  std::function<void(const Result<PollStats>&)> polled;
  // When draining starts and then while jobs still run, with the seconds left of shutdown_grace_s
  // (0 after a second signal: jobs are being cancelled).
  std::function<void(double remaining_s)> draining;
};

class Agent {
 public:
  // Events (polls, claims, outcomes, running jobs, spool, disk use) go to `telemetry`.
  // REQUIRES: telemetry outlives the agent.
  Agent(RunnerConfig cfg, bridge::PresetCatalog catalog, bridge::Credentials creds, Telemetry& telemetry);
  ~Agent();

  void set_hooks(LoopHooks hooks) { hooks_ = std::move(hooks); }

  // Opens the bus and the work dirs; prunes job directories left by an earlier run
  // (runner/workspace.h).
  Status init();
  Result<PollStats> poll_once();     // one discovery pass (non-blocking: jobs run in threads)
  // poll_once behind an exception wall (error `internal`): what run_daemon and run_once call, so
  // nothing thrown while polling ends the runner; the loop backs off as for any poll error.
  Result<PollStats> poll_guarded();

  // Serve until `stop` says so. 1 = drain (stop claiming, finish jobs), 2 = cancel running jobs.
  Status run_daemon(const std::atomic<int>& stop);
  // Serve what is pending now, wait for those jobs, exit (CI workflows).
  // `stop` as for run_daemon: 1 stops claiming, 2 cancels running jobs.
  Status run_once(double max_seconds, const std::atomic<int>& stop);

  int active_jobs() const;
  void cancel_all(const std::string& reason);
  void wait_jobs();
  // The jobs running now, and the finished results waiting in the spool.
  std::vector<RunningJob> running_jobs() const;
  int spool_depth() const;

 private:
  struct Tracked {
    std::string oid;
    bool terminal = false;
    std::chrono::steady_clock::time_point first_seen;  // when this oid was first seen
    std::optional<BranchView> view;                    // parsed view of `oid`, if read
    // A terminal commit built on `oid` (reject, cancel, give-up) whose push did not win: pushed
    // again at `retry_at`, without re-reading the branch. Cleared when the tip moves.
    std::optional<std::string> receipt;
    std::string receipt_state;
    std::string receipt_preset, receipt_reason;  // for the outcome reported when it is published
    // `oid` could not be fetched or read at all (nor given a receipt): fetched again at retry_at.
    bool unreadable = false;
    int failures = 0;                                  // consecutive failures, for the back-off
    std::chrono::steady_clock::time_point retry_at;
  };
  struct Slot {
    std::unique_ptr<Job> job;
    std::thread thread;
    std::atomic<bool> done{false};
  };

  void handle_branch(const BranchView& view, PollStats& stats);
  // handle_branch behind a wall: an exception (a bug, or memory) is logged and ends the branch
  // `rejected` if possible, else backs off; it never reaches the poll loop.
  void handle_branch_guarded(const BranchView& view, PollStats& stats);
  void reject(const BranchView& view, const std::string& reason);
  void publish_terminal_without_run(const BranchView& view, bridge::RunState state, const std::string& reason,
                                    int64_t claim_gen);
  // Pushes tracked_[ref].receipt; on anything but a won CAS, schedules the next try (back-off).
  void push_receipt(const std::string& ref, const std::string& expected_tip);
  // A branch whose tip cannot be fetched or read: gets a `rejected` receipt when one can be built
  // on its tip, else is retried with back-off (never every poll).
  void handle_unreadable(const std::string& ref, const std::string& oid, const Error& why);
  void back_off(Tracked& t);
  // Fetches the refs of `advertised` (ref -> advertised oid) in one connection; if that fails,
  // one by one, so that one bad branch cannot block the others (a branch that cannot be fetched
  // backs off at its advertised oid). Returns ref -> oid of what was fetched; error only when
  // nothing could be.
  Result<std::map<std::string, std::string>> fetch_isolated(const std::map<std::string, std::string>& advertised);
  bool can_run(const bridge::PresetSpec& preset, std::string* why) const;
  bool start_job(JobRequest req);
  void reap();
  // A finished job's directory: removed, or kept when it did not succeed (runner/workspace.h).
  static void release(const Job& job);
  // Prunes kept job directories and reports disk use and spool depth to telemetry_.
  void tidy_workspace();
  void flush_spool();
  // poll_guarded, timed and reported to telemetry_ and hooks_.polled.
  Result<PollStats> poll_reported();
  void tick() const {
    if (hooks_.tick) hooks_.tick();
  }
  Result<std::unique_ptr<bridge::GitBus>> open_bus(const std::string& name);
  std::chrono::duration<double> next_poll_delay(bool had_error);
  // Pushes runner.json on kakeya/runners/<id> when due (or always when `force`); logs failures.
  void beat_runner(const std::string& state, bool force);

  RunnerConfig cfg_;
  bridge::PresetCatalog catalog_;
  bridge::Credentials creds_;
  Telemetry& telemetry_;
  LoopHooks hooks_;
  std::unique_ptr<bridge::GitBus> bus_;
  std::map<std::string, Tracked> tracked_;           // ref -> last classification
  mutable std::mutex slots_mu_;
  std::vector<std::unique_ptr<Slot>> slots_;
  std::set<std::string> active_refs_;
  int job_counter_ = 0;
  int consecutive_errors_ = 0;
  bridge::AdvertisementStats last_adv_;  // to log advertisement limits when they change
  RunnerBeat beat_{cfg_, catalog_};

  // Other runners, by runner branch ref: what their runner.json says and when its tip moved.
  // A peer's doc is the newest one read from its branch; it is kept while the branch moves on
  // (each heartbeat moves it) until a newer commit has been read, so a fetch that fails, or that
  // finds the branch already moved past the advertised tip, never makes a live peer look as if it
  // offered nothing. A branch that disappears from the listing keeps its doc until its lease runs
  // out (the peer re-creates it when its heartbeat chain rolls over).
  struct Peer {
    std::string oid;                                   // the tip last seen (advertised or fetched)
    std::chrono::steady_clock::time_point first_seen;  // when this oid was first seen
    std::optional<bridge::RunnerDoc> doc;              // nullopt: none read yet, or the last read unreadable
    std::string doc_oid;                               // the commit `doc` was read from (or found unreadable at)
  };
  std::map<std::string, Peer> peers_;
  // Records the runner branches of `refs` (not ours), fetching and reading those whose tip has not
  // been read yet (moved, or a failed fetch to retry).
  void observe_peers(const std::vector<bridge::RemoteRef>& refs);
  // Ids of live runners (see above) whose runner.json lists `preset`.
  std::vector<std::string> live_runners_offering(const std::string& preset) const;
};

}  // namespace kakeya::runner
