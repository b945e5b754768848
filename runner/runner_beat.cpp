#include "runner/runner_beat.h"

#include "bridge/branch.h"
#include "bridge/json_text.h"
#include "bridge/request.h"
#include "bridge/version.h"
#include "runner/job.h"

namespace kakeya::runner {

bridge::RunnerDoc runner_document(const RunnerConfig& cfg, const bridge::PresetCatalog& catalog,
                                  const std::vector<std::string>& running, const std::string& state) {
  bridge::RunnerDoc d;
  d.id = cfg.runner_id;
  d.labels = cfg.labels;
  d.version = engine_version();
  d.max_jobs = cfg.max_jobs;
  d.running = running;
  d.state = state;
  d.heartbeat_s = cfg.heartbeat_s;
  d.updated_at = bridge::now_rfc3339();
  std::string why;
  for (const auto& p : catalog.presets())
    if (preset_runnable(cfg, p, &why)) d.presets.push_back(p.name);
  d.catalog_digest = bridge::catalog_digest(catalog);
  return d;
}

RunnerBeat::RunnerBeat(const RunnerConfig& cfg, const bridge::PresetCatalog& catalog)
    : cfg_(cfg),
      catalog_(catalog),
      ref_("refs/heads/" + bridge::runner_branch_name(cfg.runner_id)) {}

void RunnerBeat::observe(std::optional<std::string> advertised_oid) { remote_ = std::move(advertised_oid); }

bool RunnerBeat::due() const {
  if (!last_time_) return true;
  return std::chrono::steady_clock::now() - *last_time_ >= std::chrono::duration<double>(cfg_.heartbeat_s);
}

Status RunnerBeat::publish(bridge::GitBus& bus, const std::vector<std::string>& running, const std::string& state) {
  const std::string text = bridge::to_json_file(bridge::to_json(runner_document(cfg_, catalog_, running, state)));
  const std::string msg = "runner " + cfg_.runner_id + " " + state + " [skip ci]";
  const bool extend = remote_ && !last_.empty() && *remote_ == last_ && depth_ < kMaxBeatDepth;
  std::optional<std::string> parent;
  if (extend) parent = last_;
  KAKEYA_ASSIGN_OR_RETURN(std::string commit,
                          bus.make_commit(parent, parent, {{bridge::kRunnerDocFile, text}}, msg, runner_author(cfg_)));
  if (!extend && remote_) {
    // Bounded history: drop the old chain (CAS on what we saw), then create a parentless one.
    KAKEYA_ASSIGN_OR_RETURN(auto del, bus.delete_cas(ref_, *remote_));
    if (del != bridge::PushOutcome::Won) {
      remote_.reset();
      last_.clear();
      return make_error(errc::kBeatLost, "runner branch " + ref_ + " moved under us (another runner with id '" +
                                         cfg_.runner_id + "'?)");
    }
    remote_.reset();
  }
  KAKEYA_ASSIGN_OR_RETURN(auto pushed, bus.push_cas(ref_, commit, extend ? parent : std::nullopt));
  if (pushed != bridge::PushOutcome::Won) {
    last_.clear();
    return make_error(errc::kBeatLost, "runner branch " + ref_ + " moved under us (another runner with id '" +
                                       cfg_.runner_id + "'?)");
  }
  depth_ = extend ? depth_ + 1 : 1;
  last_ = commit;
  remote_ = commit;
  last_time_ = std::chrono::steady_clock::now();
  return ok_status();
}

}  // namespace kakeya::runner
