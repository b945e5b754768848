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

#include "runner/agent.h"
#include "runner/cmd/commands.h"
#include "runner/cmd/common.h"

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

// Start-up shared by `run` and `once`: logging, signals, config/catalog/credentials (exit 2 on
// error), then the agent's bus and work dirs (exit 1 on error). nullptr on failure.
std::unique_ptr<Agent> start_agent(const CommonOptions& o, int& exit_code) {
  setup_logging(o);
  start_signal_thread();
  auto loaded = load_all(o);
  if (!loaded) {
    exit_code = 2;
    return nullptr;
  }
  auto agent = std::make_unique<Agent>(loaded->cfg, loaded->catalog, loaded->creds);
  if (auto st = agent->init(); !st.ok()) {
    std::cerr << "kakeya-runner: " << st.error().str() << "\n";
    exit_code = 1;
    return nullptr;
  }
  return agent;
}

}  // namespace

void add_run(CLI::App& app, int& exit_code) {
  auto* sub = app.add_subcommand("run", "Serve requests until SIGTERM (daemon)");
  auto o = std::make_shared<CommonOptions>();
  add_common_options(sub, *o);
  sub->callback([o, &exit_code] {
    auto agent = start_agent(*o, exit_code);
    if (!agent) return;
    auto st = agent->run_daemon(g_stop);
    exit_code = st.ok() ? 0 : 1;
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
    auto agent = start_agent(*o, exit_code);
    if (!agent) return;
    auto st = agent->run_once(*max_seconds, g_stop);
    if (!st.ok()) std::cerr << "kakeya-runner: " << st.error().str() << "\n";
    exit_code = st.ok() ? 0 : 1;
  });
}

}  // namespace kakeya::runner::cmd
