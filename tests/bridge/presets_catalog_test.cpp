// The shipped allowlist (manifests/presets.yaml): the engine presets `generate` and `ar-bench`
// load, bound their params, and pass a prompt that starts with '-' as one value after "--".
#include <pthread.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>

#include "bridge/catalog.h"
#include "tests/harness/paths.h"

namespace kakeya::bridge {
namespace {

using nlohmann::json;

const PresetCatalog& shipped() {
  static const PresetCatalog catalog = [] {
    auto c = PresetCatalog::load_file(testing::source_dir() / "manifests" / "presets.yaml");
    if (!c.ok()) ADD_FAILURE() << c.error().str();
    return c.ok() ? std::move(c).value() : PresetCatalog{};
  }();
  return catalog;
}

std::vector<std::string> argv_for(const PresetSpec& p, const json& params,
                                  std::map<std::string, std::string> models = {{"target", "/models/m.gguf"}}) {
  auto r = validate_params(p, params);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().str());
  if (!r.ok()) return {};
  ArgvContext ctx;
  ctx.params = &r.value();
  ctx.models = std::move(models);
  ctx.out_dir = "/out";
  auto argv = resolve_argv(p, ctx);
  EXPECT_TRUE(argv.ok()) << (argv.ok() ? "" : argv.error().str());
  return argv.ok() ? argv.value() : std::vector<std::string>{};
}

// The token after `flag` in argv, or "<absent>".
std::string value_after(const std::vector<std::string>& argv, const std::string& flag) {
  const auto it = std::find(argv.begin(), argv.end(), flag);
  return it == argv.end() || it + 1 == argv.end() ? "<absent>" : *(it + 1);
}

TEST(PresetsCatalog, GeneratePassesADashPromptAsOneValueAfterDoubleDash) {
  const PresetSpec* g = shipped().find("generate");
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->models, std::vector<std::string>{"target"});
  EXPECT_EQ(g->outputs, std::vector<std::string>{"report.json"});
  const auto argv = argv_for(*g, {{"prompt", "-x --model /etc/passwd"}});
  ASSERT_GE(argv.size(), 3u);
  EXPECT_EQ(argv[0], "kakeya-engine");
  EXPECT_EQ(argv[argv.size() - 2], "--");
  EXPECT_EQ(argv.back(), "-x --model /etc/passwd");
  EXPECT_NE(std::find(argv.begin(), argv.end(), "/models/m.gguf"), argv.end());
}

TEST(PresetsCatalog, GeneratePromptAcceptsPrintableUtf8UpToTheCap) {
  const PresetSpec* g = shipped().find("generate");
  ASSERT_NE(g, nullptr);
  ASSERT_EQ(g->params.front().name, "prompt");
  EXPECT_EQ(g->params.front().max_length, 8192u);  // the 8 KiB
  // Multi-byte UTF-8, tabs and newlines, at exactly max_length bytes.
  std::string long_prompt;
  const std::string unit = "Ünïcödé line\twith tab → ok\n";
  while (long_prompt.size() + unit.size() <= 8192) long_prompt += unit;
  while (long_prompt.size() < 8192) long_prompt += 'a';
  EXPECT_TRUE(validate_params(*g, {{"prompt", long_prompt}}).ok());
  EXPECT_FALSE(validate_params(*g, {{"prompt", long_prompt + "a"}}).ok()) << "over max_length";
  // On a 256 KiB thread stack too: libstdc++'s recursive std::regex overflowed on 8 KiB values.
  bool ok_on_small_stack = false;
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 256 * 1024);
  struct Arg {
    const PresetSpec* g;
    const std::string* prompt;
    bool* ok;
  } arg{g, &long_prompt, &ok_on_small_stack};
  pthread_t th;
  ASSERT_EQ(pthread_create(
                &th, &attr,
                [](void* p) -> void* {
                  auto* a = static_cast<Arg*>(p);
                  *a->ok = validate_params(*a->g, {{"prompt", *a->prompt}}).ok();
                  return nullptr;
                },
                &arg),
            0);
  pthread_join(th, nullptr);
  pthread_attr_destroy(&attr);
  EXPECT_TRUE(ok_on_small_stack);
  EXPECT_FALSE(validate_params(*g, {{"prompt", std::string("bell\x07")}}).ok()) << "C0 control byte";
  EXPECT_FALSE(validate_params(*g, {{"prompt", std::string("esc\x1b[2J")}}).ok()) << "terminal escape";
}

TEST(PresetsCatalog, GenerateAndArBenchParamsAreBounded) {
  const PresetSpec* g = shipped().find("generate");
  const PresetSpec* b = shipped().find("ar-bench");
  ASSERT_NE(g, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_TRUE(validate_params(*g, {{"max_new_tokens", 2048}}).ok());
  EXPECT_EQ(validate_params(*g, {{"max_new_tokens", 2049}}).error().code, errc::kOutOfRange);
  EXPECT_EQ(validate_params(*g, {{"threads", 65}}).error().code, errc::kOutOfRange);
  EXPECT_EQ(validate_params(*g, {{"temperature", -0.5}}).error().code, errc::kOutOfRange);
  EXPECT_EQ(validate_params(*g, {{"top_p", 1.5}}).error().code, errc::kOutOfRange);
  EXPECT_EQ(validate_params(*b, {{"gen_tokens", 4096}}).error().code, errc::kOutOfRange);
  EXPECT_FALSE(validate_params(*b, {{"prompt_lengths", "16;rm"}}).ok());
  const auto argv = argv_for(*b, {{"prompt_lengths", "16,128"}, {"threads", 2}});
  ASSERT_FALSE(argv.empty());
  EXPECT_EQ(argv[1], "ar-bench");
  EXPECT_NE(std::find(argv.begin(), argv.end(), "16,128"), argv.end());
  EXPECT_TRUE(b->gate.count("report.json"));
}

}  // namespace
}  // namespace kakeya::bridge

namespace kakeya::bridge {
namespace {

// The gguf draft comes from the runner's model registry (role `draft`), never from a request.
TEST(PresetsCatalog, SpecdecodeBenchDraftModelTakesTheDraftRole) {
  const PresetSpec* p = shipped().find("specdecode-bench-draft-model");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->models, (std::vector<std::string>{"target", "draft"}));
  for (const auto& param : p->params) EXPECT_NE(param.name, "draft") << "a request must not name the draft file";
  const std::map<std::string, std::string> both = {{"target", "/models/t.gguf"}, {"draft", "/models/d.gguf"}};
  EXPECT_EQ(value_after(argv_for(*p, json::object(), both), "--draft-model"), "/models/d.gguf");
  auto v = validate_params(*p, json::object());
  ASSERT_TRUE(v.ok()) << v.error().str();
  ArgvContext ctx;
  ctx.params = &v.value();
  ctx.out_dir = "/out";
  ctx.models = {{"target", "/models/t.gguf"}};
  EXPECT_FALSE(resolve_argv(*p, ctx).ok()) << "no draft model registered";
}

// The trained pair's preset: target, draft and prompts all from the runner's model registry.
TEST(PresetsCatalog, SpecdecodeBenchPycodeTakesThePairAndItsPromptsFromTheRegistry) {
  const PresetSpec* p = shipped().find("specdecode-bench-pycode");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->models, (std::vector<std::string>{"pycode_target", "pycode_draft", "pycode_prompts"}));
  const std::map<std::string, std::string> roles = {{"pycode_target", "/m/t.gguf"},
                                                    {"pycode_draft", "/m/d.gguf"},
                                                    {"pycode_prompts", "/m/p.json"}};
  const auto argv = argv_for(*p, json::object(), roles);
  EXPECT_EQ(value_after(argv, "--model"), "/m/t.gguf");
  EXPECT_EQ(value_after(argv, "--draft-model"), "/m/d.gguf");
  EXPECT_EQ(value_after(argv, "--workload"), "file");
  EXPECT_EQ(value_after(argv, "--prompts-file"), "/m/p.json");
  EXPECT_EQ(value_after(argv, "--samples"), "8");
  EXPECT_FALSE(validate_params(*p, {{"samples", 17}}).ok()) << "the prompts file holds 16";
}

TEST(PresetsCatalog, SpecdecodeBenchVerifyModeIsAnEnumPassedThrough) {
  for (const char* name : {"specdecode-bench", "specdecode-bench-draft-model"}) {
    const PresetSpec* p = shipped().find(name);
    ASSERT_NE(p, nullptr) << name;
    EXPECT_FALSE(validate_params(*p, {{"verify_mode", "fast"}}).ok()) << name;
    const auto argv = argv_for(*p, {{"verify_mode", "sgemm"}},
                               {{"target", "/models/t.gguf"}, {"draft", "/models/d.gguf"}});
    EXPECT_EQ(value_after(argv, "--verify-mode"), "sgemm") << name;
  }
}

}  // namespace
}  // namespace kakeya::bridge
