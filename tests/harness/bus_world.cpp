#include "tests/harness/bus_world.h"

#include <signal.h>

#include <chrono>
#include <fstream>
#include <mutex>
#include <sstream>
#include <stdexcept>

namespace kakeya::testing {

namespace fs = std::filesystem;

namespace {
constexpr const char* kUser = "agent";
constexpr const char* kPassword = "s3cret-push-token";

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}
}  // namespace

const char* to_string(Transport t) { return t == Transport::GitDaemon ? "git_daemon" : "smart_http"; }

CmdResult run_cmd(const std::vector<std::string>& argv, const std::map<std::string, std::string>& extra_env,
                  double timeout_s, const fs::path& cwd) {
  runner::ProcessSpec spec;
  spec.argv = argv;
  spec.env = runner::current_environment();
  for (const auto& [k, v] : extra_env) spec.env[k] = v;
  spec.cwd = cwd;
  spec.timeout_s = timeout_s;
  spec.kill_grace_s = 2;
  CmdResult r;
  std::mutex mu;
  auto p = runner::Process::spawn(spec, [&](int stream, std::string_view data) {
    std::lock_guard<std::mutex> lock(mu);
    (stream == 1 ? r.out : r.err).append(data);
  });
  if (!p.ok()) {
    r.err = p.error().str();
    return r;
  }
  const auto res = p.value()->wait();
  r.exit_code = res.timed_out ? 124 : res.exit_code;
  r.seconds = res.seconds;
  return r;
}

RunnerProc::RunnerProc(std::unique_ptr<runner::Process> p, fs::path log_path, fs::path config)
    : proc_(std::move(p)), log_path_(std::move(log_path)), config_(std::move(config)) {}

RunnerProc::~RunnerProc() {
  if (!waited_) {
    ::kill(proc_->pid(), SIGKILL);
    proc_->wait();
  }
}

void RunnerProc::signal(int sig) { ::kill(proc_->pid(), sig); }

runner::ProcessResult RunnerProc::wait() {
  waited_ = true;
  return proc_->wait();
}

std::string RunnerProc::log() const { return slurp(log_path_); }

BusWorld::BusWorld(Transport t) : transport_(t) {
  const fs::path srv = tmp_.path() / "srv";
  fs::create_directories(srv);
  auto repo = make_bare_repo(srv, "bus.git");
  if (!repo.ok()) throw std::runtime_error("make_bare_repo: " + repo.error().str());
  if (t == Transport::GitDaemon) {
    daemon_ = GitDaemon::start(srv);
    if (!daemon_) throw std::runtime_error("git daemon did not start");
    remote_ = daemon_->url("bus.git");
  } else {
    http_ = HttpGitServer::start(srv, kUser, kPassword);
    if (!http_) throw std::runtime_error("lighttpd did not start");
    remote_ = http_->url("bus.git");
  }
  const std::string job = (binary_dir() / "kakeya-test-job").string();
  std::ofstream cat(catalog_path());
  cat << "version: 1\n"
         "env_allowlist: [KAKEYA_TEST_LEDGER, KAKEYA_TEST_SECRET]\n"
         "presets:\n"
         "  - name: env-probe\n"
         "    description: Describe the runner machine\n"
         "    argv: [kakeya-engine, env-probe, --out, \"${OUT}\"]\n"
         "    timeout_s: 120\n"
         "    outputs: [report.json]\n"
         "  - name: test-job\n"
         "    description: Integration-test job (ledger, log lines, sleep, exit code)\n"
         "    argv: [" << job << ", --sleep-ms, \"{sleep_ms}\", --exit, \"{exit}\", --lines, \"{lines}\", --echo, \"{message}\", --out-dir, \"${OUT}\"]\n"
         "    params:\n"
         "      sleep_ms: {kind: int, min: 0, max: 600000, default: 0}\n"
         "      exit: {kind: int, min: 0, max: 255, default: 0}\n"
         "      lines: {kind: int, min: 0, max: 100000, default: 1}\n"
         "      message: {kind: string, pattern: \"[ -~]*\", max_length: 200, default: hi}\n"
         "    env: [KAKEYA_TEST_LEDGER]\n"
         "    timeout_s: 60\n"
         "    outputs: [result.json]\n"
         "  - name: test-timeout\n"
         "    description: Sleeps past its 1 s timeout and leaves a SIGTERM-ignoring grandchild\n"
         "    argv: [" << job << ", --grandchild, --sleep-ms, \"30000\", --out-dir, \"${OUT}\"]\n"
         "    env: [KAKEYA_TEST_LEDGER]\n"
         "    timeout_s: 1\n"
         "    outputs: [grandchild.pid]\n"
         "  - name: test-secret\n"
         "    description: Prints an allow-listed secret env value (must be redacted) and the git token (must be unset)\n"
         "    argv: [" << job << ", --print-env, KAKEYA_TEST_SECRET, --print-env, KAKEYA_GIT_TOKEN]\n"
         "    env: [KAKEYA_TEST_SECRET]\n"
         "    timeout_s: 30\n"
         "  - name: test-labelled\n"
         "    description: Needs the gpu label\n"
         "    argv: [" << job << "]\n"
         "    labels: [gpu]\n"
         "    timeout_s: 30\n";
}

BusWorld::~BusWorld() = default;

std::vector<std::string> BusWorld::ledger_lines() const {
  std::vector<std::string> lines;
  std::ifstream in(ledger());
  for (std::string l; std::getline(in, l);) {
    if (!l.empty()) lines.push_back(l);
  }
  return lines;
}

std::map<std::string, std::string> BusWorld::auth_env() const {
  if (transport_ != Transport::Http) return {};
  return {{"KAKEYA_GIT_USERNAME", kUser}, {"KAKEYA_GIT_TOKEN", kPassword}};
}

fs::path BusWorld::write_runner_config(const std::string& id, const std::map<std::string, std::string>& overrides) {
  std::map<std::string, std::string> kv{
      {"remote_url", remote_},
      {"runner_id", id},
      {"branch_patterns", "[\"kakeya/req/**\"]"},
      {"labels", "[cpu]"},
      {"work_dir", (tmp_.path() / ("runner-" + id)).string()},
      {"catalog_path", catalog_path().string()},
      {"tool_dirs", "[" + binary_dir().string() + "]"},
      {"poll_interval_s", "0.2"},
      {"heartbeat_s", "1"},
      {"lease_s", "30"},
      {"kill_grace_s", "1"},
      {"secret_env", "[KAKEYA_TEST_SECRET]"},
  };
  for (const auto& [k, v] : overrides) kv[k] = v;
  const fs::path p = tmp_.path() / ("runner-" + id + ".yaml");
  std::ofstream out(p);
  for (const auto& [k, v] : kv) out << k << ": " << v << "\n";
  return p;
}

std::unique_ptr<RunnerProc> BusWorld::start_runner(const std::string& id, const std::map<std::string, std::string>& overrides,
                                                   const std::map<std::string, std::string>& extra_env) {
  const fs::path cfg = write_runner_config(id, overrides);
  const fs::path log = tmp_.path() / ("runner-" + id + ".log");
  runner::ProcessSpec spec;
  spec.argv = {(binary_dir() / "kakeya-runner").string(), "run", "--config", cfg.string(), "--log-format", "text",
               "--log-level", "debug"};
  spec.env = runner::current_environment();
  for (const auto& [k, v] : auth_env()) spec.env[k] = v;
  spec.env["KAKEYA_TEST_LEDGER"] = ledger().string();
  for (const auto& [k, v] : extra_env) spec.env[k] = v;
  spec.timeout_s = 0;
  auto file = std::make_shared<std::ofstream>(log, std::ios::app);
  auto mu = std::make_shared<std::mutex>();
  auto p = runner::Process::spawn(spec, [file, mu](int, std::string_view data) {
    std::lock_guard<std::mutex> lock(*mu);
    file->write(data.data(), static_cast<std::streamsize>(data.size()));
    file->flush();
  });
  if (!p.ok()) throw std::runtime_error("cannot start kakeya-runner: " + p.error().str());
  return std::make_unique<RunnerProc>(std::move(p).value(), log, cfg);
}

CmdResult BusWorld::kakeya(std::vector<std::string> args, const std::map<std::string, std::string>& extra_env,
                           double timeout_s, const fs::path& cwd) {
  std::vector<std::string> argv{(binary_dir() / "kakeya").string()};
  argv.insert(argv.end(), args.begin(), args.end());
  std::map<std::string, std::string> env = auth_env();
  env["KAKEYA_REMOTE"] = remote_;
  env["KAKEYA_CATALOG"] = catalog_path().string();
  env["XDG_CACHE_HOME"] = (tmp_.path() / "client-cache").string();
  for (const auto& [k, v] : extra_env) env[k] = v;
  return run_cmd(argv, env, timeout_s, cwd);
}

bridge::GitBus& BusWorld::bus() {
  if (!bus_) {
    bridge::Credentials creds;
    if (transport_ == Transport::Http) {
      creds.username = kUser;
      creds.token = kPassword;
    }
    auto b = bridge::GitBus::open(remote_, tmp_.path() / "inspect-cache", creds);
    if (!b.ok()) throw std::runtime_error("GitBus::open: " + b.error().str());
    bus_ = std::make_unique<bridge::GitBus>(std::move(b).value());
  }
  return *bus_;
}

std::string BusWorld::read_run_file(const std::string& branch, const std::string& path) {
  const std::string ref = "refs/heads/" + branch;
  auto oids = bus().fetch({ref});
  if (!oids.ok() || !oids->count(ref)) return "";
  auto f = bus().read_file(oids->at(ref), path);
  return (f.ok() && f.value()) ? *f.value() : "";
}

void BusWorld::stop_server() {
  if (daemon_) daemon_->stop();
  if (http_) http_->stop();
}

Status BusWorld::restart_server() {
  if (daemon_) return daemon_->restart();
  return http_->restart();
}

}  // namespace kakeya::testing
