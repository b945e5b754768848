#pragma once
// The preset catalog: manifests/presets.yaml, the runner's allowlist (DESIGN.md §3).
// It is read from the runner's own install, never from a request branch.
//
// File shape (unknown keys and duplicate keys are load errors, at every level):
//   version: 1
//   env_allowlist: [KAKEYA_MODEL_DIR]        # env names presets may reference (bridge/names.h is_env_name)
//   presets:
//     - name: sleep-test                       # ^[a-z][a-z0-9-]{1,40}$, unique
//       description: "..."                     # non-empty
//       argv: [/bin/sleep, "{seconds}"]        # argv[0] literal; placeholders are whole tokens:
//                                              #   "{param}" "${ENV:NAME}" "${MODEL:role}" "${OUT}"
//       params:                                # optional; every param is used in argv
//         seconds: {kind: int, min: 0, max: 3600, default: 1, description: "..."}
//         # kind int|float: min, max (both required, min <= max)
//         # kind enum: values (non-empty, unique strings); kind bool: no bounds
//         # kind string: pattern (PCRE2, must match the whole value; bridge/pattern.h) + max_length (1..8192 bytes)
//         # exactly one of `default: <value in bounds>` or `required: true`
//       timeout_s: 600                         # 1..86400 seconds
//       labels: [gpu]                          # runner labels required (optional)
//       outputs: [report.json]                 # relative files under ${OUT}; no `..`, no absolute
//       env: [KAKEYA_MODEL_DIR]                # env names the job may see; each in env_allowlist
//       idempotent: false                      # may be re-run after a takeover (default false)
//       gate: {report.json: [SAMPLES, WARMUP]} # output -> evidence rule codes (output must be declared)
//       models: [target]                       # model roles; every ${MODEL:role} must be listed
// Read with the strict YAML reader (bridge/yaml_strict.h): load errors carry its codes (io,
// too_large, parse_error, unknown_key, duplicate_key, missing_key, bad_type, out_of_range,
// bad_value) and read `origin:line:column: reason` (1-based, from yaml-cpp marks).

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "bridge/pattern.h"
#include "bridge/result.h"

namespace kakeya::bridge {

class YamlDocument;

enum class ParamKind { Int, Float, Bool, Enum, String };
const char* to_string(ParamKind kind);  // "int" "float" "bool" "enum" "string"

inline constexpr std::size_t kMaxStringParamLength = 8192;  // bytes
inline constexpr int64_t kMaxTimeoutSeconds = 86400;

struct ParamSpec {
  std::string name;
  ParamKind kind = ParamKind::Int;
  std::string description;
  bool required = false;
  nlohmann::json default_value;           // null when required; else int64 / double / bool / string
  int64_t min_int = 0, max_int = 0;       // kind Int (inclusive)
  double min_float = 0, max_float = 0;    // kind Float (inclusive)
  std::vector<std::string> values;        // kind Enum
  std::string pattern;                    // kind String: PCRE2, whole-value match (bridge/pattern.h)
  std::shared_ptr<const Pattern> regex;   // compiled `pattern`
  std::size_t max_length = 0;             // kind String, bytes
};

struct PresetSpec {
  std::string name;
  std::string description;
  std::vector<std::string> argv;
  std::vector<ParamSpec> params;          // file order
  int64_t timeout_s = 0;                  // seconds
  std::vector<std::string> labels;
  std::vector<std::string> outputs;       // relative to ${OUT}
  std::vector<std::string> env;
  bool idempotent = false;
  std::map<std::string, std::vector<std::string>> gate;  // output path -> rule codes
  std::vector<std::string> models;        // model roles

  const ParamSpec* find_param(std::string_view name) const;
};

class PresetCatalog {
 public:
  // Reads and validates the YAML file; origin in messages is the path.
  static Result<PresetCatalog> load_file(const std::filesystem::path& path);
  // Validates YAML text; `origin` names it in error messages.
  static Result<PresetCatalog> load_string(std::string_view yaml, std::string_view origin);

  const PresetSpec* find(std::string_view name) const;  // nullptr when not in the allowlist
  const std::vector<PresetSpec>& presets() const { return presets_; }
  const std::vector<std::string>& env_allowlist() const { return env_allowlist_; }

 private:
  static Result<PresetCatalog> load(const YamlDocument& doc);

  std::vector<PresetSpec> presets_;
  std::vector<std::string> env_allowlist_;
};

// A validated parameter value. Int -> int64_t, Float -> double, Bool -> bool,
// Enum and String -> std::string.
struct ParamValue {
  ParamKind kind = ParamKind::Int;
  std::variant<int64_t, double, bool, std::string> value;

  // The argv token: decimal integer; shortest round-trip decimal for floats (std::to_chars);
  // "true"/"false"; the string itself, byte for byte.
  std::string to_arg() const;
  nlohmann::json to_json() const;
};

struct ResolvedParams {
  std::map<std::string, ParamValue> values;  // every declared param, defaults filled in

  const ParamValue* find(std::string_view name) const;
  nlohmann::json to_json() const;  // {"name": typed value, ...}
};

// Checks one value against `spec`. Strict JSON typing:
//   int:    a JSON integer (not 5.0, not "5", not true) within [min, max]
//   float:  any JSON number, finite, within [min, max]
//   bool:   true / false
//   enum:   a JSON string listed in `values`
//   string: a JSON string, <= max_length bytes, no NUL byte, whole-matching `pattern`
// Errors name `field` (e.g. "params.steps"), the value and the violated bound: bad_type,
// out_of_range, bad_value. The catalog loader checks every `default` with it, so a default can
// never be refused at request time.
Result<ParamValue> validate_param_value(const ParamSpec& spec, const nlohmann::json& value, std::string_view field);

// Checks request params against the preset (validate_param_value per param, field
// `params.<name>`) and fills defaults. Errors: unknown_param, missing_param, and those of
// validate_param_value. `params` must be an object (bad_type otherwise).
Result<ResolvedParams> validate_params(const PresetSpec& preset, const nlohmann::json& params);

struct ArgvContext {
  const ResolvedParams* params = nullptr;
  std::map<std::string, std::string> env;     // runner-side values for ${ENV:NAME}
  std::map<std::string, std::string> models;  // role -> absolute model path for ${MODEL:role}
  std::string out_dir;                        // ${OUT}
};

// Substitutes placeholders. Each placeholder token becomes exactly one argv token (a value
// starting with `-`, containing spaces, quotes or `;` stays one token; nothing is split, parsed
// or passed to a shell). Errors: missing_param, missing_env, missing_model (names the role and
// how to configure it), missing_out_dir.
Result<std::vector<std::string>> resolve_argv(const PresetSpec& preset, const ArgvContext& ctx);

// One argv token of a preset, classified. Placeholders are whole tokens:
//   "{name}"          Param  (name: is_param_name, bridge/names.h)
//   "${ENV:NAME}"     Env    (NAME: is_env_name)
//   "${MODEL:role}"   Model  (role: is_model_role)
//   "${OUT}"          Out
// Any other token containing `{` or `}` is an error (e.g. "--n={steps}", "${HOME}"), so a
// placeholder can never be glued to other text.
struct ArgvToken {
  enum class Kind { Literal, Param, Env, Model, Out };
  Kind kind = Kind::Literal;
  std::string name;  // literal text for Literal; the param/env/role name otherwise
};
Result<ArgvToken> parse_argv_token(std::string_view token);

// One preset as JSON for `kakeya presets --json`:
// {name, description, argv, params: {name: {kind, description, required, default?, min?, max?,
//  values?, pattern?, max_length?}}, timeout_s, labels, outputs, env, idempotent, gate, models}.
nlohmann::json to_json(const PresetSpec& preset);

}  // namespace kakeya::bridge
