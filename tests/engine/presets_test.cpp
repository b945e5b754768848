// The engine presets of the shipped allowlist (manifests/presets.yaml) and the kakeya-engine
// commands they run agree: every engine preset that runs a model takes a `backend` enum (the
// backends a runner may be asked for; only cpu until another backend lands) and passes it as
// --backend (env-probe runs none: it reports every backend it can open), --threads follows the
// engine's one rule, and every flag an argv names is one the command declares.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <memory>
#include <filesystem>
#include <string>

#include "bridge/catalog.h"
#include "tests/harness/paths.h"

namespace kakeya::engine {
namespace {

const bridge::PresetCatalog& shipped() {
  static const bridge::PresetCatalog catalog = [] {
    auto c = bridge::PresetCatalog::load_file(testing::source_dir() / "manifests" / "presets.yaml");
    if (!c.ok()) ADD_FAILURE() << c.error().str();
    return c.ok() ? std::move(c).value() : bridge::PresetCatalog{};
  }();
  return catalog;
}

std::vector<const bridge::PresetSpec*> engine_presets() {
  std::vector<const bridge::PresetSpec*> out;
  for (const auto& p : shipped().presets())
    if (!p.argv.empty() && p.argv[0] == "kakeya-engine") out.push_back(&p);
  return out;
}

TEST(EnginePresets, EveryOneTakesABackendAndPassesIt) {
  const auto presets = engine_presets();
  ASSERT_GE(presets.size(), 9u);
  for (const bridge::PresetSpec* p : presets) {
    SCOPED_TRACE(p->name);
    if (p->argv[1] == "env-probe") continue;
    const bridge::ParamSpec* backend = p->find_param("backend");
    ASSERT_NE(backend, nullptr);
    EXPECT_EQ(backend->kind, bridge::ParamKind::Enum);
    std::vector<std::string> values = backend->values;
    std::sort(values.begin(), values.end());
    EXPECT_EQ(values, (std::vector<std::string>{"cpu", "vulkan"}));
    if (p->name == "engine-selftest") {
      // Proves a GPU host: vulkan by default, and only runners with a device take it.
      EXPECT_EQ(backend->default_value, "vulkan");
      EXPECT_EQ(p->labels, std::vector<std::string>{"vulkan"});
    } else {
      // The demo runs on a machine without a GPU: no other engine preset needs a device.
      EXPECT_EQ(backend->default_value, "cpu");
      EXPECT_TRUE(p->labels.empty());
    }
    const auto it = std::find(p->argv.begin(), p->argv.end(), "--backend");
    ASSERT_NE(it, p->argv.end());
    ASSERT_NE(it + 1, p->argv.end());
    EXPECT_EQ(*(it + 1), "{backend}");
    if (const bridge::ParamSpec* threads = p->find_param("threads")) {
      EXPECT_EQ(threads->min_int, 0) << "0 = every logical CPU, the engine's rule";
      EXPECT_EQ(threads->default_value, 0);
    }
  }
}

// `kakeya-engine <command> --help` lists every flag the preset's argv passes.
TEST(EnginePresets, EveryArgvFlagIsDeclaredByItsCommand) {
  const auto engine = testing::binary_dir() / "kakeya-engine";
  if (!std::filesystem::exists(engine)) GTEST_SKIP() << engine << " is not built";
  for (const bridge::PresetSpec* p : engine_presets()) {
    SCOPED_TRACE(p->name);
    const std::string cmd = engine.string() + " " + p->argv[1] + " --help";
    std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(cmd.c_str(), "r"), &pclose);
    ASSERT_TRUE(pipe);
    std::string help;
    std::array<char, 4096> buf;
    while (size_t n = std::fread(buf.data(), 1, buf.size(), pipe.get())) help.append(buf.data(), n);
    for (const std::string& token : p->argv) {
      if (token.rfind("--", 0) != 0 || token == "--") continue;
      // A name is followed by its type (" UINT") or by the option's next name (",--other").
      EXPECT_TRUE(help.find(token + " ") != std::string::npos || help.find(token + ",") != std::string::npos)
          << token << " is not a flag of " << p->argv[1];
    }
  }
}

}  // namespace
}  // namespace kakeya::engine
