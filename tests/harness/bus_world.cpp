#include "tests/harness/bus_world.h"

#include <signal.h>

#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <set>
#include <thread>
#include <mutex>
#include <sstream>
#include <stdexcept>

#include "bridge/json_strict.h"

namespace kakeya::testing {

namespace fs = std::filesystem;

namespace {
constexpr const char* kUser = "agent";
constexpr const char* kPassword = "s3cret-push-token";

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

std::string RunnerProc::log() const { return file_text(log_path_); }

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
         // ASAN_OPTIONS reaches env-probe jobs so sanitizer builds of the engine run with the
         // suite's sanitizer settings (scripts/test.sh); it is unset in normal builds.
         "env_allowlist: [KAKEYA_TEST_LEDGER, KAKEYA_TEST_SECRET, ASAN_OPTIONS, VK_ICD_FILENAMES]\n"
         "presets:\n"
         "  - name: probe-backend\n"
         "    description: env-probe on a chosen engine backend (vulkan requests on hosts without a device)\n"
         "    argv: [kakeya-engine, env-probe, --backend, \"{backend}\", --threads, \"1\", --out, \"${OUT}\"]\n"
         "    params:\n"
         "      backend: {kind: enum, values: [cpu, vulkan], default: cpu}\n"
         "    env: [ASAN_OPTIONS, VK_ICD_FILENAMES]\n"
         "    timeout_s: 120\n"
         "    outputs: [report.json]\n"
         "  - name: env-probe\n"
         "    description: Describe the runner machine\n"
         "    argv: [kakeya-engine, env-probe, --out, \"${OUT}\"]\n"
         "    env: [ASAN_OPTIONS]\n"
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
         "  - name: test-idem\n"
         "    description: Idempotent integration-test job (may be re-run after a takeover)\n"
         "    argv: [" << job << ", --sleep-ms, \"{sleep_ms}\", --out-dir, \"${OUT}\"]\n"
         "    params:\n"
         "      sleep_ms: {kind: int, min: 0, max: 600000, default: 0}\n"
         "    env: [KAKEYA_TEST_LEDGER]\n"
         "    idempotent: true\n"
         "    timeout_s: 60\n"
         "    outputs: [result.json]\n"
         "  - name: test-long\n"
         "    description: Sleeps and leaves a SIGTERM-ignoring grandchild (cancel and shutdown checks)\n"
         "    argv: [" << job << ", --grandchild, --sleep-ms, \"{sleep_ms}\", --out-dir, \"${OUT}\"]\n"
         "    params:\n"
         "      sleep_ms: {kind: int, min: 0, max: 600000, default: 30000}\n"
         "    env: [KAKEYA_TEST_LEDGER]\n"
         "    timeout_s: 120\n"
         "    outputs: [grandchild.pid]\n"
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
         "  - name: test-bytes\n"
         "    description: Prints raw bytes (job output that is not UTF-8)\n"
         "    argv: [" << job << ", --print-hex, \"{hex}\"]\n"
         "    params:\n"
         "      hex: {kind: string, pattern: \"([0-9a-f]{2}){0,256}\", max_length: 512, required: true}\n"
         "    timeout_s: 30\n"
         "  - name: test-progress\n"
         "    description: Generated text on stdout, a redrawn progress line on stderr, a chosen exit code\n"
         "    argv: [" << job << ", --progress, --lines, \"0\", --exit, \"{exit}\"]\n"
         "    params:\n"
         "      exit: {kind: int, min: 0, max: 255, default: 0}\n"
         "    timeout_s: 30\n"
         "  - name: test-labelled\n"
         "    description: Needs the gpu label\n"
         "    argv: [" << job << "]\n"
         "    labels: [gpu]\n"
         "    env: [KAKEYA_TEST_LEDGER]\n"
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

std::vector<std::string> BusWorld::ledger_nonces() const {
  std::vector<std::string> out;
  for (const auto& l : ledger_lines()) out.push_back(l.substr(0, l.find(' ')));
  return out;
}

std::vector<JobSpan> BusWorld::spans() const {
  std::vector<JobSpan> out;
  std::ifstream in(ledger().string() + ".spans");
  JobSpan s;
  while (in >> s.nonce >> s.runner >> s.start_ms >> s.end_ms) out.push_back(s);
  return out;
}

bool wait_until(const std::function<bool()>& pred, double timeout_s, double step_s) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (true) {
    if (pred()) return true;
    if (std::chrono::steady_clock::now() >= end) return pred();
    std::this_thread::sleep_for(std::chrono::duration<double>(step_s));
  }
}

std::string BusWorld::request(std::vector<std::string> args, const std::map<std::string, std::string>& extra_env) {
  args.insert(args.begin(), "request");
  args.push_back("--json");
  args.push_back("--no-workload");
  auto r = kakeya(args, extra_env);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  auto j = nlohmann::json::parse(r.out, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << r.out;
  return j.is_discarded() || !j.is_object() ? "" : j.value("branch", "");
}

nlohmann::json BusWorld::status(const std::string& branch) {
  const std::string s = read_run_file(branch, ".kakeya/run/status.json");
  if (s.empty()) return nullptr;
  // The bus's own reader: a status.json that someone forged (hostile tests push 5,000-deep ones)
  // is no state at all, and is never built into a json value whose copies recurse that deep.
  auto j = bridge::parse_json_strict(s);
  return j.ok() ? std::move(j).value() : nlohmann::json(nullptr);
}

std::string BusWorld::state(const std::string& branch) {
  const auto st = status(branch);
  return st.is_object() ? st.value("state", "") : "";
}

std::map<std::string, nlohmann::json> BusWorld::wait_terminal(const std::vector<std::string>& branches,
                                                              double timeout_s) {
  static const std::set<std::string> kTerminal = {"succeeded", "failed",   "gate_failed", "timeout",
                                                  "cancelled", "rejected", "infra_error"};
  std::map<std::string, nlohmann::json> out;
  std::map<std::string, std::string> seen;  // ref -> oid already read
  for (const auto& b : branches) out[b] = nullptr;
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (true) {
    std::vector<std::string> want;
    auto refs = bus().ls_remote("refs/heads/");
    if (refs.ok()) {
      std::map<std::string, std::string> adv;
      for (const auto& r : *refs) adv[r.name] = r.oid;
      for (const auto& b : branches) {
        const std::string ref = "refs/heads/" + b;
        if (out[b].is_object() && kTerminal.count(out[b].value("state", ""))) continue;
        auto it = adv.find(ref);
        if (it != adv.end() && seen[ref] != it->second) want.push_back(ref);
      }
      auto oids = bus().fetch(want);
      if (oids.ok()) {
        for (const auto& [ref, oid] : *oids) {
          seen[ref] = oid;
          auto f = bus().read_file(oid, ".kakeya/run/status.json");
          if (f.ok() && f.value()) {
            auto j = bridge::parse_json_strict(**f);  // as in status(): forged documents are no state
            if (j.ok()) out[ref.substr(11)] = std::move(j).value();
          }
        }
      }
    }
    bool all = true;
    for (const auto& b : branches) all = all && out[b].is_object() && kTerminal.count(out[b].value("state", ""));
    if (all || std::chrono::steady_clock::now() >= end) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  for (auto& [b, st] : out) {
    if (!st.is_object() || !kTerminal.count(st.value("state", ""))) st = nullptr;
  }
  return out;
}

nlohmann::json BusWorld::wait_state(const std::string& branch, const std::string& state, double timeout_s) {
  static const std::set<std::string> kTerminal = {"succeeded", "failed",   "gate_failed", "timeout",
                                                  "cancelled", "rejected", "infra_error"};
  nlohmann::json st;
  wait_until(
      [&] {
        st = status(branch);
        if (!st.is_object()) return false;
        const std::string s = st.value("state", "");
        return state == "terminal" ? kTerminal.count(s) > 0 : s == state;
      },
      timeout_s, 0.1);
  if (!st.is_object()) return nullptr;
  const std::string s = st.value("state", "");
  return (state == "terminal" ? kTerminal.count(s) > 0 : s == state) ? st : nlohmann::json(nullptr);
}

int BusWorld::server_port() const { return daemon_ ? daemon_->port() : http_->port(); }

std::string BusWorld::remote_via(int port) const {
  std::string r = remote_;
  const std::string from = ":" + std::to_string(server_port()) + "/";
  const auto at = r.find(from);
  if (at != std::string::npos) r.replace(at, from.size(), ":" + std::to_string(port) + "/");
  return r;
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
