// `kakeya-runner run` (daemon) and `kakeya-runner once` (CI workflows).
//
// Signals (systemd: set TimeoutStopSec above shutdown_grace_s, see deploy/kakeya-runner.service):
//   SIGTERM          drain: stop claiming, let running jobs finish and publish, exit 0
//                    (bounded by shutdown_grace_s, after which jobs are cancelled).
//   2nd SIGTERM, or SIGINT   cancel running jobs, publish `cancelled`, exit 0.
#include <spdlog/spdlog.h>

#include <atomic>
#include <csignal>
#include <iostream>
#include <thread>

#include "bridge/exit_codes.h"
#include "runner/agent.h"
#include "runner/cmd/commands.h"
#include "runner/cmd/common.h"
#include "runner/metrics_server.h"
#include "runner/service_notify.h"
#include "runner/status_file.h"

namespace kakeya::runner::cmd {
namespace {

std::atomic<int> g_stop{0};

// Blocks SIGTERM/SIGINT in every thread (call before starting any) and handles them on a
// dedicated sigwait thread, so jobs and libgit2 never see them. Children get a clean mask
// from Process::spawn.
void start_signal_thread() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  std::thread([set] {
    int terms = 0;
    while (true) {
      int sig = 0;
      if (sigwait(&set, &sig) != 0) continue;
      if (sig == SIGTERM) ++terms;
      const int level = (sig == SIGINT || terms >= 2) ? 2 : 1;
      spdlog::warn("received {}: {}", sig == SIGTERM ? "SIGTERM" : "SIGINT",
                   level == 2 ? "cancelling running jobs" : "draining (finish running jobs, claim nothing new)");
      int cur = g_stop.load();
      while (cur < level && !g_stop.compare_exchange_weak(cur, level)) {
      }
    }
  }).detach();
}

// Everything a serving agent reports to: telemetry, the /metrics endpoint, systemd and the state
// file. Lives as long as the agent.
struct Serving {
  std::unique_ptr<Telemetry> telemetry;
  std::unique_ptr<MetricsServer> metrics;
  ServiceNotifier notifier;
  std::filesystem::path state_path;
  std::chrono::steady_clock::time_point last_state_write{};
  std::unique_ptr<Agent> agent;

  void write_state() {
    last_state_write = std::chrono::steady_clock::now();
    if (auto st = write_state_file(state_path, telemetry->state_json()); !st.ok()) {
      spdlog::warn("state file: {}", st.error().str());
    }
  }
};

// Start-up shared by `run` and `once`: logging, signals, config/catalog/credentials (exit 2 on
// error), the metrics endpoint (exit 2 when it cannot listen), then the agent's bus and work dirs
// (exit 1 on error). nullptr on failure.
std::unique_ptr<Serving> start_agent(const CommonOptions& o, int& exit_code) {
  setup_logging(o);
  start_signal_thread();
  auto loaded = load_all(o);
  if (!loaded) {
    exit_code = kExitConfig;
    return nullptr;
  }
  auto s = std::make_unique<Serving>();
  const RunnerConfig& cfg = loaded->cfg;
  std::vector<std::string> presets;
  for (const auto& p : loaded->catalog.presets()) presets.push_back(p.name);
  s->telemetry = std::make_unique<Telemetry>(cfg.runner_id, presets, cfg.health_poll_failure_s);
  if (cfg.metrics_listen) {
    auto address = parse_listen_address(*cfg.metrics_listen);
    auto server = address.ok() ? MetricsServer::start(*address, *s->telemetry)
                               : Result<std::unique_ptr<MetricsServer>>(address.error());
    if (!server.ok()) {
      std::cerr << "kakeya-runner: " << server.error().str() << "\n";
      exit_code = kExitConfig;
      return nullptr;
    }
    s->metrics = std::move(server).value();
    s->telemetry->set_metrics_address(s->metrics->address());
    spdlog::info("serving /metrics and /healthz on http://{}/", s->metrics->address());
  }
  s->state_path = cfg.work_dir / kStateFileName;
  s->agent = std::make_unique<Agent>(loaded->cfg, loaded->catalog, loaded->creds, *s->telemetry);
  if (auto st = s->agent->init(); !st.ok()) {
    std::cerr << "kakeya-runner: " << st.error().str() << "\n";
    exit_code = kExitFailure;
    return nullptr;
  }
  Serving* raw = s.get();
  const double kill_grace_s = cfg.kill_grace_s;
  LoopHooks hooks;
  hooks.tick = [raw] {
    raw->notifier.watchdog();
    if (std::chrono::steady_clock::now() - raw->last_state_write >= std::chrono::seconds(1)) raw->write_state();
  };
  hooks.polled = [raw](const Result<PollStats>&) {
    const std::string line = raw->telemetry->status_line();
    if (raw->telemetry->any_poll_succeeded()) raw->notifier.ready(line);
    raw->notifier.status(line);
    raw->write_state();
  };
  // systemd's stop timeout is extended to cover what is left of the drain, the kill grace and a
  // minute to publish (runner/service_notify.h).
  hooks.draining = [raw, kill_grace_s](double remaining_s) {
    raw->notifier.stopping(raw->telemetry->status_line(), remaining_s + kill_grace_s + 60);
  };
  s->agent->set_hooks(std::move(hooks));
  s->write_state();
  return s;
}

}  // namespace

void add_run(CLI::App& app, int& exit_code) {
  auto* sub = app.add_subcommand("run", "Serve requests until SIGTERM (daemon)");
  auto o = std::make_shared<CommonOptions>();
  add_common_options(sub, *o);
  sub->callback([o, &exit_code] {
    auto s = start_agent(*o, exit_code);
    if (!s) return;
    auto st = s->agent->run_daemon(g_stop);
    s->write_state();
    exit_code = st.ok() ? kExitOk : kExitFailure;
    spdlog::info("runner stopped");
  });
}

void add_once(CLI::App& app, int& exit_code) {
  auto* sub = app.add_subcommand("once", "Serve the requests pending now, wait for them, exit");
  auto o = std::make_shared<CommonOptions>();
  auto max_seconds = std::make_shared<double>(3600);
  add_common_options(sub, *o);
  sub->add_option("--max-seconds", *max_seconds, "Give up (cancel running jobs) after this long")
      ->check(CLI::PositiveNumber);
  sub->callback([o, max_seconds, &exit_code] {
    auto s = start_agent(*o, exit_code);
    if (!s) return;
    auto st = s->agent->run_once(*max_seconds, g_stop);
    s->write_state();
    if (!st.ok()) std::cerr << "kakeya-runner: " << st.error().str() << "\n";
    exit_code = st.ok() ? kExitOk : (is_remote_error(st.error().code) ? kExitRemote : kExitFailure);
  });
}

}  // namespace kakeya::runner::cmd
