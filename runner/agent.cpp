#include "runner/agent.h"

#include <spdlog/spdlog.h>

#include <cmath>
#include <random>

#include "bridge/branch.h"
#include "bridge/json_text.h"
#include "bridge/layout.h"
#include "bridge/limits.h"
#include "bridge/request.h"
#include "bridge/summary.h"
#include "bridge/utf8.h"
#include "bridge/version.h"
#include "bridge/credentials.h"
#include "runner/log_fields.h"
#include "runner/publish.h"
#include "runner/request_signing.h"
#include "runner/workspace.h"

namespace kakeya::runner {

namespace fs = std::filesystem;
using bridge::RunState;
using clock_type = std::chrono::steady_clock;

namespace {
constexpr int kMaxAttempts = 3;
// Back-off of a branch whose receipt push failed or whose tip cannot be read: 1 s doubling up to
// 5 minutes.
constexpr double kRetryMinS = 1.0;
constexpr double kRetryMaxS = 300.0;

// A branch name for log lines: without refs/heads/, escaped (bridge/utf8.h printable).
std::string shown(const std::string& ref) {
  return bridge::printable(bridge::strip_heads_prefix(ref), bridge::kMaxBranchNameBytes);
}

std::string sanitize(const std::string& ref) {
  std::string s = std::string(bridge::strip_heads_prefix(ref));
  for (char& c : s) {
    if (c == '/') c = '_';
  }
  return s;
}
}  // namespace

Agent::Agent(RunnerConfig cfg, bridge::PresetCatalog catalog, bridge::Credentials creds, Telemetry& telemetry)
    : cfg_(std::move(cfg)), catalog_(std::move(catalog)), creds_(std::move(creds)), telemetry_(telemetry) {}

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
  if (ec) return make_error(errc::kIo, "cannot create " + cfg_.work_dir.string() + ": " + ec.message());
  KAKEYA_ASSIGN_OR_RETURN(bus_, open_bus("discovery"));
  tidy_workspace();
  return ok_status();
}

void Agent::tidy_workspace() {
  std::set<fs::path> active;
  {
    std::lock_guard<std::mutex> lock(slots_mu_);
    for (const auto& s : slots_) active.insert(s->job->dir());
  }
  const PruneResult pruned = prune_job_dirs(cfg_.work_dir / "jobs", active, cfg_.keep_failed_jobs,
                                            cfg_.keep_failed_jobs_bytes);
  if (pruned.removed > 0) {
    spdlog::info("work_dir: removed {} old job directories; kept {} of failed jobs ({} bytes; keep_failed_jobs={})",
                 pruned.removed, pruned.kept, pruned.kept_bytes, cfg_.keep_failed_jobs);
  }
  uint64_t active_bytes = 0;
  for (const auto& dir : active) active_bytes += directory_bytes(dir);
  telemetry_.set_work_dir_usage(pruned.kept_bytes + active_bytes, directory_bytes(cfg_.work_dir / "spool"), pruned.kept);
  telemetry_.set_spool_depth(spool_depth());
}

std::vector<RunningJob> Agent::running_jobs() const {
  std::lock_guard<std::mutex> lock(slots_mu_);
  std::vector<RunningJob> out;
  for (const auto& s : slots_) {
    if (!s->done) out.push_back(s->job->info());
  }
  return out;
}

int Agent::spool_depth() const {
  std::error_code ec;
  int n = 0;
  for (const auto& entry : fs::directory_iterator(cfg_.work_dir / "spool", ec)) {
    std::error_code fec;
    n += fs::exists(entry.path() / "meta.json", fec) ? 1 : 0;
  }
  return n;
}

bool Agent::can_run(const bridge::PresetSpec& preset, std::string* why) const {
  return preset_runnable(cfg_, preset, why);
}

int Agent::active_jobs() const {
  std::lock_guard<std::mutex> lock(slots_mu_);
  return static_cast<int>(slots_.size());
}

void Agent::reap() {
  bool reaped = false;
  {
    std::lock_guard<std::mutex> lock(slots_mu_);
    for (auto it = slots_.begin(); it != slots_.end();) {
      if ((*it)->done) {
        (*it)->thread.join();
        release(*(*it)->job);
        active_refs_.erase((*it)->job->ref());
        it = slots_.erase(it);
        reaped = true;
      } else {
        ++it;
      }
    }
  }
  if (reaped) tidy_workspace();
  telemetry_.set_running(running_jobs());
}

bool Agent::start_job(JobRequest req) {
  auto bus = open_bus("job-" + std::to_string(job_counter_ % std::max(1, cfg_.max_jobs * 2)));
  if (!bus.ok()) {
    spdlog::error("cannot open a bus for {}: {}", shown(req.view.ref), bus.error().str());
    return false;
  }
  ++job_counter_;
  const std::string name = sanitize(req.view.ref);
  const fs::path job_dir = cfg_.work_dir / "jobs" / name;
  const fs::path spool = cfg_.work_dir / "spool" / name;
  auto slot = std::make_unique<Slot>();
  slot->job = std::make_unique<Job>(cfg_, std::move(req), std::move(bus).value(), job_dir, spool, telemetry_);
  Slot* raw = slot.get();
  std::lock_guard<std::mutex> lock(slots_mu_);
  active_refs_.insert(raw->job->ref());
  raw->thread = std::thread([raw] {
    const JobEnd end = raw->job->run();  // never throws (Job::run catches)
    spdlog::info("{}: job ended: {}", shown(raw->job->ref()), to_string(end));
    raw->done = true;
  });
  slots_.push_back(std::move(slot));
  std::vector<RunningJob> running;
  for (const auto& s : slots_) {
    if (!s->done) running.push_back(s->job->info());
  }
  telemetry_.set_running(std::move(running));
  return true;
}

void Agent::reject(const BranchView& view, const std::string& reason) {
  spdlog::warn("{}: rejected: {}", shown(view.ref), bridge::printable(reason, bridge::kMaxReasonBytes));
  publish_terminal_without_run(view, RunState::Rejected, reason, 0);
}

void Agent::back_off(Tracked& t) {
  ++t.failures;
  const double delay = std::min(kRetryMaxS, kRetryMinS * std::pow(2.0, std::min(t.failures - 1, 20)));
  t.retry_at = clock_type::now() + std::chrono::duration_cast<clock_type::duration>(std::chrono::duration<double>(delay));
}

// Terminal commits that need no claim first (reject, cancel while queued, takeover give-up).
// `claim_gen` is the generation written (0 for never-claimed requests). The commit is built once
// on the observed tip; a push that does not win is retried later with back-off (push_receipt) and
// the branch is not re-read until its tip moves.
void Agent::publish_terminal_without_run(const BranchView& view, RunState state, const std::string& reason,
                                         int64_t claim_gen) {
  const std::string line = bridge::printable(reason, bridge::kMaxReasonBytes);
  bridge::RunStatus st = view.status.value_or(bridge::RunStatus{});
  st.state = state;
  st.reason = line;
  // Carried over from a status someone else wrote: bounded, so the receipt stays far below
  // kMaxStatusBytes whatever that status held (an oversized receipt would read as malformed).
  st.progress = nullptr;
  st.log_tail = std::string(bridge::utf8_tail(st.log_tail, bridge::kMaxReasonBytes));
  st.runner_id = cfg_.runner_id;
  st.labels = cfg_.labels;
  st.claim_gen = claim_gen;
  st.updated_at = bridge::now_rfc3339();
  bridge::RunSummary summary;  // a receipt without a run: no claim was made
  summary.state = state;
  summary.reason = line;
  summary.runner_id = cfg_.runner_id;
  summary.request_commit = view.tip;
  summary.finished_at = st.updated_at;
  summary.engine_version = engine_version();
  std::vector<bridge::FileChange> changes{status_change(st),
                                          {std::string(bridge::kSummaryPath), bridge::summary_json_text(summary)}};
  const std::string what = bridge::to_string(state);
  auto commit = make_runner_commit(*bus_, view.tip, changes, what, runner_author(cfg_));
  if (!commit.ok()) {
    // The tip's tree cannot be used as a base (e.g. a tree libgit2 cannot parse): the receipt
    // then holds only the run files, still on top of the tip.
    spdlog::warn("{}: cannot build the {} commit on the branch's tree ({}); writing the run files alone",
                 shown(view.ref), what, commit.error().str());
    commit = bus_->make_commit(view.tip, std::nullopt, changes, "kakeya-runner: " + what + " [skip ci]",
                               runner_author(cfg_));
  }
  Tracked& t = tracked_[view.ref];
  if (!commit.ok()) {
    spdlog::error("{}: cannot build the {} commit: {}", shown(view.ref), what, commit.error().str());
    t.unreadable = true;
    back_off(t);
    return;
  }
  t.receipt = commit.value();
  t.receipt_state = what;
  t.receipt_reason = line;
  t.receipt_preset.clear();
  if (view.request_json) {
    if (auto m = bridge::parse_request(*view.request_json); m.ok()) t.receipt_preset = m->preset;
  }
  push_receipt(view.ref, view.tip);
}

void Agent::push_receipt(const std::string& ref, const std::string& expected_tip) {
  Tracked& t = tracked_[ref];
  auto pushed = bus_->push_cas(ref, *t.receipt, expected_tip);
  if (pushed.ok() && pushed.value() == bridge::PushOutcome::Won) {
    {
      ScopedLogFields f{{"branch", std::string(bridge::strip_heads_prefix(ref))}, {"state", t.receipt_state}};
      spdlog::info("{}: {} receipt published", shown(ref), t.receipt_state);
    }
    telemetry_.job_finished(JobOutcome{std::string(bridge::strip_heads_prefix(ref)), t.receipt_preset, t.receipt_state,
                                       t.receipt_reason, bridge::now_rfc3339(), std::nullopt});
    t = Tracked{*t.receipt, true, clock_type::now(), std::nullopt};
    return;
  }
  back_off(t);
  const double in_s = std::chrono::duration<double>(t.retry_at - clock_type::now()).count();
  if (!pushed.ok()) {
    ScopedLogFields f{{"branch", std::string(bridge::strip_heads_prefix(ref))}, {"error_code", pushed.error().code.str()}};
    spdlog::warn("{}: {} push failed (try {}; again in {:.0f}s): {}", shown(ref), t.receipt_state, t.failures, in_s,
                 pushed.error().str());
  } else {
    spdlog::info("{}: {} push lost the compare-and-swap (try {}; again in {:.0f}s unless the branch moves)",
                 shown(ref), t.receipt_state, t.failures, in_s);
  }
}

void Agent::handle_unreadable(const std::string& ref, const std::string& oid, const Error& why) {
  spdlog::warn("{}: cannot read tip {}: {}", shown(ref), oid.substr(0, 12), why.str());
  Tracked& t = tracked_[ref];
  if (t.oid != oid) t = Tracked{oid, false, clock_type::now(), std::nullopt};
  BranchView view;
  view.ref = ref;
  view.tip = oid;
  if (bus_->check_commit(oid).ok()) {
    reject(view, "the branch cannot be read: " + why.message);
    return;
  }
  t.unreadable = true;  // not even the commit is here: nothing to build a receipt on
  back_off(t);
}

void Agent::handle_branch_guarded(const BranchView& view, PollStats& stats) {
  std::string what;
  try {
    handle_branch(view, stats);
    return;
  } catch (const std::exception& e) {
    what = e.what();
  } catch (...) {
    what = "unknown exception";
  }
  spdlog::error("{}: internal error while handling the branch: {}", shown(view.ref), bridge::printable(what, 512));
  try {
    // Only a queued request can be rejected (claimed/running ones belong to a claim).
    if (view.state() == RunState::Queued && !active_refs_.count(view.ref)) {
      reject(view, "the runner failed while reading this request (internal error: " + what + ")");
      return;
    }
  } catch (...) {
    spdlog::error("{}: internal error while rejecting the branch", shown(view.ref));
  }
  Tracked& t = tracked_[view.ref];
  t.unreadable = true;
  back_off(t);
}

void Agent::handle_branch(const BranchView& view, PollStats& stats) {
  auto& t = tracked_[view.ref];
  if (t.oid != view.tip) t = Tracked{view.tip, false, clock_type::now(), std::nullopt};
  t.view = view;
  t.unreadable = false;  // read now

  if (!view.status_error.empty()) {
    reject(view, view.status_error);
    return;
  }
  const RunState state = view.state();
  if (bridge::is_terminal(state)) {
    t.terminal = true;
    return;
  }
  const std::string_view name = bridge::strip_heads_prefix(view.ref);
  if (name.size() > bridge::kMaxBranchNameBytes) {
    reject(view, "branch name is " + std::to_string(name.size()) + " bytes, more than the limit of " +
                     std::to_string(bridge::kMaxBranchNameBytes) + ": \"" + bridge::printable(name, 64) + "\"");
    return;
  }
  if (!view.request_error.empty()) {
    reject(view, view.request_error);
    return;
  }
  if (!view.request_json) {
    reject(view, "no " + std::string(bridge::kRequestPath) + " on the branch");
    return;
  }
  auto manifest = bridge::parse_request(*view.request_json);
  if (!manifest.ok()) {
    reject(view, "invalid " + std::string(bridge::kRequestPath) + ": " + manifest.error().message);
    return;
  }
  if (auto m = bridge::check_branch_matches(std::string(bridge::strip_heads_prefix(view.ref)), manifest.value()); !m.ok()) {
    reject(view, m.error().message);
    return;
  }
  const bridge::PresetSpec* preset = catalog_.find(manifest->preset);
  if (preset == nullptr) {
    const std::vector<std::string> offering = live_runners_offering(manifest->preset);
    if (!offering.empty()) {
      spdlog::debug("{}: preset '{}' is not in this runner's catalog; live runner(s) {} offer it", shown(view.ref),
                    bridge::printable(manifest->preset), bridge::printable(fmt::format("{}", fmt::join(offering, ", "))));
      return;
    }
    const std::string none = "preset '" + manifest->preset + "' is not in the catalog of runner " + cfg_.runner_id +
                             " and no live runner offers it (runners seen within lease_s=" +
                             fmt::format("{:g}", cfg_.lease_s) + "s)";
    if (state == RunState::Queued) {
      reject(view, none);
      return;
    }
    // Claimed or running by a runner that has the preset: its job, until the lease expires (or
    // at once when it is this runner's own claim from before a restart with another catalog).
    const double unchanged_s = std::chrono::duration<double>(clock_type::now() - t.first_seen).count();
    const bool own_stale = view.status->runner_id == cfg_.runner_id && !active_refs_.count(view.ref);
    if (own_stale || unchanged_s >= cfg_.lease_s) {
      publish_terminal_without_run(view, RunState::InfraError,
                                   "lease of runner " + bridge::printable(view.status->runner_id, 128) +
                                       " expired and " + none,
                                   view.status->claim_gen + 1);
    }
    return;
  }

  if (state == RunState::Queued) {
    if (!view.cancel_error.empty()) {
      reject(view, view.cancel_error);
      return;
    }
    if (view.cancel_requested) {
      const std::string why = view.cancel && !view.cancel->reason.empty() ? ": " + view.cancel->reason : "";
      publish_terminal_without_run(view, RunState::Cancelled, "cancelled by client before it was claimed" + why, 0);
      return;
    }
    if (auto v = bridge::validate_params(*preset, manifest->params); !v.ok()) {
      reject(view, v.error().message);
      ++stats.rejected;
      return;
    }
    if (cfg_.request_signing) {
      auto signer = authorize_request(*bus_, *cfg_.request_signing, view.tip, manifest->preset);
      if (!signer.ok()) {
        reject(view, signer.error().message);
        ++stats.rejected;
        return;
      }
    }
    std::string why;
    if (!can_run(*preset, &why)) {
      spdlog::debug("{}: not for this runner: {}", shown(view.ref), why);
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
  if (cfg_.request_signing) {
    // The claim being taken over vouches for nothing: the request under it is checked as a
    // queued one is, and nothing but .kakeya/run/ may have changed since.
    auto signer = authorize_claimed_request(*bus_, *cfg_.request_signing, view.tip,
                                            std::string(bridge::strip_heads_prefix(view.ref)), manifest->preset);
    if (!signer.ok()) {
      spdlog::warn("{}: rejected at takeover: {}", shown(view.ref),
                   bridge::printable(signer.error().message, bridge::kMaxReasonBytes));
      publish_terminal_without_run(view, RunState::Rejected, signer.error().message, st.claim_gen + 1);
      ++stats.rejected;
      return;
    }
  }
  const std::string who = own_stale ? "this runner before a restart" : "runner " + bridge::printable(st.runner_id, 128);
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
  spdlog::warn("{}: taking over from {} (tip unchanged {:.1f}s)", shown(view.ref), bridge::printable(who), unchanged_s);
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
      spdlog::info("spool {}: branch gone, dropping result", shown(pub->ref));
      fs::remove_all(entry.path(), ec);
      continue;
    }
    tick();
    const auto outcome = publish_final(*bus_, pub.value(), runner_author(cfg_), 0);
    if (outcome == PublishOutcome::RetryLater) continue;
    if (outcome == PublishOutcome::Fenced) telemetry_.fenced();
    spdlog::info("spool {}: {}", shown(pub->ref), outcome == PublishOutcome::Published ? "published" : "dropped (fenced or gone)");
    fs::remove_all(entry.path(), ec);
  }
}

void Agent::observe_peers(const std::vector<bridge::RemoteRef>& refs) {
  const auto now = clock_type::now();
  std::set<std::string> present;
  std::vector<std::string> moved;
  for (const auto& r : refs) {
    if (!bridge::is_runner_branch(r.name) || r.name == beat_.ref()) continue;
    present.insert(r.name);
    Peer& p = peers_[r.name];  // a new peer: no doc yet
    if (p.oid != r.oid) {
      p.oid = r.oid;
      p.first_seen = now;  // moved: live again (its doc stays until a newer one is read)
    }
    if (p.doc_oid != p.oid) moved.push_back(r.name);
  }
  // A branch missing from this listing is forgotten only once its lease has run out, like one that
  // stopped moving: a runner rolls its heartbeat chain over by deleting its branch and creating it
  // again (RunnerBeat::publish), and a listing taken between the two must not drop its offer.
  std::erase_if(peers_, [&](const auto& kv) {
    return !present.count(kv.first) &&
           std::chrono::duration<double>(now - kv.second.first_seen).count() >= cfg_.lease_s;
  });
  if (moved.empty()) return;
  auto fetched = bus_->fetch(moved);
  if (!fetched.ok()) {
    spdlog::debug("cannot fetch {} runner branch(es): {}", moved.size(), fetched.error().str());
    return;  // doc_oid != oid: fetched again at the next poll
  }
  for (const auto& [ref, oid] : *fetched) {
    auto it = peers_.find(ref);
    if (it == peers_.end() || oid.empty()) continue;
    // The fetch may find the branch already moved past the advertised tip (a heartbeat in
    // between): that commit is newer, and read as the peer's tip.
    Peer& p = it->second;
    if (p.oid != oid) {
      p.oid = oid;
      p.first_seen = clock_type::now();
    }
    auto text = bus_->read_file(oid, bridge::kRunnerDocFile, bridge::kMaxRunnerDocBytes);
    auto doc = !text.ok()            ? Result<bridge::RunnerDoc>(text.error())
               : !text->has_value() ? Result<bridge::RunnerDoc>(make_error(errc::kNotFound, "no runner.json"))
                                    : bridge::parse_runner_doc(**text);
    p.doc_oid = oid;
    if (doc.ok()) {
      p.doc = std::move(doc).value();
    } else {
      p.doc.reset();  // what the branch says now is no offer
      spdlog::debug("{}: runner.json unreadable: {}", shown(ref), doc.error().str());
    }
  }
}

std::vector<std::string> Agent::live_runners_offering(const std::string& preset) const {
  std::vector<std::string> out;
  const auto now = clock_type::now();
  for (const auto& [ref, p] : peers_) {
    const double age_s = std::chrono::duration<double>(now - p.first_seen).count();
    if (!p.doc || age_s >= cfg_.lease_s || p.doc->state == "stopped") continue;
    if (p.doc->offers(preset)) out.push_back(p.doc->id);
  }
  return out;
}

Result<std::map<std::string, std::string>> Agent::fetch_isolated(const std::map<std::string, std::string>& advertised) {
  std::vector<std::string> refs;
  for (const auto& [ref, oid] : advertised) refs.push_back(ref);
  auto all = bus_->fetch(refs);
  if (all.ok() || refs.size() == 1) return all;
  spdlog::warn("fetch of {} branches failed ({}); fetching them one by one", refs.size(), all.error().str());
  std::map<std::string, std::string> out;
  std::size_t failed = 0;
  for (const auto& ref : refs) {
    auto one = bus_->fetch({ref});
    if (one.ok()) {
      out.insert(one->begin(), one->end());
      continue;
    }
    ++failed;
    spdlog::warn("{}: cannot fetch: {}", shown(ref), one.error().str());
    Tracked& t = tracked_[ref];
    const std::string& oid = advertised.at(ref);
    if (t.oid != oid) t = Tracked{oid, false, clock_type::now(), std::nullopt};
    t.unreadable = true;
    back_off(t);
  }
  if (failed == refs.size()) return std::move(all).error();  // the remote, not a branch
  return out;
}

Result<PollStats> Agent::poll_once() {
  reap();
  PollStats stats;
  bridge::AdvertisementStats adv;
  KAKEYA_ASSIGN_OR_RETURN(auto refs, bus_->ls_remote("refs/heads/", &adv));
  if ((adv.long_names != 0 || adv.over_count != 0) &&
      (adv.long_names != last_adv_.long_names || adv.over_count != last_adv_.over_count)) {
    spdlog::warn("the remote advertises {} branches: {} with names over {} bytes and {} beyond the first {} are "
                 "not looked at (delete finished branches: kakeya gc)",
                 adv.advertised, adv.long_names, bridge::kMaxRefNameBytes, adv.over_count, bridge::kMaxAdvertisedRefs);
  }
  last_adv_ = adv;
  std::optional<std::string> own_beat;
  for (const auto& r : refs) {
    if (r.name == beat_.ref()) own_beat = r.oid;
  }
  beat_.observe(own_beat);
  beat_runner("serving", false);
  observe_peers(refs);
  flush_spool();
  const auto now = clock_type::now();
  std::map<std::string, std::string> changed;  // ref -> advertised oid
  std::vector<std::string> unchanged, receipts;
  std::set<std::string> present;
  for (const auto& r : refs) {
    const std::string branch = std::string(bridge::strip_heads_prefix(r.name));
    if (bridge::is_runner_branch(branch)) continue;
    if (!bridge::branch_matches_any(cfg_.branch_patterns, branch)) continue;
    ++stats.refs_seen;
    present.insert(r.name);
    if (active_refs_.count(r.name)) continue;  // our own job owns it right now
    auto it = tracked_.find(r.name);
    if (it != tracked_.end() && it->second.oid == r.oid) {
      const Tracked& t = it->second;
      if (t.terminal) continue;
      if (t.receipt || t.unreadable) {
        if (now < t.retry_at) continue;  // backing off: neither re-read nor re-pushed yet
        if (t.receipt) {
          receipts.push_back(r.name);
          continue;
        }
        changed[r.name] = r.oid;  // unreadable: fetch and read again
        continue;
      }
      if (t.view) {
        unchanged.push_back(r.name);  // re-examined from the cached view: no fetch
        continue;
      }
    }
    changed[r.name] = r.oid;
  }
  for (auto it = tracked_.begin(); it != tracked_.end();) {
    it = present.count(it->first) ? std::next(it) : tracked_.erase(it);  // branch deleted (gc)
  }
  for (const auto& ref : receipts) {
    tick();
    try {
      push_receipt(ref, tracked_[ref].oid);
    } catch (const std::exception& e) {
      spdlog::error("{}: internal error while pushing a receipt: {}", shown(ref), bridge::printable(e.what(), 512));
      back_off(tracked_[ref]);
    }
  }
  for (const auto& ref : unchanged) {
    tick();
    const BranchView view = *tracked_[ref].view;  // copy: handle_branch may update tracked_
    handle_branch_guarded(view, stats);
  }
  if (changed.empty()) return stats;
  KAKEYA_ASSIGN_OR_RETURN(auto oids, fetch_isolated(changed));
  stats.fetched = static_cast<int>(oids.size());
  for (const auto& entry : changed) {
    tick();
    const std::string& ref = entry.first;
    auto it = oids.find(ref);
    if (it == oids.end() || it->second.empty()) continue;
    try {
      auto view = read_branch_view(*bus_, ref, it->second);
      if (!view.ok()) {
        handle_unreadable(ref, it->second, view.error());
        continue;
      }
      handle_branch_guarded(view.value(), stats);
    } catch (const std::exception& e) {
      spdlog::error("{}: internal error while reading the branch: {}", shown(ref), bridge::printable(e.what(), 512));
      Tracked& t = tracked_[ref];
      t.oid = it->second;
      t.unreadable = true;
      back_off(t);
    }
  }
  return stats;
}

Result<PollStats> Agent::poll_guarded() {
  try {
    return poll_once();
  } catch (const std::exception& e) {
    return make_error(errc::kInternal, "poll failed with an exception: " + bridge::printable(e.what(), 512));
  } catch (...) {
    return make_error(errc::kInternal, "poll failed with an unknown exception");
  }
}

Result<PollStats> Agent::poll_reported() {
  const auto t0 = clock_type::now();
  auto stats = poll_guarded();
  const double seconds = std::chrono::duration<double>(clock_type::now() - t0).count();
  telemetry_.poll_finished(seconds, stats.ok() ? std::nullopt : std::optional<Error>(stats.error()));
  telemetry_.set_spool_depth(spool_depth());
  telemetry_.set_running(running_jobs());
  if (!stats.ok()) {
    const Error told = bridge::explain_auth_failure(stats.error(), cfg_.remote_url, creds_,
                                                    "credentials_file in " + cfg_.source_path.string());
    ScopedLogFields f{{"error_code", told.code.str()}};
    spdlog::warn("poll failed: {}", told.str());
  }
  if (hooks_.polled) hooks_.polled(stats);
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
    release(*s->job);
  }
}

void Agent::release(const Job& job) {
  // Kept for debugging only when an outcome other than success was published or spooled.
  const auto state = job.final_state();
  release_job_dir(job.dir(), state.has_value() && *state != RunState::Succeeded);
}

Status Agent::run_daemon(const std::atomic<int>& stop) {
  spdlog::info("runner {} serving {} (patterns: {}), max_jobs {}", cfg_.runner_id, bridge::redact_url(cfg_.remote_url),
               fmt::join(cfg_.branch_patterns, ", "), cfg_.max_jobs);
  telemetry_.set_phase("serving");
  while (stop.load() == 0) {
    tick();
    auto stats = poll_reported();
    const auto delay = next_poll_delay(!stats.ok());
    const auto until = clock_type::now() + std::chrono::duration_cast<clock_type::duration>(delay);
    while (stop.load() == 0 && clock_type::now() < until) {
      tick();
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  telemetry_.set_phase("draining");
  if (hooks_.draining) hooks_.draining(stop.load() >= 2 ? 0.0 : cfg_.shutdown_grace_s);
  if (stop.load() >= 2) {
    spdlog::warn("cancelling {} running job(s)", active_jobs());
    cancel_all("runner stopped (second signal)");
  } else {
    spdlog::info("draining: waiting for {} running job(s)", active_jobs());
    const auto deadline = clock_type::now() + std::chrono::duration<double>(cfg_.shutdown_grace_s);
    while (active_jobs() > 0) {
      reap();
      tick();
      if (hooks_.draining) {
        hooks_.draining(std::max(0.0, std::chrono::duration<double>(deadline - clock_type::now()).count()));
      }
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
  tidy_workspace();
  telemetry_.set_running({});
  telemetry_.set_phase("stopped");
  return ok_status();
}

Status Agent::run_once(double max_seconds, const std::atomic<int>& stop) {
  const auto deadline = clock_type::now() + std::chrono::duration_cast<clock_type::duration>(
                                                std::chrono::duration<double>(max_seconds));
  while (stop.load() == 0) {
    KAKEYA_ASSIGN_OR_RETURN(auto stats, poll_reported());
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
  tidy_workspace();
  telemetry_.set_running({});
  telemetry_.set_phase("stopped");
  return ok_status();
}

}  // namespace kakeya::runner
