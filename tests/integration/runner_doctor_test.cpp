// `kakeya-runner doctor` with the shipped catalog and a real model (issue 13): work_dir and spool
// writable, each configured model checked by the engine, presets whose model role is not
// configured (or whose label is missing) disabled rather than failing, push permission probed
// with a branch it creates and deletes; a model the engine cannot load fails with its reason.
#include <gtest/gtest.h>

#include <fstream>

#include "tests/harness/bus_world.h"

namespace kakeya::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

json check_named(const json& doc, const std::string& name) {
  for (const auto& c : doc["checks"]) {
    if (c["check"] == name) return c;
  }
  return nullptr;
}

TEST(RunnerDoctor, ChecksModelsWithTheEngineDisablesUnconfiguredAndProbesPush) {
  BusWorld world(Transport::GitDaemon);
  const fs::path text = world.dir() / "wiki.test.raw";
  std::ofstream(text) << "some text for perplexity\n";
  const fs::path cfg = world.write_runner_config(
      "doc", {{"catalog_path", (source_dir() / "manifests/presets.yaml").string()},
              {"models", "{target: " + (models_dir() / "stories260K-f32.gguf").string() + ", ppl_text: " + text.string() + "}"}});
  auto r = run_cmd({(binary_dir() / "kakeya-runner").string(), "doctor", "--config", cfg.string(), "--json"}, {}, 300);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const json doc = json::parse(r.out);
  EXPECT_TRUE(doc["ok"].get<bool>());
  for (const char* name : {"work_dir writable", "jobs writable", "spool writable", "remote", "push kakeya/req/"}) {
    const json c = check_named(doc, name);
    ASSERT_TRUE(c.is_object()) << name << " in " << r.out;
    EXPECT_TRUE(c["ok"].get<bool>()) << c.dump();
  }
  const json target = check_named(doc, "model target");
  ASSERT_TRUE(target.is_object()) << r.out;
  EXPECT_NE(target["detail"].get<std::string>().find("llama"), std::string::npos) << target.dump();
  EXPECT_NE(check_named(doc, "model ppl_text")["detail"].get<std::string>().find("data file"), std::string::npos);
  // `draft` is not configured: the speculative preset is disabled, not a failure.
  EXPECT_TRUE(check_named(doc, "model draft")["ok"].get<bool>());
  bool spec_off = false, vulkan_off_or_on = false;
  for (const auto& d : doc["disabled_presets"]) {
    spec_off = spec_off || d["reason"].get<std::string>().find("'draft'") != std::string::npos;
  }
  EXPECT_TRUE(spec_off) << doc["disabled_presets"].dump();
  vulkan_off_or_on = check_named(doc, "vulkan").is_object();
  EXPECT_TRUE(vulkan_off_or_on) << "the catalog has a preset that needs label vulkan: " << r.out;
  // The probe branch is gone again.
  auto branches = world.bus().ls_remote("refs/heads/");
  ASSERT_TRUE(branches.ok());
  for (const auto& b : *branches) EXPECT_EQ(b.name.find("doctor-probe"), std::string::npos) << b.name;

  // A file that claims to be GGUF but is cut short: the engine's reason, exit 1.
  const fs::path broken = world.dir() / "broken.gguf";
  {
    std::ifstream in(models_dir() / "stories260K-f32.gguf", std::ios::binary);
    std::string head(4096, '\0');
    in.read(head.data(), static_cast<std::streamsize>(head.size()));
    std::ofstream(broken, std::ios::binary) << head;
  }
  const fs::path cfg2 = world.write_runner_config(
      "doc2", {{"catalog_path", (source_dir() / "manifests/presets.yaml").string()},
               {"models", "{target: " + broken.string() + "}"}});
  auto bad = run_cmd({(binary_dir() / "kakeya-runner").string(), "doctor", "--config", cfg2.string()}, {}, 300);
  EXPECT_EQ(bad.exit_code, 1) << bad.out << bad.err;
  EXPECT_NE(bad.out.find("FAIL model target: " + broken.string() + ": the engine cannot load it: gguf_"),
            std::string::npos)
      << bad.out;
  EXPECT_NE(bad.out.find("off  preset"), std::string::npos) << bad.out;
}

TEST(RunnerDoctor, EngineCheckModelSaysWhatLoads) {
  const std::string engine = (binary_dir() / "kakeya-engine").string();
  auto ok = run_cmd({engine, "check-model", "-m", (models_dir() / "stories260K-f32.gguf").string(), "--json"}, {}, 120);
  ASSERT_EQ(ok.exit_code, 0) << ok.err;
  const json j = json::parse(ok.out);
  EXPECT_EQ(j["ok"], true);
  EXPECT_EQ(j["architecture"], "llama");
  EXPECT_GT(j["n_vocab"].get<int64_t>(), 0);
  EXPECT_TRUE(j["tensor_types"].contains("f32")) << ok.out;
  TempDir tmp;
  std::ofstream(tmp.path() / "not.gguf") << "hello";
  auto no = run_cmd({engine, "check-model", "-m", (tmp.path() / "not.gguf").string(), "--json"}, {}, 60);
  EXPECT_EQ(no.exit_code, 1);
  EXPECT_EQ(json::parse(no.out)["ok"], false) << no.out;
  EXPECT_EQ(run_cmd({engine, "check-model"}, {}, 60).exit_code, 64);
}

}  // namespace
}  // namespace kakeya::testing
