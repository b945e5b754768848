#pragma once
// A whole Kakeya bus on loopback for integration tests: a bare repository behind a real git
// server (git daemon, or lighttpd + git http-backend with basic auth), a test preset catalog,
// runner processes (the real kakeya-runner binary) and client invocations (the real kakeya).
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bridge/gitbus.h"
#include "runner/process.h"
#include "tests/harness/git_servers.h"
#include "tests/harness/paths.h"

namespace kakeya::testing {

enum class Transport { GitDaemon, Http };
const char* to_string(Transport t);

struct CmdResult {
  int exit_code = -1;
  std::string out, err;
  double seconds = 0;
};

// Runs argv (absolute argv[0]) to completion with the current environment plus `extra_env`.
CmdResult run_cmd(const std::vector<std::string>& argv, const std::map<std::string, std::string>& extra_env = {},
                  double timeout_s = 180, const std::filesystem::path& cwd = {});

// A kakeya-runner process; its stderr/stdout go to `log_path`.
class RunnerProc {
 public:
  RunnerProc(std::unique_ptr<runner::Process> p, std::filesystem::path log_path, std::filesystem::path config);
  ~RunnerProc();
  pid_t pid() const { return proc_->pid(); }
  void signal(int sig);
  runner::ProcessResult wait();   // blocks until it exits
  std::string log() const;
  const std::filesystem::path& config() const { return config_; }

 private:
  std::unique_ptr<runner::Process> proc_;
  std::filesystem::path log_path_, config_;
  bool waited_ = false;
};

// One execution of kakeya-test-job, from the spans file (written when the job ends).
struct JobSpan {
  std::string nonce, runner;
  long long start_ms = 0, end_ms = 0;  // wall clock, milliseconds since the epoch
};

// Polls `pred` every `step_s` until it holds or `timeout_s` passes; returns its last value.
bool wait_until(const std::function<bool()>& pred, double timeout_s, double step_s = 0.05);

class BusWorld {
 public:
  explicit BusWorld(Transport t);
  ~BusWorld();

  Transport transport() const { return transport_; }
  const std::string& remote() const { return remote_; }
  const std::filesystem::path& dir() const { return tmp_.path(); }
  std::filesystem::path ledger() const { return tmp_.path() / "ledger.txt"; }
  std::vector<std::string> ledger_lines() const;
  // Nonces in the ledger (one per started execution), in order.
  std::vector<std::string> ledger_nonces() const;
  // Finished executions (tests/helpers/test_job.cpp appends "<nonce> <runner> <start_ms> <end_ms>").
  std::vector<JobSpan> spans() const;

  // Credentials for the client and runner (HTTP only; empty for git daemon).
  std::map<std::string, std::string> auth_env() const;

  // The test catalog: env-probe (real engine) and test-job presets (kakeya-test-job).
  std::filesystem::path catalog_path() const { return tmp_.path() / "presets.yaml"; }

  // Writes runner-<id>.yaml: poll 0.2 s, heartbeat 1 s, lease 30 s unless `extra_yaml` overrides
  // (extra lines are appended; later keys are not allowed to repeat, so pass only new keys).
  std::filesystem::path write_runner_config(const std::string& id, const std::map<std::string, std::string>& overrides = {});
  std::unique_ptr<RunnerProc> start_runner(const std::string& id, const std::map<std::string, std::string>& overrides = {},
                                           const std::map<std::string, std::string>& extra_env = {});

  // Runs the kakeya client with --remote and the catalog added.
  CmdResult kakeya(std::vector<std::string> args, const std::map<std::string, std::string>& extra_env = {},
                   double timeout_s = 180, const std::filesystem::path& cwd = {});

  // A private GitBus for direct inspection and for pushing hand-made (malformed) requests.
  bridge::GitBus& bus();
  // Status/summary JSON text of a branch tip ("" when absent).
  std::string read_run_file(const std::string& branch, const std::string& path);

  // `kakeya request <args> --json --no-workload`; returns the branch ("" with a gtest failure).
  std::string request(std::vector<std::string> args, const std::map<std::string, std::string>& extra_env = {});
  // status.json of the branch tip (null when absent or unreadable).
  nlohmann::json status(const std::string& branch);
  // The state in status.json ("" when there is none yet, i.e. queued).
  std::string state(const std::string& branch);
  // Polls the remote (one ls_remote, fetches only moved branches) until every branch has a
  // terminal status or `timeout_s` passes. Returns branch -> status (null when never terminal).
  std::map<std::string, nlohmann::json> wait_terminal(const std::vector<std::string>& branches, double timeout_s);
  // Polls until the branch's status state is `state` (or any terminal state when `state` is
  // "terminal"); returns the status (null on timeout).
  nlohmann::json wait_state(const std::string& branch, const std::string& state, double timeout_s);

  // The server's TCP port, and the remote URL with another port (e.g. a FaultProxy's).
  int server_port() const;
  std::string remote_via(int port) const;

  void stop_server();
  Status restart_server();

 private:
  Transport transport_;
  TempDir tmp_{"kakeya-bus"};
  std::unique_ptr<GitDaemon> daemon_;
  std::unique_ptr<HttpGitServer> http_;
  std::string remote_;
  std::unique_ptr<bridge::GitBus> bus_;
};

}  // namespace kakeya::testing
