// The shipped presets (manifests/presets.yaml) with hostile values: a user value that begins with
// `-` must reach the program as a value, never as an option. Run through the real chain: the
// catalog, validate_params, resolve_argv, and the program itself in a Process (no shell).
#include <gtest/gtest.h>

#include <fstream>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "bridge/catalog.h"
#include "bridge/json_strict.h"
#include "runner/process.h"
#include "tests/harness/paths.h"

namespace kakeya::testing {
namespace {

using nlohmann::json;

bridge::PresetCatalog shipped_catalog() {
  auto c = bridge::PresetCatalog::load_file(source_dir() / "manifests" / "presets.yaml");
  EXPECT_TRUE(c.ok()) << c.error().str();
  return std::move(c).value();
}

struct PresetRun {
  int exit_code = -1;
  std::string out, err;
};

// Resolves `preset` with `params` and runs it; argv[0] found in the build dir for kakeya-engine.
PresetRun run_preset(const bridge::PresetSpec& preset, const json& params, const std::filesystem::path& out_dir,
               const std::map<std::string, std::string>& models = {}) {
  auto resolved = bridge::validate_params(preset, params);
  EXPECT_TRUE(resolved.ok()) << resolved.error().str();
  bridge::ArgvContext ctx;
  ctx.params = &resolved.value();
  ctx.out_dir = out_dir.string();
  ctx.models = models;
  auto argv = bridge::resolve_argv(preset, ctx);
  EXPECT_TRUE(argv.ok()) << argv.error().str();
  runner::ProcessSpec spec;
  spec.argv = argv.value();
  if (spec.argv[0].find('/') == std::string::npos) {
    auto prog = runner::resolve_program(spec.argv[0], {binary_dir()});
    EXPECT_TRUE(prog.ok()) << prog.error().str();
    spec.argv[0] = prog->string();
  }
  spec.env = runner::build_job_environment({}, {});
  spec.timeout_s = 120;
  spec.kill_grace_s = 1;
  PresetRun r;
  std::mutex mu;
  auto p = runner::Process::spawn(spec, [&](int stream, std::string_view d) {
    std::lock_guard<std::mutex> lock(mu);
    (stream == 1 ? r.out : r.err).append(d);
  });
  EXPECT_TRUE(p.ok()) << p.error().str();
  if (p.ok()) r.exit_code = p.value()->wait().exit_code;
  return r;
}

TEST(PresetArgv, EchoTestPrintsOptionLikeMessagesLiterally) {
  const auto catalog = shipped_catalog();
  const bridge::PresetSpec* echo = catalog.find("echo-test");
  ASSERT_NE(echo, nullptr);
  TempDir out;
  // /bin/echo took these as options (--help printed its manual, -n dropped the newline, -e
  // interpreted backslashes). Each must come out exactly as sent, with one newline.
  for (const std::string m : {"--help", "--version", "-n", "-e", "-e \\t\\c", "-E", "--", "-", "%d %s", "\\n", "a  b"}) {
    const PresetRun r = run_preset(*echo, json{{"message", m}}, out.path());
    EXPECT_EQ(r.exit_code, 0) << m << ": " << r.err;
    EXPECT_EQ(r.out, m + "\n") << "message " << m;
  }
}

TEST(PresetArgv, GeneratePromptThatLooksLikeAnOptionIsThePrompt) {
  const auto catalog = shipped_catalog();
  const bridge::PresetSpec* gen = catalog.find("generate");
  ASSERT_NE(gen, nullptr);
  const auto model = models_dir() / "stories260K-f32.gguf";
  ASSERT_TRUE(std::filesystem::exists(model)) << model;
  for (const std::string prompt : {"--help", "-n"}) {
    TempDir out;
    const PresetRun r = run_preset(*gen, json{{"prompt", prompt}, {"max_new_tokens", 2}, {"threads", 1}}, out.path(),
                             {{"target", model.string()}});
    ASSERT_EQ(r.exit_code, 0) << prompt << ": " << r.err;
    std::ifstream in(out.path() / "report.json");
    std::stringstream ss;
    ss << in.rdbuf();
    auto report = bridge::parse_json_strict(ss.str());
    ASSERT_TRUE(report.ok()) << report.error().str();
    EXPECT_EQ(report->at("config").at("prompt"), prompt);
  }
}

// The perplexity preset scores the registry's text (role ppl_text) as llama-perplexity does.
TEST(PresetArgv, PerplexityPresetScoresTheRegistryText) {
  const auto catalog = shipped_catalog();
  const bridge::PresetSpec* ppl = catalog.find("perplexity");
  ASSERT_NE(ppl, nullptr);
  TempDir out;
  const PresetRun r = run_preset(*ppl, json{{"ctx", 64}, {"threads", 1}}, out.path(),
                                 {{"target", (models_dir() / "stories260K-f32.gguf").string()},
                                  {"ppl_text", (data_dir() / "perplexity" / "story.txt").string()}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::ifstream in(out.path() / "report.json");
  std::stringstream ss;
  ss << in.rdbuf();
  auto report = bridge::parse_json_strict(ss.str());
  ASSERT_TRUE(report.ok()) << report.error().str();
  EXPECT_EQ(report->at("kind"), "perplexity");
  EXPECT_EQ(report->at("n_chunk"), 13);
  EXPECT_NEAR(report->at("aggregates").at("ppl").get<double>(), 5.0112, 6e-5);  // llama-perplexity -c 64
}

// Values beginning with `-` that a parameter accepts, for the structural check below.
std::vector<json> dash_values(const bridge::ParamSpec& p) {
  switch (p.kind) {
    case bridge::ParamKind::String:
      return {"-x", "--help", "-1"};
    case bridge::ParamKind::Int:
      return {p.min_int < 0 ? json(p.min_int) : json(-1)};
    case bridge::ParamKind::Float:
      return {p.min_float < 0 ? json(p.min_float) : json(-1.0)};
    case bridge::ParamKind::Enum: {
      std::vector<json> out;
      for (const auto& v : p.values) out.emplace_back(v);
      return out;
    }
    case bridge::ParamKind::Bool:
      return {};
  }
  return {};
}

TEST(PresetArgv, EveryValueThatCanBeginWithADashFollowsDoubleDash) {
  // Any parameter of any shipped preset that accepts a value beginning with `-` must sit after a
  // literal `--` in argv (the programs used, kakeya-engine and printf, stop reading options there).
  const auto catalog = shipped_catalog();
  for (const auto& preset : catalog.presets()) {
    for (const auto& p : preset.params) {
      bool accepts_dash = false;
      for (const auto& v : dash_values(p)) {
        if (v.is_string() && v.get<std::string>().rfind('-', 0) != 0) continue;
        json params = json::object();
        for (const auto& other : preset.params) {
          if (!other.required) continue;
          switch (other.kind) {
            case bridge::ParamKind::Int: params[other.name] = other.min_int; break;
            case bridge::ParamKind::Float: params[other.name] = other.min_float; break;
            case bridge::ParamKind::Enum: params[other.name] = other.values.front(); break;
            case bridge::ParamKind::Bool: params[other.name] = true; break;
            case bridge::ParamKind::String: params[other.name] = "x"; break;
          }
        }
        params[p.name] = v;
        accepts_dash = accepts_dash || bridge::validate_params(preset, params).ok();
      }
      if (!accepts_dash) continue;
      const std::string token = "{" + p.name + "}";
      bool after_double_dash = false, found = false;
      for (const auto& a : preset.argv) {
        if (a == "--") after_double_dash = true;
        if (a == token) {
          found = true;
          EXPECT_TRUE(after_double_dash) << preset.name << ": {" << p.name
                                         << "} accepts a value beginning with '-' but is not after `--`";
        }
      }
      EXPECT_TRUE(found) << preset.name << " " << p.name;
    }
  }
}

}  // namespace
}  // namespace kakeya::testing
