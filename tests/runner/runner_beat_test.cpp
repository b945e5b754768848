// runner.json offers only the presets this runner can run: every required label present and
// every model role resolvable (preset_runnable), the rule the runner also claims by.
#include "runner/runner_beat.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

#include "tests/harness/paths.h"

namespace kakeya::runner {
namespace {

bridge::PresetCatalog three_presets() {
  const char* yaml =
      "version: 1\n"
      "presets:\n"
      "  - name: plain\n"
      "    description: d\n"
      "    argv: [/bin/true]\n"
      "    timeout_s: 10\n"
      "  - name: on-gpu\n"
      "    description: d\n"
      "    argv: [/bin/true]\n"
      "    timeout_s: 10\n"
      "    labels: [vulkan]\n"
      "  - name: with-model\n"
      "    description: d\n"
      "    argv: [/bin/true, \"${MODEL:target}\"]\n"
      "    timeout_s: 10\n"
      "    models: [target]\n";
  auto c = bridge::PresetCatalog::load_string(yaml, "three.yaml");
  EXPECT_TRUE(c.ok()) << c.error().str();
  return c.value();
}

TEST(RunnerDocument, OffersOnlyThePresetsThisRunnerCanRun) {
  const bridge::PresetCatalog catalog = three_presets();
  testing::TempDir tmp("runner-beat");
  RunnerConfig cfg;
  cfg.runner_id = "r1";
  cfg.labels = {"cpu"};
  // No ~/.kakeya/models/target either: HOME is an empty directory for this test.
  const char* old_home = std::getenv("HOME");
  const std::string saved_home = old_home ? old_home : "";
  setenv("HOME", tmp.path().c_str(), 1);

  const bridge::RunnerDoc bare = runner_document(cfg, catalog, {}, "serving");
  EXPECT_EQ(bare.presets, std::vector<std::string>{"plain"});
  std::string why;
  EXPECT_FALSE(preset_runnable(cfg, *catalog.find("on-gpu"), &why));
  EXPECT_EQ(why, "runner lacks label 'vulkan'");
  EXPECT_FALSE(preset_runnable(cfg, *catalog.find("with-model"), &why));
  EXPECT_NE(why.find("model role 'target'"), std::string::npos) << why;

  // The label and the model file make both runnable, and runner.json then offers all three.
  cfg.labels.push_back("vulkan");
  const auto model = tmp.path() / "target.gguf";
  std::ofstream(model) << "GGUF";
  cfg.models["target"] = model;
  const bridge::RunnerDoc full = runner_document(cfg, catalog, {}, "serving");
  EXPECT_EQ(full.presets, (std::vector<std::string>{"plain", "on-gpu", "with-model"}));
  // The digest is the installed catalog's, whatever this host can run of it.
  EXPECT_EQ(bare.catalog_digest, full.catalog_digest);
  if (old_home) {
    setenv("HOME", saved_home.c_str(), 1);
  } else {
    unsetenv("HOME");
  }
}

}  // namespace
}  // namespace kakeya::runner
