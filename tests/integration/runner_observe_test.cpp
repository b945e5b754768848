// Observing a real runner (issue 13): systemd notifications on a real NOTIFY_SOCKET, /metrics and
// /healthz scraped over HTTP, the state file read by `kakeya-runner status`, job logs with stdout
// and stderr apart, workspace retention, and structured JSON log lines.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

#include "tests/harness/bus_world.h"

namespace kakeya::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// A unix datagram socket standing in for systemd's notification socket; collects messages.
class NotifySocket {
 public:
  explicit NotifySocket(fs::path path) : path_(std::move(path)) {
    fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::snprintf(a.sun_path, sizeof a.sun_path, "%s", path_.c_str());
    if (fd_ < 0 || ::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
      throw std::runtime_error("cannot bind " + path_.string());
    }
    thread_ = std::thread([this] {
      while (!stop_) {
        pollfd p{fd_, POLLIN, 0};
        if (::poll(&p, 1, 50) <= 0) continue;
        char buf[4096];
        const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
        if (n <= 0) continue;
        std::lock_guard<std::mutex> lock(mu_);
        messages_.emplace_back(buf, static_cast<std::size_t>(n));
      }
    });
  }
  ~NotifySocket() {
    stop_ = true;
    thread_.join();
    ::close(fd_);
  }
  const fs::path& path() const { return path_; }
  // Messages that contain `needle`.
  std::vector<std::string> with(const std::string& needle) const {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<std::string> out;
    for (const auto& m : messages_) {
      if (m.find(needle) != std::string::npos) out.push_back(m);
    }
    return out;
  }
  std::string all() const {
    std::lock_guard<std::mutex> lock(mu_);
    std::string out;
    for (const auto& m : messages_) out += "[" + m + "]\n";
    return out;
  }

 private:
  fs::path path_;
  int fd_ = -1;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  mutable std::mutex mu_;
  std::vector<std::string> messages_;
};

struct HttpReply {
  int status = 0;
  std::string body;
};

// GET http://<address><path> ("127.0.0.1:1234"); status 0 when nothing answered.
HttpReply http_get(const std::string& address, const std::string& path) {
  const auto colon = address.rfind(':');
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(std::stoi(address.substr(colon + 1))));
  ::inet_pton(AF_INET, address.substr(0, colon).c_str(), &a.sin_addr);
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  HttpReply r;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return r;
  }
  const std::string req = "GET " + path + " HTTP/1.1\r\nHost: " + address + "\r\n\r\n";
  (void)!::send(fd, req.data(), req.size(), MSG_NOSIGNAL);
  std::string resp;
  char buf[4096];
  ssize_t n;
  while ((n = ::recv(fd, buf, sizeof buf, 0)) > 0) resp.append(buf, static_cast<std::size_t>(n));
  ::close(fd);
  if (resp.rfind("HTTP/1.1 ", 0) != 0) return r;
  r.status = std::stoi(resp.substr(9, 3));
  const auto body = resp.find("\r\n\r\n");
  if (body != std::string::npos) r.body = resp.substr(body + 4);
  return r;
}

double sample(const std::string& text, const std::string& series) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(series + " ", 0) == 0) return std::stod(line.substr(series.size() + 1));
  }
  return -1;
}

json state_file(const fs::path& work_dir) {
  std::ifstream in(work_dir / "state.json");
  std::stringstream ss;
  ss << in.rdbuf();
  auto j = json::parse(ss.str(), nullptr, false);
  return j.is_discarded() ? json(nullptr) : j;
}

TEST(RunnerObserve, NotifyMetricsStatusLogsAndRetention) {
  BusWorld world(Transport::GitDaemon);
  TempDir sock_dir("kakeya-notify");
  NotifySocket notify(sock_dir.path() / "notify.sock");
  const fs::path work = world.dir() / "runner-r1";
  auto r1 = world.start_runner("r1", {{"metrics_listen", "\"127.0.0.1:0\""}, {"keep_failed_jobs", "1"}},
                               {{"NOTIFY_SOCKET", notify.path().string()}, {"WATCHDOG_USEC", "400000"}});
  ASSERT_TRUE(wait_until([&] { return !notify.with("READY=1").empty(); }, 30)) << notify.all() << r1->log();
  EXPECT_NE(notify.with("READY=1")[0].find("STATUS=serving: 0 running"), std::string::npos) << notify.all();
  ASSERT_TRUE(wait_until([&] { return !notify.with("WATCHDOG=1").empty(); }, 10)) << notify.all();

  // The bound address is in the state file (port 0 picked a free one).
  json st;
  ASSERT_TRUE(wait_until([&] { st = state_file(work); return st.is_object() && st["metrics_address"].is_string(); }, 10));
  const std::string address = st["metrics_address"];
  auto health = http_get(address, "/healthz");
  EXPECT_EQ(health.status, 200) << health.body;
  auto metrics = http_get(address, "/metrics");
  ASSERT_EQ(metrics.status, 200);
  EXPECT_GT(sample(metrics.body, "kakeya_runner_last_successful_poll_timestamp_seconds"), 1.7e9) << metrics.body;
  EXPECT_EQ(http_get(address, "/nope").status, 404);

  const std::string ok = world.request({"test-progress"});
  const std::string bad = world.request({"test-progress", "-p", "exit=3"});
  const auto done = world.wait_terminal({ok, bad}, 60);
  ASSERT_EQ(done.at(ok)["state"], "succeeded") << r1->log();
  ASSERT_EQ(done.at(bad)["state"], "failed") << r1->log();

  // stdout and stderr are published apart; the progress line never splices into the text.
  EXPECT_EQ(world.read_run_file(ok, ".kakeya/run/logs/stdout.log"), "generated: alpha beta\ndone\n");
  EXPECT_EQ(world.read_run_file(ok, ".kakeya/run/logs/stderr.log"), "\rprogress 50%\rprogress 100%\n");
  EXPECT_NE(world.read_run_file(ok, ".kakeya/run/logs/job.log").find("generated: alpha beta\n"), std::string::npos);

  ASSERT_TRUE(wait_until(
      [&] {
        metrics = http_get(address, "/metrics");
        // Counted when published; running and kept once the job threads are reaped and the
        // workspace swept (a later poll: under a sanitizer build, after the counts).
        return sample(metrics.body, "kakeya_runner_jobs_total{preset=\"test-progress\",state=\"failed\"}") == 1 &&
               sample(metrics.body, "kakeya_runner_jobs_total{preset=\"test-progress\",state=\"succeeded\"}") == 1 &&
               sample(metrics.body, "kakeya_runner_running_jobs") == 0 &&
               sample(metrics.body, "kakeya_runner_kept_failed_jobs") == 1;
      },
      10))
      << metrics.body;
  EXPECT_EQ(sample(metrics.body, "kakeya_runner_claim_wins_total"), 2) << metrics.body;
  EXPECT_EQ(sample(metrics.body, "kakeya_runner_claim_attempts_total"), 2);
  EXPECT_EQ(sample(metrics.body, "kakeya_runner_job_duration_seconds_count{preset=\"test-progress\"}"), 2);
  EXPECT_EQ(sample(metrics.body, "kakeya_runner_running_jobs"), 0);
  EXPECT_EQ(sample(metrics.body, "kakeya_runner_spool_depth"), 0);
  EXPECT_EQ(sample(metrics.body, "kakeya_runner_kept_failed_jobs"), 1) << metrics.body;

  // Retention: the succeeded job's directory is gone, the failed one is kept with its logs. The
  // gauge counts kept directories apart from running jobs, so it can reach 1 while the succeeded
  // job is not yet reaped and its directory not yet removed: wait for the removal.
  std::vector<fs::path> kept;
  wait_until(
      [&] {
        kept.clear();
        for (const auto& e : fs::directory_iterator(work / "jobs")) kept.push_back(e.path());
        return kept.size() == 1;
      },
      10);
  ASSERT_EQ(kept.size(), 1u);
  EXPECT_TRUE(fs::exists(kept[0] / "stdout.log"));
  EXPECT_NE(kept[0].filename().string().find(bad.substr(bad.rfind('-') + 1)), std::string::npos) << kept[0];

  // `kakeya-runner status` on the host (the state file is rewritten every second: wait for a
  // write that saw both outcomes, not one from before the jobs, whose `running` was empty too).
  ASSERT_TRUE(wait_until(
      [&] {
        st = state_file(work);
        return st.is_object() && st["running"].empty() && st["recent"].is_array() && st["recent"].size() == 2 &&
               st["disk"].is_object() && st["disk"]["kept_failed_jobs"] == 1;
      },
      10))
      << st.dump();
  const auto status_json = run_cmd({(binary_dir() / "kakeya-runner").string(), "status", "--config",
                                    r1->config().string(), "--json"});
  ASSERT_EQ(status_json.exit_code, 0) << status_json.err;
  const json sj = json::parse(status_json.out);
  EXPECT_EQ(sj["alive"], true);
  EXPECT_EQ(sj["phase"], "serving");
  EXPECT_EQ(sj["health"]["healthy"], true);
  ASSERT_EQ(sj["recent"].size(), 2u) << sj.dump();
  EXPECT_EQ(sj["disk"]["kept_failed_jobs"], 1);
  const auto status_text = run_cmd({(binary_dir() / "kakeya-runner").string(), "status", "--config",
                                    r1->config().string()});
  EXPECT_EQ(status_text.exit_code, 0);
  EXPECT_NE(status_text.out.find("health: ok"), std::string::npos) << status_text.out;
  EXPECT_NE(status_text.out.find(bad), std::string::npos) << status_text.out;

  r1->signal(SIGTERM);
  EXPECT_EQ(r1->wait().exit_code, 0) << r1->log();
  ASSERT_FALSE(notify.with("STOPPING=1").empty()) << notify.all();
  EXPECT_NE(notify.with("STOPPING=1")[0].find("EXTEND_TIMEOUT_USEC="), std::string::npos) << notify.all();
  EXPECT_EQ(state_file(work)["phase"], "stopped");
}

TEST(RunnerObserve, HealthzTurnsUnhealthyWhenPollsKeepFailing) {
  BusWorld world(Transport::GitDaemon);
  TempDir sock_dir("kakeya-notify");
  NotifySocket notify(sock_dir.path() / "notify.sock");
  const int dead_port = world.server_port();
  world.stop_server();
  auto r1 = world.start_runner("r1", {{"metrics_listen", "\"127.0.0.1:0\""}, {"health_poll_failure_s", "1"},
                                      {"remote_url", world.remote_via(dead_port)}},
                               {{"NOTIFY_SOCKET", notify.path().string()}});
  json st;
  ASSERT_TRUE(wait_until([&] { st = state_file(world.dir() / "runner-r1"); return st.is_object() && st["metrics_address"].is_string(); }, 10))
      << r1->log();
  HttpReply h;
  ASSERT_TRUE(wait_until([&] { h = http_get(st["metrics_address"], "/healthz"); return h.status == 503; }, 30))
      << h.status << " " << h.body << r1->log();
  EXPECT_NE(h.body.find("polls have failed"), std::string::npos) << h.body;
  const auto m = http_get(st["metrics_address"], "/metrics");
  EXPECT_GE(sample(m.body, "kakeya_runner_poll_errors_total{kind=\"transport\"}"), 1) << m.body;
  EXPECT_TRUE(notify.with("READY=1").empty()) << "READY only after a poll that reached the remote: " << notify.all();
  r1->signal(SIGTERM);
  EXPECT_EQ(r1->wait().exit_code, 0);
}

TEST(RunnerObserve, JsonLogLinesCarryFields) {
  BusWorld world(Transport::GitDaemon);
  const std::string b = world.request({"test-progress", "-p", "exit=2"});
  const auto cfg = world.write_runner_config("once");
  const auto r = run_cmd({(binary_dir() / "kakeya-runner").string(), "once", "--config", cfg.string(), "--log-format",
                          "json", "--max-seconds", "60"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  bool published = false;
  std::istringstream in(r.err);
  std::string line;
  while (std::getline(in, line)) {
    const json j = json::parse(line, nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << "not a JSON line: " << line;
    if (j.value("state", "") == "failed" && j.contains("duration_s")) {
      published = true;
      EXPECT_EQ(j["branch"], b);
      EXPECT_EQ(j["preset"], "test-progress");
      EXPECT_EQ(j["claim_gen"], 1);
      EXPECT_EQ(j["attempt"], 1);
      EXPECT_TRUE(j["duration_s"].is_number()) << line;
    }
  }
  EXPECT_TRUE(published) << r.err;
}

}  // namespace
}  // namespace kakeya::testing
