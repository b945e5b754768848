#include "runner/telemetry.h"

#include <unistd.h>

#include <algorithm>
#include <sstream>

#include <fmt/format.h>
#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include "bridge/request.h"
#include "bridge/version.h"

namespace kakeya::runner {

using clock_type = std::chrono::steady_clock;

struct Telemetry::Metrics {
  prometheus::Family<prometheus::Counter>& jobs;
  prometheus::Family<prometheus::Histogram>& job_duration;
  prometheus::Counter& claim_attempts;
  prometheus::Counter& claim_wins;
  prometheus::Counter& claim_losses;
  prometheus::Counter& heartbeat_conflicts;
  prometheus::Counter& fencing_events;
  prometheus::Histogram& poll_duration;
  prometheus::Family<prometheus::Counter>& poll_errors;
  prometheus::Gauge& spool_depth;
  prometheus::Gauge& last_success;
  prometheus::Gauge& running;
  prometheus::Family<prometheus::Gauge>& work_dir_bytes;
  prometheus::Gauge& jobs_bytes;
  prometheus::Gauge& spool_bytes;
  prometheus::Gauge& kept_failed;

  static prometheus::Counter& counter(prometheus::Registry& r, const std::string& name, const std::string& help) {
    return prometheus::BuildCounter().Name(name).Help(help).Register(r).Add({});
  }
  static prometheus::Gauge& gauge(prometheus::Registry& r, const std::string& name, const std::string& help,
                                  const prometheus::Labels& labels = {}) {
    return prometheus::BuildGauge().Name(name).Help(help).Register(r).Add(labels);
  }

  explicit Metrics(prometheus::Registry& r)
      : jobs(prometheus::BuildCounter()
                 .Name("kakeya_runner_jobs_total")
                 .Help("Requests that reached a terminal state on this runner, by preset and state")
                 .Register(r)),
        job_duration(prometheus::BuildHistogram()
                         .Name("kakeya_runner_job_duration_seconds")
                         .Help("Wall time of job commands, by preset")
                         .Register(r)),
        claim_attempts(counter(r, "kakeya_runner_claim_attempts_total", "Claims pushed (compare-and-swap)")),
        claim_wins(counter(r, "kakeya_runner_claim_wins_total", "Claims whose compare-and-swap won")),
        claim_losses(counter(r, "kakeya_runner_claim_losses_total", "Claims whose compare-and-swap lost")),
        heartbeat_conflicts(counter(r, "kakeya_runner_heartbeat_conflicts_total",
                                    "Job heartbeats whose compare-and-swap lost (the branch moved)")),
        fencing_events(counter(r, "kakeya_runner_fencing_events_total",
                               "Jobs stopped because another runner holds a higher claim_gen")),
        poll_duration(prometheus::BuildHistogram()
                          .Name("kakeya_runner_poll_duration_seconds")
                          .Help("Duration of one discovery pass")
                          .Register(r)
                          .Add({}, prometheus::Histogram::BucketBoundaries{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60,
                                                                           120})),
        poll_errors(prometheus::BuildCounter()
                        .Name("kakeya_runner_poll_errors_total")
                        .Help("Failed polls by error code")
                        .Register(r)),
        spool_depth(gauge(r, "kakeya_runner_spool_depth", "Finished results waiting in work_dir/spool")),
        last_success(gauge(r, "kakeya_runner_last_successful_poll_timestamp_seconds",
                           "Unix time of the last poll that reached the remote")),
        running(gauge(r, "kakeya_runner_running_jobs", "Jobs running now")),
        work_dir_bytes(prometheus::BuildGauge()
                           .Name("kakeya_runner_work_dir_bytes")
                           .Help("Disk use under work_dir, by part (jobs, spool)")
                           .Register(r)),
        jobs_bytes(work_dir_bytes.Add({{"part", "jobs"}})),
        spool_bytes(work_dir_bytes.Add({{"part", "spool"}})),
        kept_failed(gauge(r, "kakeya_runner_kept_failed_jobs", "Job directories of failed jobs kept for debugging")) {}
};

namespace {

const prometheus::Histogram::BucketBoundaries kJobBuckets{1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 7200, 21600};

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string ago(clock_type::time_point t) {
  const double s = std::chrono::duration<double>(clock_type::now() - t).count();
  return fmt::format("{:.0f}s ago", s);
}

}  // namespace

Telemetry::Telemetry(std::string runner_id, std::vector<std::string> presets, double unhealthy_after_s)
    : runner_id_(std::move(runner_id)),
      presets_(std::move(presets)),
      unhealthy_after_s_(unhealthy_after_s),
      started_(clock_type::now()),
      started_at_(bridge::now_rfc3339()),
      registry_(std::make_shared<prometheus::Registry>()),
      m_(std::make_unique<Metrics>(*registry_)) {
  prometheus::BuildGauge()
      .Name("kakeya_runner_info")
      .Help("This runner's id and version")
      .Register(*registry_)
      .Add({{"runner_id", runner_id_}, {"version", engine_version()}})
      .Set(1);
  // Every preset starts at zero so that rate() sees the first job.
  for (const auto& p : presets_) m_->job_duration.Add({{"preset", p}}, kJobBuckets);
}

Telemetry::~Telemetry() = default;

std::string Telemetry::preset_label(const std::string& preset) const {
  return std::find(presets_.begin(), presets_.end(), preset) != presets_.end() ? preset : "other";
}

void Telemetry::poll_finished(double seconds, const std::optional<Error>& error) {
  m_->poll_duration.Observe(seconds);
  std::lock_guard<std::mutex> lock(mu_);
  ++polls_;
  last_poll_s_ = seconds;
  last_poll_at_ = bridge::now_rfc3339();
  last_error_ = error;
  if (error) {
    ++failed_polls_in_row_;
    m_->poll_errors.Add({{"kind", std::string(error->code.str())}}).Increment();
    return;
  }
  failed_polls_in_row_ = 0;
  last_success_ = clock_type::now();
  last_success_at_ = last_poll_at_;
  m_->last_success.Set(unix_now());
}

void Telemetry::claim_attempted() { m_->claim_attempts.Increment(); }
void Telemetry::claim_won() { m_->claim_wins.Increment(); }
void Telemetry::claim_lost() { m_->claim_losses.Increment(); }
void Telemetry::heartbeat_conflict() { m_->heartbeat_conflicts.Increment(); }
void Telemetry::fenced() { m_->fencing_events.Increment(); }

void Telemetry::job_finished(const JobOutcome& outcome) {
  const std::string preset = preset_label(outcome.preset);
  m_->jobs.Add({{"preset", preset}, {"state", outcome.state}}).Increment();
  if (outcome.duration_s) m_->job_duration.Add({{"preset", preset}}, kJobBuckets).Observe(*outcome.duration_s);
  std::lock_guard<std::mutex> lock(mu_);
  recent_.push_front(outcome);
  while (recent_.size() > kRecentOutcomes) recent_.pop_back();
}

void Telemetry::set_running(std::vector<RunningJob> jobs) {
  m_->running.Set(static_cast<double>(jobs.size()));
  std::lock_guard<std::mutex> lock(mu_);
  running_ = std::move(jobs);
}

void Telemetry::set_spool_depth(int depth) {
  m_->spool_depth.Set(depth);
  std::lock_guard<std::mutex> lock(mu_);
  spool_depth_ = depth;
}

void Telemetry::set_work_dir_usage(uint64_t jobs_bytes, uint64_t spool_bytes, int kept_failed) {
  m_->jobs_bytes.Set(static_cast<double>(jobs_bytes));
  m_->spool_bytes.Set(static_cast<double>(spool_bytes));
  m_->kept_failed.Set(kept_failed);
  std::lock_guard<std::mutex> lock(mu_);
  jobs_bytes_ = jobs_bytes;
  spool_bytes_ = spool_bytes;
  kept_failed_ = kept_failed;
}

void Telemetry::set_phase(const std::string& phase) {
  std::lock_guard<std::mutex> lock(mu_);
  phase_ = phase;
}

void Telemetry::set_metrics_address(const std::string& address) {
  std::lock_guard<std::mutex> lock(mu_);
  metrics_address_ = address;
}

std::string Telemetry::metrics_text() const {
  std::ostringstream out;
  prometheus::TextSerializer().Serialize(out, registry_->Collect());
  return out.str();
}

Health Telemetry::health() const {
  std::lock_guard<std::mutex> lock(mu_);
  const auto since = last_success_.value_or(started_);
  const double quiet_s = std::chrono::duration<double>(clock_type::now() - since).count();
  const std::string what = last_success_ ? "the last successful poll" : "start-up (no poll has succeeded yet)";
  if (last_error_ && quiet_s > unhealthy_after_s_) {
    return {false, fmt::format("polls have failed for {:.0f}s since {} (bound {:g}s); last error: {}", quiet_s, what,
                               unhealthy_after_s_, last_error_->str())};
  }
  if (last_error_) {
    return {true, fmt::format("last poll failed ({}), {:.0f}s since {} (bound {:g}s)", last_error_->code.str(), quiet_s,
                              what, unhealthy_after_s_)};
  }
  return {true, polls_ == 0 ? "starting: no poll yet" : "last poll succeeded " + ago(since)};
}

bool Telemetry::any_poll_succeeded() const {
  std::lock_guard<std::mutex> lock(mu_);
  return last_success_.has_value();
}

std::string Telemetry::status_line() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::string poll = polls_ == 0               ? "no poll yet"
                     : last_error_             ? "last poll failed (" + std::string(last_error_->code.str()) + ")"
                     : last_success_           ? "last poll ok"
                                               : "no poll yet";
  std::string line = fmt::format("{}: {} running, {} spooled, {}", phase_, running_.size(), spool_depth_, poll);
  if (last_success_) line += ", last success " + ago(*last_success_);
  return line;
}

nlohmann::json Telemetry::state_json() const {
  const Health h = health();
  std::lock_guard<std::mutex> lock(mu_);
  nlohmann::json running = nlohmann::json::array();
  for (const auto& j : running_) {
    running.push_back({{"branch", j.branch},
                       {"preset", j.preset},
                       {"claim_gen", j.claim_gen},
                       {"attempt", j.attempt},
                       {"started_at", j.started_at}});
  }
  nlohmann::json recent = nlohmann::json::array();
  for (const auto& o : recent_) {
    recent.push_back({{"branch", o.branch},
                      {"preset", o.preset},
                      {"state", o.state},
                      {"reason", o.reason},
                      {"finished_at", o.finished_at},
                      {"duration_s", o.duration_s ? nlohmann::json(*o.duration_s) : nlohmann::json(nullptr)}});
  }
  return {{"runner_id", runner_id_},
          {"pid", static_cast<int64_t>(::getpid())},
          {"version", engine_version()},
          {"phase", phase_},
          {"started_at", started_at_},
          {"updated_at", bridge::now_rfc3339()},
          {"metrics_address", metrics_address_.empty() ? nlohmann::json(nullptr) : nlohmann::json(metrics_address_)},
          {"health", {{"healthy", h.healthy}, {"reason", h.reason}}},
          {"last_poll",
           {{"at", last_poll_at_.empty() ? nlohmann::json(nullptr) : nlohmann::json(last_poll_at_)},
            {"seconds", last_poll_s_},
            {"ok", polls_ > 0 && !last_error_},
            {"error", last_error_ ? nlohmann::json(last_error_->str()) : nlohmann::json(nullptr)},
            {"failed_in_row", failed_polls_in_row_},
            {"last_success_at", last_success_at_.empty() ? nlohmann::json(nullptr) : nlohmann::json(last_success_at_)}}},
          {"running", running},
          {"spool_depth", spool_depth_},
          {"recent", recent},
          {"disk", {{"jobs_bytes", jobs_bytes_}, {"spool_bytes", spool_bytes_}, {"kept_failed_jobs", kept_failed_}}}};
}

}  // namespace kakeya::runner
