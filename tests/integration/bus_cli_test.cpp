// CLI behaviour of kakeya and kakeya-runner against a real git server on loopback: doctor checks,
// a broken catalog stopping the runner at start, --help everywhere, cancel while queued.
#include <gtest/gtest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "tests/harness/bus_world.h"

namespace kakeya::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

TEST(BusCli, ClientDoctorProbesPushPermissionInTheNamespace) {
  BusWorld world(Transport::Http);
  auto ok = world.kakeya({"doctor", "--json"});
  ASSERT_EQ(ok.exit_code, 0) << ok.out << ok.err;
  const json j = json::parse(ok.out);
  EXPECT_NE(j.dump().find("push"), std::string::npos) << j.dump(2);
  // The probe branch was cleaned up: only main remains.
  auto refs = world.bus().ls_remote("refs/heads/");
  ASSERT_TRUE(refs.ok());
  for (const auto& r : refs.value()) EXPECT_EQ(r.name, "refs/heads/main");

  auto bad = world.kakeya({"doctor"}, {{"KAKEYA_GIT_TOKEN", "not-the-password"}});
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_EQ((bad.out + bad.err).find("not-the-password"), std::string::npos);
}

TEST(BusCli, RunnerStopsAtStartOnACatalogErrorWithLineAndReason) {
  BusWorld world(Transport::GitDaemon);
  const fs::path bad = world.dir() / "bad-presets.yaml";
  std::ofstream(bad) << "version: 1\nenv_allowlist: []\npresets:\n  - name: broken-preset\n    description: d\n"
                        "    argv: [/bin/echo, \"{undeclared}\"]\n    timeout_s: 5\n";
  const fs::path cfg = world.write_runner_config("r1", {{"catalog_path", bad.string()}});
  auto r = run_cmd({(binary_dir() / "kakeya-runner").string(), "run", "--config", cfg.string()}, {}, 30);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("bad-presets.yaml:6"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("undeclared"), std::string::npos) << r.err;
}

TEST(BusCli, RunnerDoctorReportsEachCheck) {
  BusWorld world(Transport::GitDaemon);
  const fs::path cfg = world.write_runner_config("r1");
  auto r = run_cmd({(binary_dir() / "kakeya-runner").string(), "doctor", "--config", cfg.string(), "--json"}, {}, 60);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const json j = json::parse(r.out);
  EXPECT_TRUE(j["ok"].get<bool>());
  bool saw_remote = false;
  for (const auto& c : j["checks"]) saw_remote = saw_remote || c["check"] == "remote";
  EXPECT_TRUE(saw_remote);
  // Unreachable remote: doctor fails with a clear check, not a crash.
  world.stop_server();
  auto down = run_cmd({(binary_dir() / "kakeya-runner").string(), "doctor", "--config", cfg.string()}, {}, 120);
  EXPECT_EQ(down.exit_code, 1) << down.out << down.err;
  EXPECT_NE(down.out.find("FAIL remote"), std::string::npos) << down.out;
}

TEST(BusCli, EveryCommandHasHelp) {
  for (const auto& [bin, subs] : std::vector<std::pair<std::string, std::vector<std::string>>>{
           {"kakeya", {"presets", "request", "run", "wait", "status", "fetch", "cancel", "list", "doctor", "runners", "gc", "gate", "logs"}},
           {"kakeya-runner", {"run", "once", "doctor", "status"}},
           {"kakeya-engine", {"env-probe", "generate", "ar-bench", "synth", "niah-eval", "kv-quant-eval", "kv-calibrate", "specdecode-bench", "backend-parity", "perplexity", "check-model"}}}) {
    auto top = run_cmd({(binary_dir() / bin).string(), "--help"}, {}, 30);
    EXPECT_EQ(top.exit_code, 0) << bin;
    for (const auto& s : subs) {
      auto r = run_cmd({(binary_dir() / bin).string(), s, "--help"}, {}, 30);
      EXPECT_EQ(r.exit_code, 0) << bin << " " << s << ": " << r.err;
      EXPECT_NE(r.out.find("Usage"), std::string::npos) << bin << " " << s;
    }
  }
}

TEST(BusCli, CancelWhileQueuedEndsCancelledWithoutRunning) {
  BusWorld world(Transport::GitDaemon);
  auto req = world.kakeya({"request", "test-job", "--no-workload", "--json"});
  ASSERT_EQ(req.exit_code, 0) << req.err;
  const std::string branch = json::parse(req.out)["branch"];
  auto c = world.kakeya({"cancel", branch});
  ASSERT_EQ(c.exit_code, 0) << c.err;
  auto runner = world.start_runner("r1");
  auto w = world.kakeya({"wait", branch, "--wait", "60"});
  EXPECT_EQ(w.exit_code, 1) << w.out << w.err;
  const json st = json::parse(world.read_run_file(branch, ".kakeya/run/status.json"));
  EXPECT_EQ(st["state"], "cancelled") << runner->log();
  EXPECT_TRUE(world.ledger_lines().empty());
  auto again = world.kakeya({"cancel", branch});
  EXPECT_EQ(again.exit_code, 0);
  EXPECT_NE((again.out + again.err).find("already cancelled"), std::string::npos) << again.out << again.err;
}

}  // namespace
}  // namespace kakeya::testing

namespace kakeya::testing {
namespace {

// `kakeya gate FILE...` runs the same evidence rules as the runner, by hand.
TEST(GateCli, PassesAValidReportAndNamesEachViolation) {
  const std::string kakeya = (binary_dir() / "kakeya").string();
  const fs::path fixture = data_dir() / "gate" / "specdecode-bench.json";
  auto ok = run_cmd({kakeya, "gate", fixture.string()}, {}, 30);
  EXPECT_EQ(ok.exit_code, 0) << ok.out << ok.err;
  EXPECT_NE(ok.out.find("PASS"), std::string::npos);

  TempDir tmp;
  json report = json::parse(std::ifstream(fixture));
  report["model"].erase("sha256");
  const fs::path bad = tmp.path() / "no-provenance.json";
  std::ofstream(bad) << report.dump();
  auto r = run_cmd({kakeya, "gate", fixture.string(), bad.string(), "--json"}, {}, 30);
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  const json verdicts = json::parse(r.out);
  ASSERT_EQ(verdicts.size(), 2u);
  EXPECT_TRUE(verdicts[0]["passed"].get<bool>());
  EXPECT_FALSE(verdicts[1]["passed"].get<bool>());
  ASSERT_EQ(verdicts[1]["evidence_violations"].size(), 1u) << verdicts[1].dump(2);
  EXPECT_EQ(verdicts[1]["evidence_violations"][0]["code"], "PROVENANCE");

  // The committed NIAH ladder keeps arms that lose recall on purpose: the gate must say so.
  const fs::path niah = source_dir() / "bench" / "results" / "niah-vm.json";
  ASSERT_TRUE(fs::exists(niah));
  auto n = run_cmd({kakeya, "gate", niah.string()}, {}, 30);
  EXPECT_EQ(n.exit_code, 1);
  EXPECT_NE(n.out.find("RECALL_DELTA"), std::string::npos) << n.out;
  auto missing = run_cmd({kakeya, "gate", (tmp.path() / "nope.json").string()}, {}, 30);
  EXPECT_NE(missing.exit_code, 0);
  EXPECT_NE(missing.err.find("nope.json"), std::string::npos) << missing.err;
}

}  // namespace
}  // namespace kakeya::testing
