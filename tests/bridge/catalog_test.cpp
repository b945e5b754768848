#include "bridge/catalog.h"

#include <algorithm>
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "bridge/error_codes.h"
#include "tests/harness/paths.h"

namespace kakeya::bridge {
namespace {

using nlohmann::json;

// A catalog with one preset whose body lines (indented 4 spaces) are `body`.
std::string one_preset(const std::string& body, const std::string& allowlist = "[KAKEYA_TOKEN_OK]") {
  return "version: 1\nenv_allowlist: " + allowlist + "\npresets:\n  - name: demo\n" + body;
}

const char* kDemoBody =
    "    description: demo preset\n"
    "    argv: [/usr/bin/demo, --steps, \"{steps}\", --temp, \"{temp}\", --mode, \"{mode}\", --greedy, \"{greedy}\",\n"
    "           --prompt, \"{prompt}\", --model, \"${MODEL:target}\", --out, \"${OUT}\", \"${ENV:KAKEYA_TOKEN_OK}\"]\n"
    "    params:\n"
    "      steps: {kind: int, min: 1, max: 4096, default: 16, description: decode steps}\n"
    "      temp: {kind: float, min: 0.0, max: 2, default: 0.5}\n"
    "      mode: {kind: enum, values: [fast, exact], default: fast}\n"
    "      greedy: {kind: bool, default: true}\n"
    "      prompt: {kind: string, pattern: \"[a-z -]*\", max_length: 10, required: true}\n"
    "    timeout_s: 300\n"
    "    labels: [gpu, \"os:linux\"]\n"
    "    outputs: [report.json, tables/a.csv]\n"
    "    env: [KAKEYA_TOKEN_OK]\n"
    "    idempotent: true\n"
    "    gate: {report.json: [SAMPLES, WARMUP]}\n"
    "    models: [target]\n";

PresetCatalog demo() {
  auto r = PresetCatalog::load_string(one_preset(kDemoBody), "demo.yaml");
  EXPECT_TRUE(r.ok()) << r.error().str();
  return std::move(r).value();
}

// Load errors carry the strict YAML reader's codes (bridge/yaml_strict.h).
void expect_load_error(const std::string& yaml, std::initializer_list<std::string> needles) {
  auto r = PresetCatalog::load_string(yaml, "cat.yaml");
  ASSERT_FALSE(r.ok()) << "accepted:\n" << yaml;
  const ErrorCode reader_codes[] = {errc::kParseError, errc::kUnknownKey, errc::kDuplicateKey, errc::kMissingKey,
                                     errc::kBadType,    errc::kOutOfRange, errc::kBadValue};
  EXPECT_NE(std::find(std::begin(reader_codes), std::end(reader_codes), r.error().code), std::end(reader_codes))
      << r.error().str();
  for (const auto& n : needles) {
    EXPECT_NE(r.error().message.find(n), std::string::npos) << "missing '" << n << "' in: " << r.error().message;
  }
}

// Replaces the first occurrence of `from` in the demo body.
std::string demo_with(const std::string& from, const std::string& to) {
  std::string body = kDemoBody;
  auto pos = body.find(from);
  EXPECT_NE(pos, std::string::npos) << from;
  body.replace(pos, from.size(), to);
  return one_preset(body);
}

TEST(Catalog, LoadsFullPreset) {
  PresetCatalog cat = demo();
  ASSERT_EQ(cat.presets().size(), 1u);
  const PresetSpec* p = cat.find("demo");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(cat.find("nope"), nullptr);
  EXPECT_EQ(p->description, "demo preset");
  EXPECT_EQ(p->argv.size(), 16u);
  EXPECT_EQ(p->timeout_s, 300);
  EXPECT_EQ(p->labels, (std::vector<std::string>{"gpu", "os:linux"}));
  EXPECT_EQ(p->outputs, (std::vector<std::string>{"report.json", "tables/a.csv"}));
  EXPECT_EQ(p->env, (std::vector<std::string>{"KAKEYA_TOKEN_OK"}));
  EXPECT_TRUE(p->idempotent);
  EXPECT_EQ(p->gate.at("report.json"), (std::vector<std::string>{"SAMPLES", "WARMUP"}));
  EXPECT_EQ(p->models, (std::vector<std::string>{"target"}));
  ASSERT_EQ(p->params.size(), 5u);
  EXPECT_EQ(p->params[0].name, "steps");  // file order kept
  const ParamSpec* steps = p->find_param("steps");
  ASSERT_NE(steps, nullptr);
  EXPECT_EQ(steps->kind, ParamKind::Int);
  EXPECT_EQ(steps->min_int, 1);
  EXPECT_EQ(steps->max_int, 4096);
  EXPECT_EQ(steps->default_value.get<int64_t>(), 16);
  EXPECT_EQ(steps->description, "decode steps");
  EXPECT_TRUE(p->find_param("prompt")->required);
  EXPECT_EQ(p->find_param("mode")->values, (std::vector<std::string>{"fast", "exact"}));
  EXPECT_DOUBLE_EQ(p->find_param("temp")->max_float, 2.0);
  EXPECT_EQ(cat.env_allowlist(), (std::vector<std::string>{"KAKEYA_TOKEN_OK"}));
}

TEST(Catalog, DefaultsForOptionalPresetKeys) {
  auto r = PresetCatalog::load_string(
      "version: 1\npresets:\n  - name: mini\n    description: d\n    argv: [/bin/true]\n    timeout_s: 5\n", "m");
  ASSERT_TRUE(r.ok()) << r.error().str();
  const PresetSpec* p = r->find("mini");
  ASSERT_NE(p, nullptr);
  EXPECT_FALSE(p->idempotent);
  EXPECT_TRUE(p->params.empty());
  EXPECT_TRUE(p->outputs.empty());
  EXPECT_TRUE(p->labels.empty());
}

TEST(Catalog, InvalidYamlReportsLine) {
  expect_load_error("version: 1\npresets:\n  - name: [unclosed\n", {"cat.yaml:", "invalid YAML"});
}

TEST(Catalog, TopLevelErrors) {
  expect_load_error("version: 2\npresets: []\n", {"cat.yaml:1:10", "version 2"});
  expect_load_error("presets: []\n", {"version"});
  expect_load_error("version: \"1\"\npresets: []\n", {"version", "integer"});
  expect_load_error("version: 1\n", {"presets"});
  expect_load_error("version: 1\npresets: []\nextra: 1\n", {"cat.yaml:3:1", "unknown key `extra`"});
  expect_load_error("version: 1\nversion: 1\npresets: []\n", {"cat.yaml:2:1", "duplicate key `version`"});
  expect_load_error("version: 1\npresets: {a: 1}\n", {"presets", "list"});
  expect_load_error("- 1\n", {"mapping"});
  expect_load_error("version: 1\nenv_allowlist: [lower]\npresets: []\n", {"env_allowlist", "lower"});
}

TEST(Catalog, ErrorCodesNameTheKindOfProblem) {
  auto code_of = [](const std::string& yaml) {
    auto r = PresetCatalog::load_string(yaml, "cat.yaml");
    return r.ok() ? std::string("ok") : std::string(r.error().code.str());
  };
  EXPECT_EQ(code_of("version: 1\npresets:\n  - name: [unclosed\n"), errc::kParseError);
  EXPECT_EQ(code_of("version: 1\npresets: []\nextra: 1\n"), errc::kUnknownKey);
  EXPECT_EQ(code_of("version: 1\nversion: 1\npresets: []\n"), errc::kDuplicateKey);
  EXPECT_EQ(code_of("presets: []\n"), errc::kMissingKey);
  EXPECT_EQ(code_of("version: \"1\"\npresets: []\n"), errc::kBadType);
  EXPECT_EQ(code_of(demo_with("timeout_s: 300", "timeout_s: 0")), errc::kOutOfRange);
  EXPECT_EQ(code_of("version: 2\npresets: []\n"), errc::kBadValue);
  auto missing = PresetCatalog::load_file("/nonexistent/presets.yaml");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code, errc::kIo);
}

TEST(Catalog, UnknownPresetKeyNamedWithLine) {
  std::string y = one_preset(std::string(kDemoBody) + "    shell: true\n");
  expect_load_error(y, {"cat.yaml:21:5", "unknown key `shell`"});
}

TEST(Catalog, DuplicatePresetKeyRejected) {
  std::string y = one_preset(std::string(kDemoBody) + "    timeout_s: 10\n");
  expect_load_error(y, {"cat.yaml:21:5", "duplicate key `timeout_s`"});
}

TEST(Catalog, DuplicatePresetNamesRejected) {
  std::string y =
      "version: 1\npresets:\n"
      "  - {name: dup, description: a, argv: [/bin/true], timeout_s: 1}\n"
      "  - {name: other, description: a, argv: [/bin/true], timeout_s: 1}\n"
      "  - {name: dup, description: b, argv: [/bin/true], timeout_s: 1}\n";
  expect_load_error(y, {"cat.yaml:5:", "duplicate preset name `dup`", "line 3"});
}

TEST(Catalog, PresetNameAndRequiredKeys) {
  expect_load_error("version: 1\npresets:\n  - {name: Bad_Name, description: a, argv: [/bin/true], timeout_s: 1}\n",
                    {"cat.yaml:3:", "Bad_Name"});
  expect_load_error("version: 1\npresets:\n  - {name: ok, argv: [/bin/true], timeout_s: 1}\n", {"description"});
  expect_load_error("version: 1\npresets:\n  - {name: ok, description: a, timeout_s: 1}\n", {"argv"});
  expect_load_error("version: 1\npresets:\n  - {name: ok, description: a, argv: [/bin/true]}\n", {"timeout_s"});
  expect_load_error("version: 1\npresets:\n  - {name: ok, description: a, argv: [], timeout_s: 1}\n",
                    {"argv must not be empty"});
}

TEST(Catalog, TimeoutBounds) {
  expect_load_error(demo_with("timeout_s: 300", "timeout_s: 0"), {"timeout_s 0", "1..86400"});
  expect_load_error(demo_with("timeout_s: 300", "timeout_s: 86401"), {"timeout_s 86401"});
  expect_load_error(demo_with("timeout_s: 300", "timeout_s: 1.5"), {"timeout_s", "integer"});
  EXPECT_TRUE(PresetCatalog::load_string(demo_with("timeout_s: 300", "timeout_s: 86400"), "x").ok());
}

TEST(Catalog, PlaceholdersMustBeWholeTokens) {
  expect_load_error(demo_with("--steps, \"{steps}\"", "\"--steps={steps}\""), {"--steps={steps}", "whole argv tokens", "cat.yaml:6:"});
  expect_load_error(demo_with("--steps, \"{steps}\"", "--steps, \"x{steps}\""), {"x{steps}"});
  expect_load_error(demo_with("--steps, \"{steps}\"", "--steps, \"${HOME}\""), {"${HOME}"});
  expect_load_error(demo_with("--steps, \"{steps}\"", "--steps, \"{steps}\", \"${OUT}/x\""), {"${OUT}/x"});
}

TEST(Catalog, UndeclaredParamPlaceholder) {
  expect_load_error(demo_with("\"{steps}\"", "\"{stepz}\""), {"{stepz}", "not a declared param", "cat.yaml:6:"});
}

TEST(Catalog, UnquotedPlaceholderGetsHint) {
  expect_load_error(demo_with("\"{steps}\"", "{steps}"), {"argv[2]", "quote placeholders"});
}

TEST(Catalog, DeclaredParamMustBeUsed) {
  expect_load_error(demo_with("--steps, \"{steps}\", ", ""), {"param `steps`", "not used in argv"});
}

TEST(Catalog, Argv0MustBeLiteral) {
  expect_load_error(demo_with("/usr/bin/demo", "\"{steps}\""), {"argv[0]"});
}

TEST(Catalog, EnvMustBeAllowListed) {
  expect_load_error(one_preset(kDemoBody, "[OTHER]"), {"KAKEYA_TOKEN_OK", "env_allowlist"});
  expect_load_error(demo_with("env: [KAKEYA_TOKEN_OK]", "env: [KAKEYA_TOKEN_OK, AWS_SECRET_ACCESS_KEY]"),
                    {"cat.yaml:17:", "AWS_SECRET_ACCESS_KEY", "env_allowlist"});
}

TEST(Catalog, ModelRoleMustBeDeclared) {
  expect_load_error(demo_with("models: [target]", "models: [draft]"), {"model role `target`", "models"});
}

TEST(Catalog, UnknownKindAndKeys) {
  expect_load_error(demo_with("kind: bool", "kind: boolean"), {"cat.yaml:12:", "unknown kind `boolean`"});
  expect_load_error(demo_with("{kind: bool, default: true}", "{kind: bool, default: true, min: 0}"),
                    {"`min` does not apply to kind bool"});
  expect_load_error(demo_with("default: true}", "default: true, secret: 1}"), {"unknown key `secret`"});
  expect_load_error(demo_with("greedy: {kind: bool, default: true}", "greedy: {default: true}"), {"kind"});
  expect_load_error(demo_with("greedy:", "Greedy:"), {"Greedy"});
}

TEST(Catalog, BoundsConsistent) {
  expect_load_error(demo_with("min: 1, max: 4096", "min: 10, max: 4"), {"max 4 < min 10"});
  expect_load_error(demo_with("min: 1, max: 4096, ", ""), {"(kind int) needs `min`"});
  expect_load_error(demo_with("min: 0.0, max: 2", "min: 3.0, max: 2"), {"temp", "max < min"});
  expect_load_error(demo_with("min: 0.0, max: 2", "min: 0.0, max: .inf"), {"finite"});
  expect_load_error(demo_with("values: [fast, exact]", "values: []"), {"values must not be empty"});
  expect_load_error(demo_with("values: [fast, exact]", "values: [fast, fast]"), {"duplicate enum value"});
  expect_load_error(demo_with("max_length: 10", "max_length: 0"), {"max_length"});
  expect_load_error(demo_with("max_length: 10", "max_length: 8193"), {"max_length"});
  expect_load_error(demo_with("pattern: \"[a-z -]*\"", "pattern: \"[a-z\""), {"invalid pattern"});
}

TEST(Catalog, DefaultsWithinBounds) {
  expect_load_error(demo_with("default: 16", "default: 5000"), {"cat.yaml:9:", "`default` = 5000", "max 4096"});
  expect_load_error(demo_with("default: 16", "default: \"16\""), {"steps", "default", "integer"});
  expect_load_error(demo_with("default: 16", "default: 16.0"), {"steps", "integer"});
  expect_load_error(demo_with("default: 0.5", "default: 2.5"), {"temp", "`default` = 2.5"});
  expect_load_error(demo_with("default: fast", "default: slow"), {"\"slow\"", "not one of"});
  expect_load_error(demo_with("default: true", "default: yes"), {"greedy", "true or false"});
  expect_load_error(demo_with("required: true", "default: \"ABC\""), {"does not match pattern"});
  expect_load_error(demo_with("required: true", "default: \"aaaaaaaaaaaaaaa\""), {"max_length"});
  // The request-time check itself: a default that validate_params would refuse cannot load.
  expect_load_error(demo_with("required: true", "default: \"a\\0b\""), {"prompt", "`default`", "NUL"});
}

TEST(Catalog, DefaultXorRequired) {
  expect_load_error(demo_with("required: true", "required: true, default: abc"), {"exclude each other"});
  expect_load_error(demo_with(", required: true", ""), {"needs a `default` or `required: true`"});
  expect_load_error(demo_with("required: true", "required: false"), {"needs a `default`"});
}

TEST(Catalog, OutputsAreRelativeAndSafe) {
  for (const char* bad : {"/etc/passwd", "../x", "a/../../x", "a//b", ".", "a b", "x/", "..", "a\\\\b"}) {
    expect_load_error(demo_with("outputs: [report.json, tables/a.csv]", std::string("outputs: [report.json, \"") + bad + "\"]"),
                      {"output"});
  }
  expect_load_error(demo_with("tables/a.csv", "report.json"), {"duplicate output"});
}

TEST(Catalog, GateReportMustBeDeclaredOutput) {
  expect_load_error(demo_with("gate: {report.json:", "gate: {other.json:"), {"other.json", "not a declared output"});
  expect_load_error(demo_with("[SAMPLES, WARMUP]", "[samples]"), {"rule code"});
}

TEST(Catalog, LabelsValidated) {
  expect_load_error(demo_with("labels: [gpu,", "labels: [\"g p u\","), {"invalid label"});
}

TEST(Catalog, LoadFileMissingIsError) {
  auto r = PresetCatalog::load_file("/nonexistent/presets.yaml");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("/nonexistent/presets.yaml"), std::string::npos);
}

// ---- validate_params ----

json good_params() { return json{{"prompt", "hi there"}}; }

void expect_param_error(const json& params, const std::string& code, std::initializer_list<std::string> needles) {
  PresetCatalog cat = demo();
  auto r = validate_params(*cat.find("demo"), params);
  ASSERT_FALSE(r.ok()) << "accepted: " << params.dump();
  EXPECT_EQ(r.error().code, code) << r.error().str();
  for (const auto& n : needles) {
    EXPECT_NE(r.error().message.find(n), std::string::npos) << "missing '" << n << "' in: " << r.error().message;
  }
}

TEST(Params, DefaultsFilledAndTyped) {
  PresetCatalog cat = demo();
  auto r = validate_params(*cat.find("demo"), good_params());
  ASSERT_TRUE(r.ok()) << r.error().str();
  EXPECT_EQ(r->values.size(), 5u);
  EXPECT_EQ(std::get<int64_t>(r->find("steps")->value), 16);
  EXPECT_DOUBLE_EQ(std::get<double>(r->find("temp")->value), 0.5);
  EXPECT_EQ(std::get<std::string>(r->find("mode")->value), "fast");
  EXPECT_TRUE(std::get<bool>(r->find("greedy")->value));
  EXPECT_EQ(std::get<std::string>(r->find("prompt")->value), "hi there");
  EXPECT_EQ(r->to_json(), (json{{"steps", 16}, {"temp", 0.5}, {"mode", "fast"}, {"greedy", true}, {"prompt", "hi there"}}));
}

TEST(Params, ExplicitValuesAccepted) {
  PresetCatalog cat = demo();
  json p = {{"prompt", "a-b"}, {"steps", 4096}, {"temp", 2}, {"mode", "exact"}, {"greedy", false}};
  auto r = validate_params(*cat.find("demo"), p);
  ASSERT_TRUE(r.ok()) << r.error().str();
  EXPECT_EQ(std::get<int64_t>(r->find("steps")->value), 4096);
  EXPECT_DOUBLE_EQ(std::get<double>(r->find("temp")->value), 2.0);  // integer JSON is a number for float
  EXPECT_FALSE(std::get<bool>(r->find("greedy")->value));
}

TEST(Params, IntStrictTyping) {
  for (const json& bad : {json("+5"), json(" 5 "), json("5_0"), json("5"), json(5.0), json(true), json(1e3)}) {
    json p = good_params();
    p["steps"] = bad;
    expect_param_error(p, "bad_type", {"params.steps", "integer"});
  }
}

TEST(Params, IntBoundsNamed) {
  json p = good_params();
  p["steps"] = 0;
  expect_param_error(p, "out_of_range", {"params.steps", "= 0", "min 1"});
  p["steps"] = 4097;
  expect_param_error(p, "out_of_range", {"params.steps", "4097", "max 4096"});
  p["steps"] = json::parse("18446744073709551615");
  expect_param_error(p, "out_of_range", {"params.steps", "18446744073709551615"});
  p["steps"] = -9223372036854775807LL;
  expect_param_error(p, "out_of_range", {"params.steps", "min 1"});
}

TEST(Params, FloatTypingAndBounds) {
  json p = good_params();
  p["temp"] = "0.5";
  expect_param_error(p, "bad_type", {"params.temp", "\"0.5\""});
  p["temp"] = false;
  expect_param_error(p, "bad_type", {"params.temp", "false"});
  p["temp"] = 2.5;
  expect_param_error(p, "out_of_range", {"params.temp", "2.5", "max 2"});
  p["temp"] = -0.1;
  expect_param_error(p, "out_of_range", {"params.temp", "-0.1", "min 0"});
}

TEST(Params, BoolAndEnum) {
  json p = good_params();
  p["greedy"] = "true";
  expect_param_error(p, "bad_type", {"params.greedy", "\"true\""});
  p = good_params();
  p["greedy"] = 1;
  expect_param_error(p, "bad_type", {"params.greedy"});
  p = good_params();
  p["mode"] = "FAST";
  expect_param_error(p, "bad_value", {"params.mode", "\"FAST\"", "fast, exact"});
  p["mode"] = 1;
  expect_param_error(p, "bad_type", {"params.mode"});
}

TEST(Params, StringPatternLengthNul) {
  json p = {{"prompt", "UPPER"}};
  expect_param_error(p, "bad_value", {"params.prompt", "\"UPPER\"", "pattern"});
  p = {{"prompt", "abcdefghijk"}};
  expect_param_error(p, "out_of_range", {"params.prompt", "11 bytes", "max_length 10"});
  p = {{"prompt", std::string("ab\0cd", 5)}};
  expect_param_error(p, "bad_value", {"params.prompt", "NUL"});
  p = {{"prompt", 5}};
  expect_param_error(p, "bad_type", {"params.prompt"});
  // Whole-value match: a matching prefix is not enough.
  p = {{"prompt", "ok;rm"}};
  expect_param_error(p, "bad_value", {"params.prompt"});
}

TEST(Params, UnknownMissingNull) {
  json p = good_params();
  p["stepz"] = 3;
  expect_param_error(p, "unknown_param", {"params.stepz", "demo"});
  expect_param_error(json::object(), "missing_param", {"params.prompt", "required"});
  p = good_params();
  p["steps"] = nullptr;
  expect_param_error(p, "bad_type", {"params.steps", "null"});
  expect_param_error(json::array(), "bad_type", {"params"});
}

// ---- resolve_argv ----

TEST(Argv, ResolvesEveryPlaceholderKind) {
  PresetCatalog cat = demo();
  const PresetSpec& p = *cat.find("demo");
  auto params = validate_params(p, json{{"prompt", "-rf"}, {"temp", 0.25}});
  ASSERT_TRUE(params.ok()) << params.error().str();
  ArgvContext ctx{&params.value(), {{"KAKEYA_TOKEN_OK", "tok en"}}, {{"target", "/models/t.gguf"}}, "/tmp/out dir"};
  auto argv = resolve_argv(p, ctx);
  ASSERT_TRUE(argv.ok()) << argv.error().str();
  std::vector<std::string> want = {"/usr/bin/demo", "--steps", "16", "--temp", "0.25", "--mode", "fast", "--greedy",
                                   "true", "--prompt", "-rf", "--model", "/models/t.gguf", "--out", "/tmp/out dir",
                                   "tok en"};
  EXPECT_EQ(*argv, want);
}

TEST(Argv, DashValueStaysOneToken) {
  auto cat = PresetCatalog::load_string(
      "version: 1\npresets:\n  - name: echo\n    description: d\n    argv: [/bin/echo, \"{m}\"]\n"
      "    params: {m: {kind: string, pattern: \"[ -~]*\", max_length: 50, required: true}}\n    timeout_s: 5\n",
      "e");
  ASSERT_TRUE(cat.ok()) << cat.error().str();
  const PresetSpec& p = *cat->find("echo");
  for (const std::string v : {"-rf", "-rf /", "--help", "a; rm -rf ~", "$(id)", "'quoted' \"x\""}) {
    auto params = validate_params(p, json{{"m", v}});
    ASSERT_TRUE(params.ok()) << params.error().str();
    auto argv = resolve_argv(p, ArgvContext{&params.value(), {}, {}, ""});
    ASSERT_TRUE(argv.ok()) << argv.error().str();
    ASSERT_EQ(argv->size(), 2u) << v;
    EXPECT_EQ((*argv)[1], v);
  }
}

TEST(Argv, MissingModelEnvOutAreClearErrors) {
  PresetCatalog cat = demo();
  const PresetSpec& p = *cat.find("demo");
  auto params = validate_params(p, good_params());
  ASSERT_TRUE(params.ok());
  ArgvContext ctx{&params.value(), {{"KAKEYA_TOKEN_OK", "x"}}, {}, "/out"};
  auto r = resolve_argv(p, ctx);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, errc::kMissingModel);
  EXPECT_NE(r.error().message.find("target"), std::string::npos) << r.error().message;
  ctx.models["target"] = "/m.gguf";
  ctx.env.clear();
  r = resolve_argv(p, ctx);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, errc::kMissingEnv);
  EXPECT_NE(r.error().message.find("KAKEYA_TOKEN_OK"), std::string::npos);
  ctx.env["KAKEYA_TOKEN_OK"] = "x";
  ctx.out_dir.clear();
  r = resolve_argv(p, ctx);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, errc::kMissingOutDir);
  ctx.out_dir = "/out";
  ctx.params = nullptr;
  r = resolve_argv(p, ctx);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, errc::kMissingParam);
}

TEST(Argv, TokenClassification) {
  EXPECT_EQ(parse_argv_token("{steps}")->kind, ArgvToken::Kind::Param);
  EXPECT_EQ(parse_argv_token("{steps}")->name, "steps");
  EXPECT_EQ(parse_argv_token("${ENV:A_B1}")->kind, ArgvToken::Kind::Env);
  EXPECT_EQ(parse_argv_token("${MODEL:draft-1}")->name, "draft-1");
  EXPECT_EQ(parse_argv_token("${OUT}")->kind, ArgvToken::Kind::Out);
  EXPECT_EQ(parse_argv_token("--out")->kind, ArgvToken::Kind::Literal);
  EXPECT_EQ(parse_argv_token("$HOME")->kind, ArgvToken::Kind::Literal);
  for (const char* bad : {"--n={steps}", "{Steps}", "{}", "${ENV:lower}", "${MODEL:}", "${OUT}x", "}", "{a", "${X}"}) {
    EXPECT_FALSE(parse_argv_token(bad).ok()) << bad;
  }
}

TEST(Argv, FloatAndIntFormatting) {
  EXPECT_EQ((ParamValue{ParamKind::Float, 0.1}.to_arg()), "0.1");
  EXPECT_EQ((ParamValue{ParamKind::Float, 1.0}.to_arg()), "1");
  EXPECT_EQ((ParamValue{ParamKind::Int, int64_t{-42}}.to_arg()), "-42");
  EXPECT_EQ((ParamValue{ParamKind::Bool, false}.to_arg()), "false");
}

TEST(Catalog, ToJsonDescribesPreset) {
  PresetCatalog cat = demo();
  json j = to_json(*cat.find("demo"));
  EXPECT_EQ(j["name"], "demo");
  EXPECT_EQ(j["timeout_s"], 300);
  EXPECT_EQ(j["params"]["steps"]["kind"], "int");
  EXPECT_EQ(j["params"]["steps"]["default"], 16);
  EXPECT_EQ(j["params"]["steps"]["max"], 4096);
  EXPECT_EQ(j["params"]["prompt"]["required"], true);
  EXPECT_FALSE(j["params"]["prompt"].contains("default"));
  EXPECT_EQ(j["params"]["prompt"]["max_length"], 10);
  EXPECT_EQ(j["params"]["mode"]["values"], json::array({"fast", "exact"}));
  EXPECT_EQ(j["gate"]["report.json"], json::array({"SAMPLES", "WARMUP"}));
  EXPECT_EQ(j["idempotent"], true);
  EXPECT_EQ(j["models"], json::array({"target"}));
}

// ---- the shipped catalog ----

TEST(ShippedCatalog, LoadsAndHasTheTestPresets) {
  auto cat = PresetCatalog::load_file(kakeya::testing::source_dir() / "manifests" / "presets.yaml");
  ASSERT_TRUE(cat.ok()) << cat.error().str();

  const PresetSpec* probe = cat->find("env-probe");
  ASSERT_NE(probe, nullptr);
  EXPECT_EQ(probe->argv, (std::vector<std::string>{"kakeya-engine", "env-probe", "--out", "${OUT}"}));
  EXPECT_EQ(probe->outputs, (std::vector<std::string>{"report.json"}));
  EXPECT_EQ(probe->timeout_s, 120);
  EXPECT_TRUE(probe->labels.empty());

  const PresetSpec* sleep = cat->find("sleep-test");
  ASSERT_NE(sleep, nullptr);
  EXPECT_EQ(sleep->timeout_s, 600);
  auto sp = validate_params(*sleep, json::object());
  ASSERT_TRUE(sp.ok()) << sp.error().str();
  auto sargv = resolve_argv(*sleep, ArgvContext{&sp.value(), {}, {}, "/out"});
  ASSERT_TRUE(sargv.ok());
  EXPECT_EQ(*sargv, (std::vector<std::string>{"/bin/sleep", "1"}));
  EXPECT_FALSE(validate_params(*sleep, json{{"seconds", 3601}}).ok());
  EXPECT_FALSE(validate_params(*sleep, json{{"seconds", -1}}).ok());

  const PresetSpec* echo = cat->find("echo-test");
  ASSERT_NE(echo, nullptr);
  EXPECT_TRUE(echo->outputs.empty());
  EXPECT_EQ(validate_params(*echo, json::object()).error().code, errc::kMissingParam);
  auto ep = validate_params(*echo, json{{"message", "-rf"}});
  ASSERT_TRUE(ep.ok());
  auto eargv = resolve_argv(*echo, ArgvContext{&ep.value(), {}, {}, "/out"});
  ASSERT_TRUE(eargv.ok());
  EXPECT_EQ(*eargv, (std::vector<std::string>{"/usr/bin/printf", "--", "%s\n", "-rf"}));
  EXPECT_FALSE(validate_params(*echo, json{{"message", "tab\there"}}).ok());
  EXPECT_FALSE(validate_params(*echo, json{{"message", std::string(201, 'a')}}).ok());
}

}  // namespace
}  // namespace kakeya::bridge
