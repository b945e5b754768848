// `kakeya-runner status`: what the daemon on this host is doing, read from its state file
// (work_dir/state.json, runner/status_file.h): phase, health, last poll, running jobs, spool,
// disk use and recent outcomes. `--json` prints the state file itself. Exit 0 when the state
// file was read, 2 when the config cannot be read, 1 when there is no state file.
#include <sys/types.h>

#include <cerrno>
#include <csignal>
#include <iostream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "bridge/exit_codes.h"
#include "bridge/json_text.h"
#include "bridge/utf8.h"
#include "runner/cmd/commands.h"
#include "runner/cmd/common.h"
#include "runner/status_file.h"

namespace kakeya::runner::cmd {
namespace {

std::string text(const nlohmann::json& v) {
  if (v.is_string()) return bridge::printable(v.get<std::string>(), 200);
  if (v.is_null()) return "-";
  return v.dump();
}

// Whether the process that wrote the state file still runs (same host: kill(pid, 0)).
bool alive(const nlohmann::json& state) {
  if (!state.contains("pid") || !state["pid"].is_number_integer()) return false;
  const auto pid = state["pid"].get<int64_t>();
  return pid > 0 && (::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM);
}

void print_human(const nlohmann::json& s) {
  const bool running = alive(s);
  std::cout << "runner " << text(s.value("runner_id", nlohmann::json())) << " (pid " << text(s.value("pid", nlohmann::json()))
            << (running ? "" : ", not running") << "): " << text(s.value("phase", nlohmann::json())) << "\n";
  const auto health = s.value("health", nlohmann::json::object());
  std::cout << "health: " << (health.value("healthy", false) ? "ok" : "UNHEALTHY") << " — "
            << text(health.value("reason", nlohmann::json())) << "\n";
  const auto poll = s.value("last_poll", nlohmann::json::object());
  std::cout << "last poll: " << text(poll.value("at", nlohmann::json())) << " "
            << (poll.value("ok", false) ? "ok" : "failed: " + text(poll.value("error", nlohmann::json())))
            << "; last success " << text(poll.value("last_success_at", nlohmann::json())) << "\n";
  if (s.contains("metrics_address") && s["metrics_address"].is_string()) {
    std::cout << "metrics: http://" << text(s["metrics_address"]) << "/metrics\n";
  }
  const auto jobs = s.value("running", nlohmann::json::array());
  std::cout << "running: " << jobs.size() << "\n";
  for (const auto& j : jobs) {
    std::cout << "  " << text(j.value("branch", nlohmann::json())) << "  " << text(j.value("preset", nlohmann::json()))
              << "  gen " << text(j.value("claim_gen", nlohmann::json())) << "  since "
              << text(j.value("started_at", nlohmann::json())) << "\n";
  }
  const auto disk = s.value("disk", nlohmann::json::object());
  std::cout << "spool: " << text(s.value("spool_depth", nlohmann::json())) << " waiting ("
            << text(disk.value("spool_bytes", nlohmann::json())) << " bytes); kept failed jobs: "
            << text(disk.value("kept_failed_jobs", nlohmann::json())) << " ("
            << text(disk.value("jobs_bytes", nlohmann::json())) << " bytes in jobs/)\n";
  const auto recent = s.value("recent", nlohmann::json::array());
  std::cout << "recent: " << recent.size() << "\n";
  for (const auto& r : recent) {
    std::cout << "  " << text(r.value("finished_at", nlohmann::json())) << "  " << text(r.value("state", nlohmann::json()))
              << "  " << text(r.value("branch", nlohmann::json())) << "  " << text(r.value("preset", nlohmann::json()))
              << "  " << text(r.value("reason", nlohmann::json())) << "\n";
  }
  std::cout << "updated: " << text(s.value("updated_at", nlohmann::json())) << "\n";
}

}  // namespace

void add_status(CLI::App& app, int& exit_code) {
  auto* sub = app.add_subcommand("status", "Show what the runner daemon on this host is doing (its state file)");
  auto o = std::make_shared<CommonOptions>();
  auto json = std::make_shared<bool>(false);
  add_common_options(sub, *o);
  sub->add_flag("--json", *json, "Print the state file (JSON)");
  sub->callback([o, json, &exit_code] {
    auto cfg = load_runner_config(o->config_path);
    if (!cfg.ok()) {
      std::cerr << "kakeya-runner: config: " << bridge::printable(cfg.error().message) << "\n";
      exit_code = kExitConfig;
      return;
    }
    auto state = read_state_file(cfg->work_dir / kStateFileName);
    if (!state.ok()) {
      if (*json) std::cout << bridge::to_json_file({{"error", {{"code", state.error().code.str()}, {"message", state.error().message}}}});
      std::cerr << "kakeya-runner: status: " << state.error().str() << "\n";
      exit_code = kExitFailure;
      return;
    }
    state.value()["alive"] = alive(state.value());
    if (*json) {
      std::cout << bridge::to_json_file(state.value());
    } else {
      print_human(state.value());
    }
    exit_code = kExitOk;
  });
}

}  // namespace kakeya::runner::cmd
