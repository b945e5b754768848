#include "runner/job.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <future>
#include <sstream>
#include <thread>

#include "bridge/branch.h"
#include "bridge/gate.h"
#include "bridge/json_strict.h"
#include "bridge/json_text.h"
#include "bridge/layout.h"
#include "bridge/limits.h"
#include "bridge/report_envelope.h"
#include "bridge/summary.h"
#include "bridge/utf8.h"
#include "bridge/version.h"
#include "runner/job_output.h"
#include "runner/log_fields.h"
#include "runner/process.h"
#include "runner/publish.h"

namespace kakeya::runner {

namespace fs = std::filesystem;
using bridge::RunState;

namespace {

constexpr size_t kHeartbeatTailBytes = 2048;
constexpr uintmax_t kMaxResultBytes = 16u << 20;  // larger declared outputs are listed, not committed

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Values of the configured secret environment names, plus the git token, for redaction.
std::vector<std::string> secret_values(const RunnerConfig& cfg) {
  std::vector<std::string> out;
  for (const auto& name : cfg.secret_env) {
    if (const char* v = std::getenv(name.c_str()); v != nullptr && *v != '\0') out.emplace_back(v);
  }
  for (const char* name : {"KAKEYA_GIT_TOKEN", "KAKEYA_GIT_PASSWORD"}) {
    if (const char* v = std::getenv(name); v != nullptr && *v != '\0') out.emplace_back(v);
  }
  return out;
}

}  // namespace

const char* to_string(JobEnd e) {
  switch (e) {
    case JobEnd::ClaimLost: return "claim_lost";
    case JobEnd::Published: return "published";
    case JobEnd::Fenced: return "fenced";
    case JobEnd::Spooled: return "spooled";
    case JobEnd::Gone: return "gone";
  }
  return "unknown";
}

bridge::CommitAuthor runner_author(const RunnerConfig& cfg) {
  return cfg.identity;
}

Job::Job(const RunnerConfig& cfg, JobRequest req, std::unique_ptr<bridge::GitBus> bus, fs::path job_dir,
         fs::path spool_dir, Telemetry& telemetry)
    : cfg_(cfg), req_(std::move(req)), telemetry_(telemetry), bus_(std::move(bus)), dir_(std::move(job_dir)),
      spool_dir_(std::move(spool_dir)) {
  info_ = RunningJob{std::string(bridge::strip_heads_prefix(req_.view.ref)), req_.preset->name, req_.claim_gen,
                     req_.attempt, bridge::now_rfc3339()};
}

void Job::cancel(const std::string& reason) {
  std::lock_guard<std::mutex> lock(cancel_mu_);
  cancel_reason_ = reason;
  cancel_requested_ = true;
}

// Pushes `st` as the new status on top of tip_ (CAS); tip_ and status_ are updated when it won.
Job::Push Job::push_status(bridge::RunStatus st, const std::string& what) {
  st.updated_at = bridge::now_rfc3339();
  auto commit = make_runner_commit(*bus_, tip_, {status_change(st)}, what, runner_author(cfg_));
  if (!commit.ok()) {
    spdlog::warn("{}: cannot build {} commit: {}", shown_ref(), what, commit.error().str());
    return Push::Failed;
  }
  auto pushed = bus_->push_cas(ref(), commit.value(), tip_);
  if (!pushed.ok()) {
    ScopedLogFields f{{"error_code", pushed.error().code.str()}};
    spdlog::warn("{}: {} push failed: {}", shown_ref(), what, pushed.error().str());
    return Push::Failed;
  }
  if (pushed.value() != bridge::PushOutcome::Won) return Push::Lost;
  tip_ = commit.value();
  status_ = std::move(st);
  return Push::Won;
}

JobEnd Job::run() {
  ScopedLogFields fields{{"branch", info_.branch},
                         {"preset", info_.preset},
                         {"claim_gen", info_.claim_gen},
                         {"attempt", info_.attempt}};
  std::string what;
  try {
    return run_unguarded();
  } catch (const std::exception& e) {
    what = e.what();
  } catch (...) {
    what = "unknown exception";
  }
  spdlog::error("{}: internal error in the job: {}", shown_ref(), bridge::printable(what, 512));
  if (!claimed_) return JobEnd::ClaimLost;  // nothing of ours on the branch: the next poll decides
  try {
    return finish(RunState::InfraError, "the runner failed while running this job (internal error: " + what + ")",
                  {}, std::nullopt, "");
  } catch (...) {
    // Nothing published: the claim stays ours and is resolved as a stale claim (takeover rule,
    // at most kMaxAttempts) by this runner's next poll.
    spdlog::error("{}: internal error while publishing the failure", shown_ref());
    return JobEnd::Fenced;
  }
}

std::string Job::shown_ref() const {
  return bridge::printable(bridge::strip_heads_prefix(ref()), bridge::kMaxBranchNameBytes);
}

JobEnd Job::run_unguarded() {
  tip_ = req_.view.tip;
  const auto& preset = *req_.preset;
  std::error_code ec;
  fs::create_directories(dir_, ec);

  // 0. This job's own cache must hold the observed tip; if the branch moved since discovery,
  //    the observation is stale and someone else acted first.
  {
    auto oids = bus_->fetch({ref()});
    if (!oids.ok()) {
      spdlog::warn("{}: fetch before claim failed: {}", shown_ref(), oids.error().str());
      return JobEnd::ClaimLost;
    }
    auto it = oids->find(ref());
    if (it == oids->end() || it->second != req_.view.tip) {
      spdlog::info("{}: tip moved before claim; leaving it to the next poll", shown_ref());
      return JobEnd::ClaimLost;
    }
  }

  // 1. Claim by compare-and-swap on the observed tip.
  bridge::RunStatus claim;
  claim.state = RunState::Claimed;
  claim.runner_id = cfg_.runner_id;
  claim.labels = cfg_.labels;
  claim.claim_gen = req_.claim_gen;
  claim.attempt = req_.attempt;
  claim.reason = req_.takeover_note.empty() ? "claimed by " + cfg_.runner_id : req_.takeover_note;
  telemetry_.claim_attempted();
  const Push claimed = push_status(claim, "claim " + preset.name + " (gen " + std::to_string(req_.claim_gen) + ")");
  if (claimed != Push::Won) {
    if (claimed == Push::Lost) telemetry_.claim_lost();
    spdlog::info("{}: claim {}", shown_ref(), claimed == Push::Lost ? "lost" : "not pushed");
    return JobEnd::ClaimLost;
  }
  telemetry_.claim_won();
  claimed_ = true;
  spdlog::info("{}: claimed (gen {}, attempt {})", shown_ref(), req_.claim_gen, req_.attempt);

  // 2. Prepare: validate again against the installed catalog, resolve models and argv.
  const fs::path out_dir = dir_ / "out";
  fs::remove_all(out_dir, ec);
  fs::create_directories(out_dir, ec);
  std::string prep_error;
  std::vector<std::string> argv;
  auto params = bridge::validate_params(preset, req_.params);
  if (!params.ok()) prep_error = "invalid params: " + params.error().message;
  bridge::ArgvContext actx;
  if (prep_error.empty()) {
    actx.params = &params.value();
    actx.out_dir = out_dir.string();
    for (const auto& name : preset.env) {
      if (const char* v = std::getenv(name.c_str()); v != nullptr) actx.env[name] = v;
    }
    for (const auto& role : preset.models) {
      auto p = resolve_model(cfg_, role);
      if (!p.ok()) {
        prep_error = p.error().message;
        break;
      }
      actx.models[role] = p.value().string();
    }
  }
  if (prep_error.empty()) {
    auto resolved = bridge::resolve_argv(preset, actx);
    if (resolved.ok()) {
      argv = std::move(resolved).value();
    } else {
      prep_error = resolved.error().message;
    }
  }
  if (prep_error.empty() && argv[0].find('/') == std::string::npos) {
    std::vector<fs::path> dirs = cfg_.tool_dirs;
    dirs.push_back(self_exe_dir());
    auto prog = resolve_program(argv[0], dirs);
    if (prog.ok()) {
      argv[0] = prog.value().string();
    } else {
      prep_error = prog.error().message;
    }
  }
  if (!prep_error.empty()) {
    return finish(RunState::InfraError, "runner could not prepare the job: " + prep_error, {}, std::nullopt, "");
  }

  // 3. Announce `running` BEFORE the command starts: from here on a takeover must assume the
  //    command may have run (re-run only if the preset is idempotent).
  bridge::RunStatus running = status_;
  running.state = RunState::Running;
  running.started_at = bridge::now_rfc3339();
  running.heartbeat_seq = 1;
  running.reason = "running";
  if (push_status(running, "running " + preset.name) != Push::Won) {
    auto view = fetch_branch_view(*bus_, ref());
    if (view.ok() && view->cancel_requested && view->status && view->status->claim_gen == req_.claim_gen) {
      tip_ = view->tip;
      return finish(RunState::Cancelled, "cancelled by client before the command started", argv, std::nullopt, "");
    }
    spdlog::warn("{}: lost the branch before starting; not running", shown_ref());
    telemetry_.fenced();
    return JobEnd::Fenced;
  }

  // 4. Execute: argv only, own process group, allow-listed environment, timeout enforced.
  auto output = JobOutput::create(dir_, cfg_.log_cap_bytes, secret_values(cfg_));
  if (!output.ok()) {
    return finish(RunState::InfraError, "cannot create job log: " + output.error().message, argv, std::nullopt, "");
  }
  JobOutput& jo = *output.value();
  JobLog& jl = jo.combined();
  const std::string started_at = status_.started_at;
  ProcessSpec spec;
  spec.argv = argv;
  spec.env = build_job_environment(preset.env, {{"KAKEYA_OUT", out_dir.string()},
                                                {"KAKEYA_RUN_BRANCH", std::string(bridge::strip_heads_prefix(ref()))},
                                                {"KAKEYA_RUNNER_ID", cfg_.runner_id},
                                                {"KAKEYA_PRESET", preset.name},
                                                {"KAKEYA_NONCE", req_.manifest.nonce},
                                                {"KAKEYA_ATTEMPT", std::to_string(req_.attempt)}});
  spec.cwd = dir_;
  spec.timeout_s = static_cast<double>(preset.timeout_s);
  spec.kill_grace_s = cfg_.kill_grace_s;
  auto proc = Process::spawn(spec, [&jo](int stream, std::string_view data) { jo.write(stream, data); });
  if (!proc.ok()) {
    jo.close();
    return finish(RunState::Failed, "spawn failed: " + proc.error().message, argv, std::nullopt,
                  read_file(jl.path()));
  }
  command_started_ = true;
  Process& p = *proc.value();
  std::promise<ProcessResult> done;
  auto done_f = done.get_future();
  std::thread waiter([&p, &done] { done.set_value(p.wait()); });
  // If anything below throws, stop the command and join the waiter before they are destroyed.
  struct StopOnUnwind {
    std::thread& waiter;
    Process& process;
    ~StopOnUnwind() {
      if (waiter.joinable()) {
        process.cancel();
        waiter.join();
      }
    }
  } stop_on_unwind{waiter, p};

  // 5. Heartbeats until the process ends; watch for client cancel and fencing.
  bool fenced = false;
  std::string cancel_reason;
  const auto t0 = std::chrono::steady_clock::now();
  auto next_beat = t0 + std::chrono::duration<double>(cfg_.heartbeat_s);
  while (done_f.wait_for(std::chrono::milliseconds(100)) != std::future_status::ready) {
    if (cancel_requested_ && cancel_reason.empty()) {
      std::lock_guard<std::mutex> lock(cancel_mu_);
      cancel_reason = cancel_reason_;
      p.cancel();
    }
    if (std::chrono::steady_clock::now() < next_beat || !cancel_reason.empty()) continue;
    next_beat += std::chrono::duration<double>(cfg_.heartbeat_s);
    bridge::RunStatus beat = status_;
    beat.heartbeat_seq += 1;
    beat.log_tail = jl.tail(kHeartbeatTailBytes);
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    beat.progress = {{"elapsed_s", elapsed}, {"log_bytes", jl.bytes_written()},
                     {"timeout_s", preset.timeout_s}};
    const Push beat_push = push_status(beat, "heartbeat " + std::to_string(beat.heartbeat_seq));
    if (beat_push == Push::Won) continue;
    if (beat_push == Push::Lost) telemetry_.heartbeat_conflict();
    // Rejected (or failed) heartbeat: refetch and find out why.
    auto view = fetch_branch_view(*bus_, ref());
    if (!view.ok()) {
      spdlog::warn("{}: heartbeat refetch failed: {}", shown_ref(), view.error().str());
      continue;  // network trouble: keep running, try again next beat
    }
    const auto& st = view->status;
    if (!st || st->claim_gen != req_.claim_gen || st->runner_id != cfg_.runner_id) {
      spdlog::warn("{}: fenced (claim_gen {} by {}), killing the job", shown_ref(), st ? st->claim_gen : 0,
                   st ? st->runner_id : "?");
      fenced = true;
      telemetry_.fenced();
      p.cancel();
      break;
    }
    tip_ = view->tip;  // moved by client commits only
    if (view->cancel_requested) {
      cancel_reason = "cancelled by client";
      p.cancel();
    }
  }
  ProcessResult result = done_f.get();
  waiter.join();
  jo.close();
  if (fenced) return JobEnd::Fenced;

  // A cancel that arrived while we were not heartbeating is still honoured.
  if (cancel_reason.empty() && cancel_requested_) {
    std::lock_guard<std::mutex> lock(cancel_mu_);
    cancel_reason = cancel_reason_;
  }

  // 6. Results, gate verdict, summary.
  bridge::CommandOutcome command;
  command.exit_code = result.exit_code;
  command.term_signal = result.term_signal;
  command.duration_s = result.seconds;
  command.started_at = started_at;
  command.log = bridge::LogStats{jl.bytes_written(), jl.bytes_dropped(), jl.truncated(), cfg_.log_cap_bytes};
  RunState state;
  std::string reason;
  if (!result.started) {
    state = RunState::Failed;
    reason = "spawn failed: " + result.spawn_error;
  } else if (!cancel_reason.empty() || result.cancelled) {
    state = RunState::Cancelled;
    reason = cancel_reason.empty() ? "cancelled" : cancel_reason;
  } else if (result.timed_out) {
    state = RunState::Timeout;
    reason = "exceeded timeout_s=" + std::to_string(preset.timeout_s) + "; process group terminated";
  } else if (result.exit_code == 0) {
    state = RunState::Succeeded;
    reason = "exit code 0";
  } else {
    state = RunState::Failed;
    reason = result.term_signal != 0 ? "killed by signal " + std::to_string(result.term_signal)
                                     : "exit code " + std::to_string(result.exit_code);
  }
  return finish(state, reason, argv, command, read_file(jl.path()));
}

JobEnd Job::finish(RunState state, const std::string& reason, std::vector<std::string> argv,
                   std::optional<bridge::CommandOutcome> command, const std::string& log_text) {
  const auto& preset = *req_.preset;
  const fs::path out_dir = dir_ / "out";
  std::vector<bridge::FileChange> changes;

  bridge::ClaimedRun run;
  run.preset = preset.name;
  run.params = req_.params;
  run.nonce = req_.manifest.nonce;
  run.runner_labels = cfg_.labels;
  run.claim_gen = status_.claim_gen;
  run.attempt = status_.attempt;
  run.argv = std::move(argv);
  run.command = std::move(command);

  // Declared outputs only: nothing else under ${OUT} is committed.
  for (const auto& rel : preset.outputs) {
    const fs::path f = out_dir / rel;
    std::error_code ec;
    if (!fs::is_regular_file(f, ec)) {
      run.missing_outputs.push_back(rel);
      continue;
    }
    const auto size = fs::file_size(f, ec);
    const bool committed = size <= kMaxResultBytes;
    run.outputs.push_back(bridge::OutputFile{rel, size, committed});
    if (committed) changes.push_back({std::string(bridge::kResultsDir) + rel, read_file(f)});
  }

  // Evidence gate over the declared reports (only when the command itself succeeded).
  nlohmann::json gate{{"passed", true}, {"reports", nlohmann::json::object()}};
  if (preset.gate.empty()) gate["note"] = "preset declares no evidence rules";
  if (state == RunState::Succeeded) {
    for (const auto& [rel, rules] : preset.gate) {
      auto refused = [&path = rel](const char* code, const std::string& message) {
        return nlohmann::json{{"passed", false},
                              {"evidence_violations", {{{"code", code}, {"message", message}, {"path", path}}}}};
      };
      nlohmann::json verdict;
      std::error_code ec;
      const fs::path f = out_dir / rel;
      if (!fs::is_regular_file(f, ec)) {
        verdict = refused("REPORT_MISSING", "declared report " + rel + " was not written");
      } else if (auto parsed = bridge::parse_json_strict(read_file(f)); !parsed.ok()) {
        verdict = refused("REPORT_INVALID", "report " + rel + " is not valid JSON: " + parsed.error().message);
      } else if (auto envelope = bridge::read_report_envelope(*parsed); !envelope.ok()) {
        verdict = refused("REPORT_INVALID", "report " + rel + " has no valid report envelope: " + envelope.error().message);
      } else {
        verdict = bridge::evaluate_gate(*parsed, rules).to_json();
      }
      if (!verdict.value("passed", false)) gate["passed"] = false;
      gate["reports"][rel] = verdict;
    }
    if (!gate["passed"].get<bool>()) state = RunState::GateFailed;
  } else if (!preset.gate.empty()) {
    gate["passed"] = nullptr;
    gate["note"] = "not evaluated: the command did not succeed";
  }

  bridge::RunStatus st = status_;
  st.state = state;
  st.reason = state == RunState::GateFailed ? "evidence gate failed (see gate.json)"
                                             : bridge::printable(reason, bridge::kMaxReasonBytes);
  st.updated_at = bridge::now_rfc3339();
  // job.log is well-formed UTF-8 (LogFilter); its tail starts on a character boundary.
  st.log_tail = std::string(bridge::utf8_tail(log_text, kHeartbeatTailBytes));

  if (gate["passed"].is_boolean()) run.gate_passed = gate["passed"].get<bool>();
  bridge::RunSummary summary;
  summary.state = state;
  summary.reason = st.reason;
  summary.runner_id = cfg_.runner_id;
  summary.request_commit = req_.view.tip;
  summary.finished_at = st.updated_at;
  summary.engine_version = engine_version();
  summary.run = std::move(run);

  changes.push_back(status_change(st));
  changes.push_back({std::string(bridge::kSummaryPath), bridge::summary_json_text(summary)});
  changes.push_back({std::string(bridge::kLogsDir) + JobOutput::kCombinedFile, log_text});
  // stdout and stderr apart, when the command ran (runner/job_output.h).
  for (const char* stream_file : {JobOutput::kStdoutFile, JobOutput::kStderrFile}) {
    std::error_code ec;
    if (summary.run->command && fs::is_regular_file(dir_ / stream_file, ec)) {
      changes.push_back({std::string(bridge::kLogsDir) + stream_file, read_file(dir_ / stream_file)});
    }
  }
  changes.push_back({std::string(bridge::kGatePath), bridge::to_json_file(gate)});

  FinalPublish pub;
  pub.ref = ref();
  pub.runner_id = cfg_.runner_id;
  pub.claim_gen = status_.claim_gen;
  pub.tip = tip_;
  pub.what = bridge::to_string(state) + std::string(" ") + preset.name;
  pub.changes = std::move(changes);
  JobOutcome outcome{info_.branch, preset.name, bridge::to_string(state), st.reason, st.updated_at, std::nullopt};
  if (summary.run && summary.run->command) outcome.duration_s = summary.run->command->duration_s;
  ScopedLogFields fields{{"state", outcome.state},
                         {"duration_s", outcome.duration_s ? nlohmann::json(*outcome.duration_s) : nlohmann::json()}};
  switch (publish_final(*bus_, pub, runner_author(cfg_), cfg_.publish_retry_s)) {
    case PublishOutcome::Published:
      spdlog::info("{}: published {} ({})", shown_ref(), bridge::to_string(state), st.reason);
      final_state_ = state;
      telemetry_.job_finished(outcome);
      return JobEnd::Published;
    case PublishOutcome::Fenced:
      telemetry_.fenced();
      return JobEnd::Fenced;
    case PublishOutcome::Gone:
      return JobEnd::Gone;
    case PublishOutcome::RetryLater:
      break;
  }
  auto spooled = spool_write(spool_dir_, pub);
  if (!spooled.ok()) spdlog::error("{}: cannot spool result: {}", shown_ref(), spooled.error().str());
  spdlog::warn("{}: remote unreachable; result spooled in {}", shown_ref(), spool_dir_.string());
  final_state_ = state;
  telemetry_.job_finished(outcome);
  return JobEnd::Spooled;
}

}  // namespace kakeya::runner
