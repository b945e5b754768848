// Fleet benchmark (issue 3; never asserted). Writes one JSON document.
//  1. Throughput of 1, 2, 4 runner processes against one smart-HTTP server (lighttpd + git
//     http-backend on loopback) with a trivial preset (`true`): requests/min end to end, and
//     request->claim latency (median, p95). Requests are pushed all at once; the observer polls
//     the remote every 50 ms, so latencies carry up to ~50 ms of observation error.
//  2. Discovery cost with K finished request branches on the remote: time and bytes of the first
//     poll (advertisement + fetch of every branch), of a steady poll (advertisement only), of
//     `gc` itself, and of a poll after `gc`. Bytes are counted by a loopback proxy.
//  3. Issue-2 measure: env-probe request->claim latency and full round trip (poll interval 1 s).
//  `gc` deletes in batches (client::kGcBatchRefs refs per push, each a CAS on its observed oid).
// Usage: kakeya_fleet_bench [--requests N] [--branches K] [--probes P] [--only SECTION,...] [--out FILE]
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <iostream>
#include <map>
#include <thread>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "bridge/catalog.h"
#include "bridge/cli_parse.h"
#include "bridge/gitbus.h"
#include "bridge/request.h"
#include "client/fleet.h"
#include "runner/agent.h"
#include "runner/config.h"
#include "runner/process.h"

// The loopback servers and proxy of the integration harness, compiled in (bench/ links no test
// libraries). Paths: the kakeya binaries live one level above this executable.
#include <unistd.h>
namespace kakeya_bench {
inline std::string exe_dir() {
  char buf[4096];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::filesystem::path(std::string(buf, static_cast<size_t>(n))).parent_path().string() : ".";
}
}  // namespace kakeya_bench
#define KAKEYA_SOURCE_DIR std::filesystem::path(kakeya_bench::exe_dir()).parent_path().parent_path()
#define KAKEYA_BINARY_DIR std::filesystem::path(kakeya_bench::exe_dir()).parent_path()
#include "tests/harness/fault_proxy.cpp"
#include "tests/harness/git_servers.cpp"
#include "tests/harness/paths.cpp"

namespace {

using namespace kakeya;
using nlohmann::json;
namespace fs = std::filesystem;
using clk = std::chrono::steady_clock;

double secs(clk::time_point a, clk::time_point b) { return std::chrono::duration<double>(b - a).count(); }

double pct(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size() - 1) + 0.5))];
}

struct World {
  testing::TempDir tmp{"kakeya-fleet-bench"};
  std::unique_ptr<testing::HttpGitServer> http;
  std::string remote;
  bridge::Credentials creds{"agent", "bench-token", "", "", "", ""};
  std::unique_ptr<bridge::GitBus> bus;
  std::vector<std::unique_ptr<runner::Process>> runners;
  std::string remote_via_proxy;  // set by the discovery measure
  int counter = 0;

  World() {
    const fs::path srv = tmp.path() / "srv";
    fs::create_directories(srv);
    if (!testing::make_bare_repo(srv, "bus.git").ok()) throw std::runtime_error("bare repo");
    http = testing::HttpGitServer::start(srv, "agent", "bench-token");
    if (!http) throw std::runtime_error("lighttpd did not start");
    remote = http->url("bus.git");
    std::ofstream(tmp.path() / "presets.yaml")
        << "version: 1\npresets:\n"
           "  - name: noop\n    description: trivial\n    argv: [true]\n    timeout_s: 30\n"
           "  - name: env-probe\n    description: probe\n    argv: [kakeya-engine, env-probe, --out, \"${OUT}\"]\n"
           "    timeout_s: 120\n    outputs: [report.json]\n";
    auto b = bridge::GitBus::open(remote, tmp.path() / "bench-cache", creds);
    if (!b.ok()) throw std::runtime_error(b.error().str());
    bus = std::make_unique<bridge::GitBus>(std::move(b).value());
  }
  ~World() {
    for (auto& r : runners) {
      ::kill(r->pid(), SIGKILL);
      r->wait();
    }
  }
  std::string config_yaml(const std::string& id, double poll_s, const std::string& url) const {
    return "remote_url: " + url + "\nrunner_id: " + id + "\nlabels: [cpu]\nwork_dir: " +
           (tmp.path() / ("runner-" + id)).string() + "\ncatalog_path: " + (tmp.path() / "presets.yaml").string() +
           "\ntool_dirs: [/bin, /usr/bin, " + testing::binary_dir().string() + "]\npoll_interval_s: " +
           std::to_string(poll_s) + "\nheartbeat_s: 5\nlease_s: 60\n";
  }
  void start_runner(const std::string& id, double poll_s) {
    const fs::path cfg = tmp.path() / ("runner-" + id + ".yaml");
    std::ofstream(cfg) << config_yaml(id, poll_s, remote);
    runner::ProcessSpec spec;
    spec.argv = {(testing::binary_dir() / "kakeya-runner").string(), "run", "--config", cfg.string()};
    spec.env = runner::current_environment();
    spec.env["KAKEYA_GIT_USERNAME"] = "agent";
    spec.env["KAKEYA_GIT_TOKEN"] = "bench-token";
    spec.timeout_s = 0;
    auto p = runner::Process::spawn(spec, [](int, std::string_view) {});
    if (!p.ok()) throw std::runtime_error(p.error().str());
    runners.push_back(std::move(p).value());
  }
  // Pushes a valid request (create-only) and returns its full ref.
  std::string push_request(const std::string& preset) {
    const std::string nonce = "bench" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
    json req{{"schema_version", 1}, {"preset", preset}, {"params", json::object()}, {"nonce", nonce},
             {"requested_by", "bench"}, {"created_at", bridge::now_rfc3339()},
             {"client", {{"name", "fleet_bench"}, {"version", "1"}}}};
    auto c = bus->make_commit(std::nullopt, std::nullopt, {{".kakeya/request.json", req.dump()}}, "request",
                              {"bench", "bench@example.invalid"});
    const std::string ref = "refs/heads/kakeya/req/" + preset + "-" + nonce;
    auto p = bus->push_cas(ref, c.value(), std::nullopt);
    if (!p.ok() || p.value() != bridge::PushOutcome::Won) throw std::runtime_error("push " + ref);
    return ref;
  }
  // Watches refs until all are terminal; records when each was first seen claimed and terminal.
  void observe(const std::map<std::string, clk::time_point>& pushed, std::map<std::string, double>& claim_s,
               std::map<std::string, double>& done_s, double timeout_s) {
    std::map<std::string, std::string> seen;
    const auto end = clk::now() + std::chrono::duration<double>(timeout_s);
    while (done_s.size() < pushed.size() && clk::now() < end) {
      auto refs = bus->ls_remote("refs/heads/kakeya/req/");
      if (!refs.ok()) continue;
      std::vector<std::string> want;
      for (const auto& r : *refs) {
        if (pushed.count(r.name) && !done_s.count(r.name) && seen[r.name] != r.oid) want.push_back(r.name);
      }
      const auto now = clk::now();
      auto oids = bus->fetch(want);
      if (oids.ok()) {
        for (const auto& [ref, oid] : *oids) {
          seen[ref] = oid;
          auto f = bus->read_file(oid, ".kakeya/run/status.json");
          if (!f.ok() || !f.value()) continue;
          auto st = bridge::parse_status(**f);
          if (!st.ok()) continue;
          if (!claim_s.count(ref)) claim_s[ref] = secs(pushed.at(ref), now);
          if (bridge::is_terminal(st->state)) done_s[ref] = secs(pushed.at(ref), now);
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
};

json throughput(int runners, int requests) {
  World w;
  for (int i = 0; i < runners; ++i) w.start_runner("t" + std::to_string(i), 0.2);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  std::map<std::string, clk::time_point> pushed;
  const auto t0 = clk::now();
  for (int i = 0; i < requests; ++i) {
    const auto t = clk::now();
    pushed[w.push_request("noop")] = t;
  }
  std::map<std::string, double> claim, done;
  w.observe(pushed, claim, done, 600);
  std::vector<double> c, d;
  for (auto& [k, v] : claim) c.push_back(v);
  for (auto& [k, v] : done) d.push_back(v);
  const double wall = secs(t0, clk::now());
  return {{"runners", runners},       {"requests", requests},
          {"completed", done.size()}, {"wall_s", wall},
          {"requests_per_min", 60.0 * static_cast<double>(done.size()) / wall},
          {"claim_latency_s", {{"median", pct(c, 0.5)}, {"p95", pct(c, 0.95)}}},
          {"round_trip_s", {{"median", pct(d, 0.5)}, {"p95", pct(d, 0.95)}}},
          {"runner_poll_interval_s", 0.2}};
}

json timed_poll(World& w, const std::string& id, testing::FaultProxy& proxy) {
  auto cfg = runner::parse_runner_config(w.config_yaml(id, 1, w.remote_via_proxy), w.tmp.path() / (id + ".yaml"));
  if (!cfg.ok()) throw std::runtime_error(cfg.error().str());
  auto cat = bridge::PresetCatalog::load_file(w.tmp.path() / "presets.yaml");
  runner::Telemetry telemetry(id, {}, 300);
  runner::Agent agent(cfg.value(), cat.value(), w.creds, telemetry);
  if (!agent.init().ok()) throw std::runtime_error("agent init");
  json polls = json::array();
  for (int i = 0; i < 3; ++i) {
    const long long b0 = proxy.bytes_to_client() + proxy.bytes_to_server();
    const auto t0 = clk::now();
    auto st = agent.poll_once();
    polls.push_back({{"seconds", secs(t0, clk::now())},
                     {"bytes", proxy.bytes_to_client() + proxy.bytes_to_server() - b0},
                     {"refs_seen", st.ok() ? st->refs_seen : -1},
                     {"fetched", st.ok() ? st->fetched : -1}});
  }
  return polls;
}

// The sections named in `only`, JSON to `out` and stdout. Throws std::runtime_error (naming the
// step) when a git server, a push or a runner fails.
int run(int requests, int branches, int probes, const std::string& out, const std::vector<std::string>& only) {
  auto wanted = [&](const char* section) { return std::find(only.begin(), only.end(), section) != only.end(); };
  spdlog::set_level(spdlog::level::warn);
  json doc{{"bench", "fleet"}, {"transport", "smart_http (lighttpd + git http-backend, loopback)"},
           {"hardware_threads", std::thread::hardware_concurrency()}};
  for (int n : {1, 2, 4}) {
    if (!wanted("throughput")) break;
    doc["throughput"].push_back(throughput(n, requests));
    std::cerr << doc["throughput"].back().dump() << "\n";
  }
  if (wanted("discovery")) {  // Discovery cost with many finished branches, before and after gc.
    World w;
    auto proxy = testing::FaultProxy::start(w.http->port());
    w.remote_via_proxy = w.remote;
    const std::string from = ":" + std::to_string(w.http->port()) + "/";
    w.remote_via_proxy.replace(w.remote_via_proxy.find(from), from.size(), ":" + std::to_string(proxy->port()) + "/");
    // One finished request commit, pointed at by `branches` refs created on the server directly.
    json st{{"state", "succeeded"}, {"reason", "exit code 0"}, {"runner_id", "bench"}, {"claim_gen", 1}, {"attempt", 1},
            {"updated_at", "2020-01-01T00:00:00Z"}};
    auto c = w.bus->make_commit(std::nullopt, std::nullopt,
                                {{".kakeya/request.json", "{}"}, {".kakeya/run/status.json", st.dump()}}, "done",
                                {"bench", "bench@example.invalid"});
    const std::string first = "refs/heads/kakeya/req/noop-bulk-0";
    if (!c.ok() || !w.bus->push_cas(first, c.value(), std::nullopt).ok()) throw std::runtime_error("seed push");
    {
      const fs::path in = w.tmp.path() / "refs.txt";
      std::ofstream f(in);
      for (int i = 1; i < branches; ++i) f << "create refs/heads/kakeya/req/noop-bulk-" << i << " " << c.value() << "\n";
      f.close();
      runner::ProcessSpec spec;
      spec.argv = {"/bin/sh", "-c", "git -C \"$1\" update-ref --stdin < \"$2\"", "sh",
                   (w.tmp.path() / "srv" / "bus.git").string(), in.string()};
      spec.env = runner::current_environment();
      auto p = runner::Process::spawn(spec, [](int, std::string_view) {});
      if (!p.ok() || p.value()->wait().exit_code != 0) throw std::runtime_error("update-ref");
    }
    json disc{{"finished_branches", branches}};
    disc["polls_before_gc"] = timed_poll(w, "d1", *proxy);
    auto gbus = bridge::GitBus::open(w.remote_via_proxy, w.tmp.path() / "gc-cache", w.creds);
    const long long b0 = proxy->bytes_to_client() + proxy->bytes_to_server();
    const auto t0 = clk::now();
    auto rep = client::gc_requests(gbus.value(), "kakeya/req", 3600, false);
    int deleted = 0;
    if (rep.ok()) {
      for (const auto& e : rep->candidates) deleted += e.outcome == "deleted" ? 1 : 0;
    }
    disc["gc"] = {{"seconds", secs(t0, clk::now())}, {"deleted", deleted}, {"refs_per_push", client::kGcBatchRefs},
                  {"bytes", proxy->bytes_to_client() + proxy->bytes_to_server() - b0}};
    disc["polls_after_gc"] = timed_poll(w, "d2", *proxy);
    doc["discovery"] = disc;
    std::cerr << disc.dump() << "\n";
  }
  if (wanted("env_probe")) {  // Issue-2 measure: env-probe, poll interval 1 s.
    World w;
    w.start_runner("p1", 1.0);
    std::vector<double> c, d;
    for (int i = 0; i < probes; ++i) {
      std::map<std::string, clk::time_point> pushed;
      const auto t = clk::now();
      pushed[w.push_request("env-probe")] = t;
      std::map<std::string, double> claim, done;
      w.observe(pushed, claim, done, 120);
      for (auto& [k, v] : claim) c.push_back(v);
      for (auto& [k, v] : done) d.push_back(v);
    }
    doc["env_probe"] = {{"runner_poll_interval_s", 1.0},
                        {"requests", probes},
                        {"claim_latency_s", {{"median", pct(c, 0.5)}, {"p95", pct(c, 0.95)}}},
                        {"round_trip_s", {{"median", pct(d, 0.5)}, {"p95", pct(d, 0.95)}}}};
  }
  std::ofstream f(out);
  f << doc.dump(2) << "\n";
  if (!f) throw std::runtime_error("cannot write " + out);
  std::cout << doc.dump(2) << std::endl;
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"kakeya fleet benchmark (JSON; never asserted)", "kakeya_fleet_bench"};
  app.footer(
      "Exit codes: 0 the JSON was written; 1 a step failed (a git server, a push, a runner, or --out could not be "
      "written: stderr names it); 64 usage: a command line that cannot be parsed.");
  int requests = 60, branches = 10000, probes = 5;
  std::string out = "fleet_bench.json";
  app.add_option("--requests", requests, "Requests per throughput run")
      ->capture_default_str()
      ->check(CLI::Range(1, 100000));
  app.add_option("--branches", branches, "Finished request branches for the discovery measure")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000000));
  app.add_option("--probes", probes, "env-probe round trips")->capture_default_str()->check(CLI::Range(1, 1000));
  app.add_option("--out", out, "Output JSON file");
  std::vector<std::string> only{"throughput", "discovery", "env_probe"};
  app.add_option("--only", only, "Sections to run (default all)")
      ->delimiter(',')
      ->check(CLI::IsMember({"throughput", "discovery", "env_probe"}));
  if (auto code = kakeya::parse_command_line(app, argc, argv)) return *code;
  try {
    return run(requests, branches, probes, out, only);
  } catch (const std::exception& e) {
    std::cerr << "fleet_bench: " << e.what() << "\n";
    return 1;
  }
}
