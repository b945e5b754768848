#include "runner/agent.h"

#include <spdlog/spdlog.h>

#include <random>

#include "bridge/branch.h"
#include "bridge/layout.h"
#include "bridge/request.h"
#include "bridge/summary.h"
#include "bridge/version.h"
#include "runner/publish.h"

namespace kakeya::runner {

namespace fs = std::filesystem;
using bridge::RunState;
using clock_type = std::chrono::steady_clock;

namespace {
constexpr int kMaxAttempts = 3;

std::string sanitize(const std::string& ref) {
  std::string s = std::string(bridge::strip_heads_prefix(ref));
  for (char& c : s) {
    if (c == '/') c = '_';
  }
  return s;
}
}  // namespace

Agent::Agent(RunnerConfig cfg, bridge::PresetCatalog catalog, bridge::Credentials creds)
    : cfg_(std::move(cfg)), catalog_(std::move(catalog)), creds_(std::move(creds)) {}

Agent::~Agent() {
  cancel_all("runner shutting down");
  wait_jobs();
}

Result<std::unique_ptr<bridge::GitBus>> Agent::open_bus(const std::string& name) {
  bridge::GitBusOptions opts;
  opts.op_timeout_s = cfg_.git_timeout_s;
  auto bus = bridge::GitBus::open(cfg_.remote_url, cfg_.work_dir / "cache" / name, creds_, opts);
  if (!bus.ok()) return std::move(bus).error();
  return std::make_unique<bridge::GitBus>(std::move(bus).value());
}

Status Agent::init() {
  std::error_code ec;
  for (const char* d : {"cache", "jobs", "spool"}) fs::create_directories(cfg_.work_dir / d, ec);
  if (ec) return make_error("work_dir", "cannot create " + cfg_.work_dir.string() + ": " + ec.message());
  KAKEYA_ASSIGN_OR_RETURN(bus_, open_bus("discovery"));
  return ok_status();
}

bool Agent::can_run(const bridge::PresetSpec& preset, std::string* why) const {
  for (const auto& label : preset.labels) {
    if (std::find(cfg_.labels.begin(), cfg_.labels.end(), label) == cfg_.labels.end()) {
      *why = "runner lacks label '" + label + "'";
      return false;
    }
  }
  for (const auto& role : preset.models) {
    auto p = resolve_model(cfg_, role);
    if (!p.ok()) {
      *why = p.error().message;
      return false;
    }
  }
  return true;
}

int Agent::active_jobs() const {
  std::lock_guard<std::mutex> lock(slots_mu_);
  return static_cast<int>(slots_.size());
}

void Agent::reap() {
  std::lock_guard<std::mutex> lock(slots_mu_);
  for (auto it = slots_.begin(); it != slots_.end();) {
    if ((*it)->done) {
      (*it)->thread.join();
      active_refs_.erase((*it)->job->ref());
      it = slots_.erase(it);
    } else {
      ++it;
    }
  }
}

bool Agent::start_job(JobRequest req) {
  auto bus = open_bus("job-" + std::to_string(job_counter_ % std::max(1, cfg_.max_jobs * 2)));
  if (!bus.ok()) {
    spdlog::error("cannot open a bus for {}: {}", req.view.ref, bus.error().str());
    return false;
  }
  ++job_counter_;
  const std::string name = sanitize(req.view.ref);
  const fs::path job_dir = cfg_.work_dir / "jobs" / name;
  const fs::path spool = cfg_.work_dir / "spool" / name;
  auto slot = std::make_unique<Slot>();
  slot->job = std::make_unique<Job>(cfg_, std::move(req), std::move(bus).value(), job_dir, spool);
  Slot* raw = slot.get();
  std::lock_guard<std::mutex> lock(slots_mu_);
  active_refs_.insert(raw->job->ref());
  raw->thread = std::thread([raw] {
    const JobEnd end = raw->job->run();
    spdlog::info("{}: job ended: {}", raw->job->ref(), to_string(end));
    raw->done = true;
  });
  slots_.push_back(std::move(slot));
  return true;
}

void Agent::reject(const BranchView& view, const std::string& reason) {
  spdlog::warn("{}: rejected: {}", view.ref, reason);
  publish_terminal_without_run(view, RunState::Rejected, reason, 0);
}

// Terminal commits that need no claim first (reject, cancel while queued, takeover give-up).
// `claim_gen` is the generation written (0 for never-claimed requests); a lost CAS is fine: the
// branch will be re-examined on the next poll.
void Agent::publish_terminal_without_run(const BranchView& view, RunState state, const std::string& reason,
                                         int64_t claim_gen) {
  bridge::RunStatus st = view.status.value_or(bridge::RunStatus{});
  st.state = state;
  st.reason = reason;
  st.runner_id = cfg_.runner_id;
  st.labels = cfg_.labels;
  st.claim_gen = claim_gen;
  st.updated_at = bridge::now_rfc3339();
  bridge::RunSummary summary;  // a receipt without a run: no claim was made
  summary.state = state;
  summary.reason = reason;
  summary.runner_id = cfg_.runner_id;
  summary.request_commit = view.tip;
  summary.finished_at = st.updated_at;
  summary.engine_version = engine_version();
  std::vector<bridge::FileChange> changes{status_change(st),
                                          {std::string(bridge::kSummaryPath), bridge::summary_json_text(summary)}};
  auto commit = make_runner_commit(*bus_, view.tip, changes, std::string(bridge::to_string(state)), runner_author(cfg_));
  if (!commit.ok()) {
    spdlog::error("{}: cannot build {} commit: {}", view.ref, bridge::to_string(state), commit.error().str());
    return;
  }
  auto pushed = bus_->push_cas(view.ref, commit.value(), view.tip);
  if (!pushed.ok()) {
    spdlog::warn("{}: {} push failed: {}", view.ref, bridge::to_string(state), pushed.error().str());
  } else if (pushed.value() == bridge::PushOutcome::Won) {
    tracked_[view.ref] = Tracked{commit.value(), true, clock_type::now(), std::nullopt};
  }
}

void Agent::handle_branch(const BranchView& view, PollStats& stats) {
  auto& t = tracked_[view.ref];
  if (t.oid != view.tip) t = Tracked{view.tip, false, clock_type::now(), std::nullopt};
  t.view = view;

  if (!view.status_error.empty()) {
    reject(view, "malformed .kakeya/run/status.json: " + view.status_error);
    return;
  }
  const RunState state = view.state();
  if (bridge::is_terminal(state)) {
    t.terminal = true;
    return;
  }
  if (!view.request_json) {
    reject(view, "no " + std::string(bridge::kRequestPath) + " on the branch");
    return;
  }
  auto manifest = bridge::parse_request(*view.request_json);
  if (!manifest.ok()) {
    reject(view, "invalid request.json: " + manifest.error().message);
    return;
  }
  if (auto m = bridge::check_branch_matches(std::string(bridge::strip_heads_prefix(view.ref)), manifest.value()); !m.ok()) {
    reject(view, m.error().message);
    return;
  }
  const bridge::PresetSpec* preset = catalog_.find(manifest->preset);
  if (preset == nullptr) {
    reject(view, "preset '" + manifest->preset + "' is not in this runner's allowlist");
    return;
  }

  if (state == RunState::Queued) {
    if (view.cancel_requested) {
      publish_terminal_without_run(view, RunState::Cancelled, "cancelled by client before it was claimed", 0);
      return;
    }
    if (auto v = bridge::validate_params(*preset, manifest->params); !v.ok()) {
      reject(view, v.error().message);
      ++stats.rejected;
      return;
    }
    std::string why;
    if (!can_run(*preset, &why)) {
      spdlog::debug("{}: not for this runner: {}", view.ref, why);
      return;
    }
    if (active_jobs() >= cfg_.max_jobs) {
      ++stats.pending;
      return;
    }
    JobRequest req{view, manifest.value(), preset, manifest->params, 1, 1, ""};
    if (start_job(std::move(req))) ++stats.started;
    return;
  }

  // claimed or running: someone's job (maybe ours from before a crash).
  const auto& st = *view.status;
  if (st.runner_id == cfg_.runner_id && fs::exists(cfg_.work_dir / "spool" / sanitize(view.ref) / "meta.json")) {
    return;  // our finished result waits in the spool: flush_spool publishes it, it is not stale
  }
  const bool own_stale = st.runner_id == cfg_.runner_id && !active_refs_.count(view.ref);
  const double unchanged_s = std::chrono::duration<double>(clock_type::now() - t.first_seen).count();
  if (active_refs_.count(view.ref)) return;
  if (!own_stale && unchanged_s < cfg_.lease_s) return;
  std::string why;
  if (!can_run(*preset, &why)) return;
  const std::string who = own_stale ? "this runner before a restart" : "runner " + st.runner_id;
  const bool may_have_started = state == RunState::Running;
  if (st.attempt >= kMaxAttempts) {
    publish_terminal_without_run(view, RunState::InfraError,
                                 "lease expired after " + std::to_string(st.attempt) + " attempts (last by " + who + ")",
                                 st.claim_gen + 1);
    return;
  }
  if (may_have_started && !preset->idempotent) {
    publish_terminal_without_run(view, RunState::InfraError,
                                 "lease of " + who + " expired after the command started; preset '" + preset->name +
                                     "' is not idempotent, so it is not re-run",
                                 st.claim_gen + 1);
    return;
  }
  if (active_jobs() >= cfg_.max_jobs) {
    ++stats.pending;
    return;
  }
  spdlog::warn("{}: taking over from {} (tip unchanged {:.1f}s)", view.ref, who, unchanged_s);
  JobRequest req{view, manifest.value(), preset, manifest->params, st.claim_gen + 1, st.attempt + 1,
                 "taken over from " + who + (may_have_started ? " (idempotent re-run)" : " (command had not started)")};
  if (start_job(std::move(req))) ++stats.started;
}

void Agent::flush_spool() {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(cfg_.work_dir / "spool", ec)) {
    if (!fs::exists(entry.path() / "meta.json")) continue;
    auto pub = spool_read(entry.path());
    if (!pub.ok()) {
      spdlog::error("spool {}: {}", entry.path().string(), pub.error().str());
      continue;
    }
    if (active_refs_.count(pub->ref)) continue;
    // The job pushed its commits from its own cache: bring the branch (and so the spooled tip)
    // into the discovery cache before building the final commit on it.
    auto fetched = bus_->fetch({pub->ref});
    if (!fetched.ok()) continue;
    if (!fetched->count(pub->ref)) {
      spdlog::info("spool {}: branch gone, dropping result", pub->ref);
      fs::remove_all(entry.path(), ec);
      continue;
    }
    const auto outcome = publish_final(*bus_, pub.value(), runner_author(cfg_), 0);
    if (outcome == PublishOutcome::RetryLater) continue;
    spdlog::info("spool {}: {}", pub->ref, outcome == PublishOutcome::Published ? "published" : "dropped (fenced or gone)");
    fs::remove_all(entry.path(), ec);
  }
}

Result<PollStats> Agent::poll_once() {
  reap();
  PollStats stats;
  KAKEYA_ASSIGN_OR_RETURN(auto refs, bus_->ls_remote("refs/heads/"));
  std::optional<std::string> own_beat;
  for (const auto& r : refs) {
    if (r.name == beat_.ref()) own_beat = r.oid;
  }
  beat_.observe(own_beat);
  beat_runner("serving", false);
  flush_spool();
  std::vector<std::string> changed, unchanged;
  std::set<std::string> present;
  for (const auto& r : refs) {
    const std::string branch = std::string(bridge::strip_heads_prefix(r.name));
    if (bridge::is_runner_branch(branch)) continue;
    bool match = false;
    for (const auto& pat : cfg_.branch_patterns) match = match || bridge::branch_glob_match(pat, branch);
    if (!match) continue;
    ++stats.refs_seen;
    present.insert(r.name);
    auto it = tracked_.find(r.name);
    if (it != tracked_.end() && it->second.oid == r.oid && it->second.terminal) continue;
    if (active_refs_.count(r.name)) continue;  // our own job owns it right now
    if (it != tracked_.end() && it->second.oid == r.oid && it->second.view) {
      unchanged.push_back(r.name);  // re-examined from the cached view: no fetch
      continue;
    }
    changed.push_back(r.name);
  }
  for (auto it = tracked_.begin(); it != tracked_.end();) {
    it = present.count(it->first) ? std::next(it) : tracked_.erase(it);  // branch deleted (gc)
  }
  for (const auto& ref : unchanged) {
    const BranchView view = *tracked_[ref].view;  // copy: handle_branch may update tracked_
    handle_branch(view, stats);
  }
  if (changed.empty()) return stats;
  KAKEYA_ASSIGN_OR_RETURN(auto oids, bus_->fetch(changed));
  stats.fetched = static_cast<int>(changed.size());
  for (const auto& ref : changed) {
    auto it = oids.find(ref);
    if (it == oids.end() || it->second.empty()) continue;
    auto view = read_branch_view(*bus_, ref, it->second);
    if (!view.ok()) {
      spdlog::warn("{}: cannot read: {}", ref, view.error().str());
      continue;
    }
    handle_branch(view.value(), stats);
  }
  return stats;
}

std::chrono::duration<double> Agent::next_poll_delay(bool had_error) {
  static thread_local std::mt19937 rng(std::random_device{}());
  consecutive_errors_ = had_error ? consecutive_errors_ + 1 : 0;
  double base = cfg_.poll_interval_s;
  if (consecutive_errors_ > 0) base = std::min(base * (1 << std::min(consecutive_errors_, 6)), 300.0);
  std::uniform_real_distribution<double> j(1.0 - cfg_.poll_jitter, 1.0 + cfg_.poll_jitter);
  return std::chrono::duration<double>(base * j(rng));
}

void Agent::beat_runner(const std::string& state, bool force) {
  if (!force && !beat_.due()) return;
  std::vector<std::string> running;
  {
    std::lock_guard<std::mutex> lock(slots_mu_);
    for (const auto& ref : active_refs_) running.emplace_back(bridge::strip_heads_prefix(ref));
  }
  if (auto st = beat_.publish(*bus_, running, state); !st.ok()) {
    spdlog::warn("runner heartbeat on {} failed: {}", beat_.ref(), st.error().str());
  }
}

void Agent::cancel_all(const std::string& reason) {
  std::lock_guard<std::mutex> lock(slots_mu_);
  for (auto& s : slots_) s->job->cancel(reason);
}

void Agent::wait_jobs() {
  std::vector<std::unique_ptr<Slot>> slots;
  {
    std::lock_guard<std::mutex> lock(slots_mu_);
    slots.swap(slots_);
    active_refs_.clear();
  }
  for (auto& s : slots) {
    if (s->thread.joinable()) s->thread.join();
  }
}

Status Agent::run_daemon(const std::atomic<int>& stop) {
  spdlog::info("runner {} serving {} (patterns: {}), max_jobs {}", cfg_.runner_id, bridge::redact_url(cfg_.remote_url),
               fmt::join(cfg_.branch_patterns, ", "), cfg_.max_jobs);
  while (stop.load() == 0) {
    auto stats = poll_once();
    if (!stats.ok()) spdlog::warn("poll failed: {}", stats.error().str());
    const auto delay = next_poll_delay(!stats.ok());
    const auto until = clock_type::now() + std::chrono::duration_cast<clock_type::duration>(delay);
    while (stop.load() == 0 && clock_type::now() < until) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (stop.load() >= 2) {
    spdlog::warn("cancelling {} running job(s)", active_jobs());
    cancel_all("runner stopped (second signal)");
  } else {
    spdlog::info("draining: waiting for {} running job(s)", active_jobs());
    const auto deadline = clock_type::now() + std::chrono::duration<double>(cfg_.shutdown_grace_s);
    while (active_jobs() > 0) {
      reap();
      beat_runner("draining", false);
      if (stop.load() >= 2 || clock_type::now() >= std::chrono::time_point_cast<clock_type::duration>(deadline)) {
        cancel_all(stop.load() >= 2 ? "runner stopped (second signal)" : "runner shutdown grace expired");
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  wait_jobs();
  flush_spool();
  beat_runner("stopped", true);
  return ok_status();
}

Status Agent::run_once(double max_seconds, const std::atomic<int>& stop) {
  const auto deadline = clock_type::now() + std::chrono::duration_cast<clock_type::duration>(
                                                std::chrono::duration<double>(max_seconds));
  while (stop.load() == 0) {
    KAKEYA_ASSIGN_OR_RETURN(auto stats, poll_once());
    if (stats.started == 0 && stats.pending == 0 && active_jobs() == 0) break;
    if (clock_type::now() >= deadline) {
      cancel_all("runner once: deadline reached");
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    reap();
  }
  if (stop.load() >= 2) cancel_all("runner stopped (signal)");
  wait_jobs();
  flush_spool();
  beat_runner("stopped", true);
  return ok_status();
}

}  // namespace kakeya::runner
