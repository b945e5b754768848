// PresetCatalog loading: YAML -> validated PresetSpec list (see catalog.h for the file shape).
// Reading goes through bridge/yaml_strict.h; this file holds the catalog's own rules.
#include "bridge/catalog.h"

#include <set>

#include "bridge/error_codes.h"
#include "bridge/names.h"
#include "bridge/request.h"
#include "bridge/yaml_strict.h"

namespace kakeya::bridge {
namespace {

bool is_lower(char c) { return c >= 'a' && c <= 'z'; }
bool is_upper(char c) { return c >= 'A' && c <= 'Z'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }

bool valid_label(std::string_view s) {
  if (s.empty() || s.size() > 64) return false;
  for (char c : s) {
    bool ok = is_lower(c) || is_upper(c) || is_digit(c) || c == '.' || c == '_' || c == '-' || c == ':' ||
              c == '=' || c == '/';
    if (!ok) return false;
  }
  return true;
}

bool valid_rule_code(std::string_view s) {
  if (s.empty() || s.size() > 64 || !is_upper(s[0])) return false;
  for (char c : s) {
    if (!is_upper(c) && !is_digit(c) && c != '_') return false;
  }
  return true;
}

// A relative path of plain segments ([A-Za-z0-9._-]+, not "." or ".."), e.g. "report.json",
// "tables/a.csv". Rejects absolute paths, backslashes, empty segments and `..`.
bool valid_output_path(std::string_view s) {
  if (s.empty() || s.size() > 255 || s.front() == '/' || s.back() == '/') return false;
  std::size_t start = 0;
  while (start <= s.size()) {
    std::size_t end = s.find('/', start);
    if (end == std::string_view::npos) end = s.size();
    std::string_view seg = s.substr(start, end - start);
    if (seg.empty() || seg == "." || seg == "..") return false;
    for (char c : seg) {
      if (!is_lower(c) && !is_upper(c) && !is_digit(c) && c != '.' && c != '_' && c != '-') return false;
    }
    start = end + 1;
  }
  return true;
}

bool contains(const std::vector<std::string>& v, std::string_view x) {
  for (const auto& e : v) {
    if (e == x) return true;
  }
  return false;
}

// The bounds of a param of `kind`: int/float min+max, enum values, string pattern+max_length.
Status load_param_bounds(const YamlNode& n, ParamSpec& p, const std::string& what) {
  if (p.kind == ParamKind::Int) {
    KAKEYA_ASSIGN_OR_RETURN(p.min_int, n.get("min").integer(what + " min"));
    KAKEYA_ASSIGN_OR_RETURN(p.max_int, n.get("max").integer(what + " max"));
    if (p.min_int > p.max_int) {
      return n.get("max").error(errc::kBadValue, what + ": max " + std::to_string(p.max_int) + " < min " +
                                                     std::to_string(p.min_int));
    }
  } else if (p.kind == ParamKind::Float) {
    KAKEYA_ASSIGN_OR_RETURN(p.min_float, n.get("min").number(what + " min"));
    KAKEYA_ASSIGN_OR_RETURN(p.max_float, n.get("max").number(what + " max"));
    if (p.min_float > p.max_float) return n.get("max").error(errc::kBadValue, what + ": max < min");
  } else if (p.kind == ParamKind::Enum) {
    const YamlNode values = n.get("values");
    KAKEYA_ASSIGN_OR_RETURN(p.values, values.string_list(what + " values"));
    if (p.values.empty()) return values.error(errc::kBadValue, what + ": values must not be empty");
    std::set<std::string> seen;
    for (std::size_t i = 0; i < p.values.size(); ++i) {
      if (p.values[i].empty()) return values[i].error(errc::kBadValue, what + ": enum values must not be empty");
      if (!seen.insert(p.values[i]).second) {
        return values[i].error(errc::kBadValue, what + ": duplicate enum value `" + p.values[i] + "`");
      }
    }
  } else if (p.kind == ParamKind::String) {
    const YamlNode pattern = n.get("pattern");
    KAKEYA_ASSIGN_OR_RETURN(p.pattern, pattern.string(what + " pattern"));
    auto compiled = Pattern::compile(p.pattern);
    if (!compiled.ok()) return pattern.error(errc::kBadValue, what + ": " + compiled.error().message);
    p.regex = std::make_shared<const Pattern>(std::move(compiled).value());
    KAKEYA_ASSIGN_OR_RETURN(int64_t max_len, n.get("max_length").integer(what + " max_length", 1,
                                                                         static_cast<int64_t>(kMaxStringParamLength)));
    p.max_length = static_cast<std::size_t>(max_len);
  }
  return ok_status();
}

Result<nlohmann::json> load_default(const YamlNode& d, ParamKind kind, const std::string& what) {
  switch (kind) {
    case ParamKind::Int: {
      KAKEYA_ASSIGN_OR_RETURN(int64_t v, d.integer(what));
      return nlohmann::json(v);
    }
    case ParamKind::Float: {
      KAKEYA_ASSIGN_OR_RETURN(double v, d.number(what));
      return nlohmann::json(v);
    }
    case ParamKind::Bool: {
      KAKEYA_ASSIGN_OR_RETURN(bool v, d.boolean(what));
      return nlohmann::json(v);
    }
    case ParamKind::Enum:
    case ParamKind::String:
      break;
  }
  KAKEYA_ASSIGN_OR_RETURN(std::string v, d.string(what));
  return nlohmann::json(v);
}

Result<ParamSpec> load_param(const YamlNode& key, const YamlNode& n, const std::string& preset) {
  ParamSpec p;
  KAKEYA_ASSIGN_OR_RETURN(p.name, key.string("param name"));
  const std::string what = "preset `" + preset + "` param `" + p.name + "`";
  if (!is_param_name(p.name)) {
    return key.error(errc::kBadValue, what + ": name must match " + std::string(kParamNamePattern));
  }
  KAKEYA_TRY(n.check_map(what, {"kind", "description", "min", "max", "values", "pattern", "max_length", "default",
                                "required"}));
  KAKEYA_ASSIGN_OR_RETURN(YamlNode kind_node, n.require("kind", what + " (int, float, bool, enum or string)"));
  KAKEYA_ASSIGN_OR_RETURN(std::string kind, kind_node.string(what + " kind"));
  std::vector<std::string> bounds;  // the bound keys of this kind
  if (kind == "int") {
    p.kind = ParamKind::Int;
    bounds = {"min", "max"};
  } else if (kind == "float") {
    p.kind = ParamKind::Float;
    bounds = {"min", "max"};
  } else if (kind == "bool") {
    p.kind = ParamKind::Bool;
  } else if (kind == "enum") {
    p.kind = ParamKind::Enum;
    bounds = {"values"};
  } else if (kind == "string") {
    p.kind = ParamKind::String;
    bounds = {"pattern", "max_length"};
  } else {
    return kind_node.error(errc::kBadValue, what + ": unknown kind `" + kind + "` (int, float, bool, enum, string)");
  }
  for (const char* k : {"min", "max", "values", "pattern", "max_length"}) {
    if (n.get(k).present() && !contains(bounds, k)) {
      return n.get(k).error(errc::kUnknownKey, what + ": `" + k + "` does not apply to kind " + kind);
    }
  }
  for (const auto& k : bounds) KAKEYA_TRY(n.require(k, what + " (kind " + kind + ")"));
  if (n.get("description").present()) {
    KAKEYA_ASSIGN_OR_RETURN(p.description, n.get("description").string(what + " description"));
  }
  KAKEYA_TRY(load_param_bounds(n, p, what));

  const YamlNode d = n.get("default");
  if (n.get("required").present()) {
    KAKEYA_ASSIGN_OR_RETURN(p.required, n.get("required").boolean(what + " required"));
  }
  if (p.required && d.present()) return d.error(errc::kBadValue, what + ": `required: true` and `default` exclude each other");
  if (!p.required && !d.present()) return n.error(errc::kMissingKey, what + " needs a `default` or `required: true`");
  if (d.present()) {
    KAKEYA_ASSIGN_OR_RETURN(p.default_value, load_default(d, p.kind, what + " default"));
    // The request-time check: a default is never refused when a request omits the param.
    auto checked = validate_param_value(p, p.default_value, "default");
    if (!checked.ok()) return d.error(checked.error().code, what + ": " + checked.error().message);
  }
  return p;
}

// argv: a literal argv[0], whole-token placeholders, every reference declared, every param used.
Status load_argv(const YamlNode& n, PresetSpec& p, const std::set<std::string>& env_allowlist, const std::string& what) {
  const YamlNode argv = n.get("argv");
  for (std::size_t i = 0; i < argv.size(); ++i) {
    // `[/bin/sleep, {seconds}]` makes {seconds} a YAML flow mapping.
    if (argv[i].is_map()) {
      return argv[i].error(errc::kBadType, what + " argv[" + std::to_string(i) +
                                               "] must be a string, got a mapping (quote placeholders in YAML: \"{name}\")");
    }
  }
  KAKEYA_ASSIGN_OR_RETURN(p.argv, argv.string_list(what + " argv"));
  if (p.argv.empty()) return argv.error(errc::kBadValue, what + ": argv must not be empty");
  std::set<std::string> used_params;
  for (std::size_t i = 0; i < p.argv.size(); ++i) {
    auto tok = parse_argv_token(p.argv[i]);
    if (!tok.ok()) return argv[i].error(errc::kBadValue, what + " argv[" + std::to_string(i) + "]: " + tok.error().message);
    if (i == 0 && tok->kind != ArgvToken::Kind::Literal) {
      return argv[i].error(errc::kBadValue, what + ": argv[0] must be a literal program, not a placeholder");
    }
    switch (tok->kind) {
      case ArgvToken::Kind::Param:
        if (!p.find_param(tok->name)) {
          return argv[i].error(errc::kBadValue, what + ": argv placeholder {" + tok->name + "} is not a declared param");
        }
        used_params.insert(tok->name);
        break;
      case ArgvToken::Kind::Env:
        if (!env_allowlist.count(tok->name)) {
          return argv[i].error(errc::kBadValue,
                               what + ": argv uses env `" + tok->name + "` which is not in env_allowlist");
        }
        break;
      case ArgvToken::Kind::Model:
        if (!contains(p.models, tok->name)) {
          return argv[i].error(errc::kBadValue, what + ": argv uses model role `" + tok->name + "` not listed in models");
        }
        break;
      default:
        break;
    }
  }
  for (const auto& ps : p.params) {
    if (!used_params.count(ps.name)) {
      return n.get("params").get(ps.name).error(errc::kBadValue,
                                                what + ": param `" + ps.name + "` is declared but not used in argv");
    }
  }
  return ok_status();
}

// A list of unique strings, each accepted by `valid` (message: "<what>: invalid <noun> `x`").
Result<std::vector<std::string>> load_unique_list(const YamlNode& n, const std::string& what, const char* noun,
                                                  bool (*valid)(std::string_view)) {
  KAKEYA_ASSIGN_OR_RETURN(auto items, n.string_list(what + " " + noun + "s"));
  std::set<std::string> seen;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (!valid(items[i])) return n[i].error(errc::kBadValue, what + ": invalid " + noun + " `" + items[i] + "`");
    if (!seen.insert(items[i]).second) {
      return n[i].error(errc::kBadValue, what + ": duplicate " + std::string(noun) + " `" + items[i] + "`");
    }
  }
  return items;
}

Result<PresetSpec> load_preset(const YamlNode& n, const std::set<std::string>& env_allowlist) {
  KAKEYA_TRY(n.check_map("preset", {"name", "description", "argv", "params", "timeout_s", "labels", "outputs", "env",
                                    "idempotent", "gate", "models"}));
  PresetSpec p;
  KAKEYA_ASSIGN_OR_RETURN(YamlNode name, n.require("name", "preset"));
  KAKEYA_ASSIGN_OR_RETURN(p.name, name.string("preset name"));
  if (!is_valid_preset_name(p.name)) {
    return name.error(errc::kBadValue, "preset name `" + p.name + "` must match ^[a-z][a-z0-9-]{1,40}$");
  }
  const std::string what = "preset `" + p.name + "`";
  for (const char* k : {"description", "argv", "timeout_s"}) KAKEYA_TRY(n.require(k, what));
  KAKEYA_ASSIGN_OR_RETURN(p.description, n.get("description").string(what + " description"));
  if (p.description.empty()) return n.get("description").error(errc::kBadValue, what + ": description must not be empty");
  KAKEYA_ASSIGN_OR_RETURN(p.timeout_s, n.get("timeout_s").integer(what + " timeout_s", 1, kMaxTimeoutSeconds));

  KAKEYA_ASSIGN_OR_RETURN(p.labels, n.get("labels").string_list(what + " labels"));
  for (std::size_t i = 0; i < p.labels.size(); ++i) {
    if (!valid_label(p.labels[i])) return n.get("labels")[i].error(errc::kBadValue, what + ": invalid label `" + p.labels[i] + "`");
  }
  if (n.get("idempotent").present()) {
    KAKEYA_ASSIGN_OR_RETURN(p.idempotent, n.get("idempotent").boolean(what + " idempotent"));
  }
  const YamlNode outputs = n.get("outputs");
  KAKEYA_ASSIGN_OR_RETURN(p.outputs, outputs.string_list(what + " outputs"));
  std::set<std::string> seen_outputs;
  for (std::size_t i = 0; i < p.outputs.size(); ++i) {
    if (!valid_output_path(p.outputs[i])) {
      return outputs[i].error(errc::kBadValue, what + ": output `" + p.outputs[i] +
                                                   "` must be a relative path of [A-Za-z0-9._-] segments (no `..`, not absolute)");
    }
    if (!seen_outputs.insert(p.outputs[i]).second) {
      return outputs[i].error(errc::kBadValue, what + ": duplicate output `" + p.outputs[i] + "`");
    }
  }
  const YamlNode env = n.get("env");
  KAKEYA_ASSIGN_OR_RETURN(p.env, env.string_list(what + " env"));
  for (std::size_t i = 0; i < p.env.size(); ++i) {
    if (!env_allowlist.count(p.env[i])) {
      return env[i].error(errc::kBadValue, what + ": env `" + p.env[i] + "` is not in env_allowlist");
    }
  }
  KAKEYA_ASSIGN_OR_RETURN(p.models, load_unique_list(n.get("models"), what, "model role", is_model_role));

  const YamlNode gate = n.get("gate");
  if (!gate.is_null()) {
    KAKEYA_TRY(gate.check_map(what + " gate"));
    for (const auto& [key, rules_node] : gate.entries()) {
      KAKEYA_ASSIGN_OR_RETURN(std::string out, key.string(what + " gate report"));
      if (!contains(p.outputs, out)) {
        return key.error(errc::kBadValue, what + ": gate report `" + out + "` is not a declared output");
      }
      KAKEYA_ASSIGN_OR_RETURN(auto rules, rules_node.string_list(what + " gate " + out));
      for (std::size_t i = 0; i < rules.size(); ++i) {
        if (!valid_rule_code(rules[i])) {
          return rules_node[i].error(errc::kBadValue, what + ": invalid gate rule code `" + rules[i] + "`");
        }
      }
      p.gate[out] = std::move(rules);
    }
  }

  const YamlNode params = n.get("params");
  if (!params.is_null()) {
    KAKEYA_TRY(params.check_map(what + " params"));
    for (const auto& [key, value] : params.entries()) {
      KAKEYA_ASSIGN_OR_RETURN(ParamSpec ps, load_param(key, value, p.name));
      p.params.push_back(std::move(ps));
    }
  }
  KAKEYA_TRY(load_argv(n, p, env_allowlist, what));
  return p;
}

}  // namespace

const ParamSpec* PresetSpec::find_param(std::string_view param_name) const {
  for (const auto& p : params) {
    if (p.name == param_name) return &p;
  }
  return nullptr;
}

const PresetSpec* PresetCatalog::find(std::string_view preset_name) const {
  for (const auto& p : presets_) {
    if (p.name == preset_name) return &p;
  }
  return nullptr;
}

Result<PresetCatalog> PresetCatalog::load_file(const std::filesystem::path& path) {
  KAKEYA_ASSIGN_OR_RETURN(YamlDocument doc, YamlDocument::load_file(path));
  return load(doc);
}

Result<PresetCatalog> PresetCatalog::load_string(std::string_view yaml, std::string_view origin) {
  KAKEYA_ASSIGN_OR_RETURN(YamlDocument doc, YamlDocument::parse(yaml, std::string(origin)));
  return load(doc);
}

Result<PresetCatalog> PresetCatalog::load(const YamlDocument& doc) {
  const YamlNode root = doc.root();
  KAKEYA_TRY(root.check_map("the catalog", {"version", "env_allowlist", "presets"}));
  KAKEYA_ASSIGN_OR_RETURN(YamlNode version_node, root.require("version", "the catalog"));
  KAKEYA_ASSIGN_OR_RETURN(int64_t version, version_node.integer("version"));
  if (version != 1) {
    return version_node.error(errc::kBadValue, "unsupported catalog version " + std::to_string(version) + " (expected 1)");
  }

  PresetCatalog cat;
  std::set<std::string> allow;
  const YamlNode allowlist = root.get("env_allowlist");
  KAKEYA_ASSIGN_OR_RETURN(cat.env_allowlist_, allowlist.string_list("env_allowlist"));
  for (std::size_t i = 0; i < cat.env_allowlist_.size(); ++i) {
    const auto& e = cat.env_allowlist_[i];
    if (!is_env_name(e)) {
      return allowlist[i].error(errc::kBadValue, "env_allowlist entry `" + e + "` must match " + std::string(kEnvNamePattern));
    }
    if (!allow.insert(e).second) return allowlist[i].error(errc::kBadValue, "duplicate env_allowlist entry `" + e + "`");
  }
  KAKEYA_ASSIGN_OR_RETURN(YamlNode presets, root.require("presets", "the catalog"));
  if (!presets.is_list()) return presets.error(errc::kBadType, "`presets` must be a list, got " + presets.describe());
  std::map<std::string, int> first_line;  // preset name -> line of its first definition
  for (std::size_t i = 0; i < presets.size(); ++i) {
    KAKEYA_ASSIGN_OR_RETURN(PresetSpec spec, load_preset(presets[i], allow));
    auto [it, inserted] = first_line.emplace(spec.name, presets[i].line());
    if (!inserted) {
      return presets[i].get("name").error(errc::kBadValue, "duplicate preset name `" + spec.name +
                                                               "` (first defined on line " + std::to_string(it->second) + ")");
    }
    cat.presets_.push_back(std::move(spec));
  }
  return cat;
}

}  // namespace kakeya::bridge
