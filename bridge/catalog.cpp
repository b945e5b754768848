// PresetCatalog loading: YAML -> validated PresetSpec list (see catalog.h for the file shape).
#include "bridge/catalog.h"

#include <cmath>
#include <fstream>
#include <set>
#include <sstream>

#include <yaml-cpp/yaml.h>

namespace kakeya::bridge {
namespace {

bool is_lower(char c) { return c >= 'a' && c <= 'z'; }
bool is_upper(char c) { return c >= 'A' && c <= 'Z'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }

bool valid_preset_name(std::string_view s) {
  if (s.size() < 2 || s.size() > 41 || !is_lower(s[0])) return false;
  for (char c : s) {
    if (!is_lower(c) && !is_digit(c) && c != '-') return false;
  }
  return true;
}

bool valid_param_name(std::string_view s) {
  if (s.empty() || s.size() > 40 || !is_lower(s[0])) return false;
  for (char c : s) {
    if (!is_lower(c) && !is_digit(c) && c != '_') return false;
  }
  return true;
}

bool valid_env_name(std::string_view s) {
  if (s.empty() || s.size() > 128 || is_digit(s[0])) return false;
  for (char c : s) {
    if (!is_upper(c) && !is_digit(c) && c != '_') return false;
  }
  return true;
}

bool valid_model_role(std::string_view s) {
  if (s.empty() || s.size() > 40 || !is_lower(s[0])) return false;
  for (char c : s) {
    if (!is_lower(c) && !is_digit(c) && c != '_' && c != '-') return false;
  }
  return true;
}

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

// Reads YAML nodes and turns every problem into `origin:line:col: reason`.
class Reader {
 public:
  explicit Reader(std::string origin) : origin_(std::move(origin)) {}

  Error err(const YAML::Node& at, const std::string& reason) const { return err(at.Mark(), reason); }
  Error err(const YAML::Mark& m, const std::string& reason) const {
    std::string where = origin_;
    if (m.line >= 0) where += ":" + std::to_string(m.line + 1) + ":" + std::to_string(m.column + 1);
    return make_error("bad_catalog", where + ": " + reason);
  }

  // Requires a mapping whose keys are unique scalars from `allowed`.
  Status check_map(const YAML::Node& n, const std::string& what, const std::set<std::string>& allowed) const {
    if (!n.IsMap()) return err(n, what + " must be a mapping");
    std::set<std::string> seen;
    for (const auto& kv : n) {
      if (!kv.first.IsScalar()) return err(kv.first, what + " has a non-scalar key");
      const std::string& k = kv.first.Scalar();
      if (!seen.insert(k).second) return err(kv.first, "duplicate key `" + k + "` in " + what);
      if (!allowed.empty() && !allowed.count(k)) return err(kv.first, "unknown key `" + k + "` in " + what);
    }
    return ok_status();
  }

  // Unique-key check for free-form maps (params, gate).
  Status check_unique_keys(const YAML::Node& n, const std::string& what) const { return check_map(n, what, {}); }

  Result<std::string> str(const YAML::Node& n, const std::string& what) const {
    if (!n.IsScalar()) return err(n, what + " must be a string" + hint_for(n));
    return n.Scalar();
  }

  // Plain (unquoted) scalar: quoted "5" is a string in YAML and not accepted as a number.
  bool plain(const YAML::Node& n) const { return n.IsScalar() && n.Tag() == "?"; }

  Result<int64_t> integer(const YAML::Node& n, const std::string& what) const {
    if (!plain(n) || !is_integer_text(n.Scalar())) return err(n, what + " must be an integer, got " + show(n));
    try {
      std::size_t used = 0;
      long long v = std::stoll(n.Scalar(), &used, 10);
      if (used != n.Scalar().size()) return err(n, what + " must be an integer, got " + show(n));
      return static_cast<int64_t>(v);
    } catch (const std::exception&) {
      return err(n, what + " is out of the 64-bit integer range: " + show(n));
    }
  }

  Result<double> number(const YAML::Node& n, const std::string& what) const {
    if (!plain(n)) return err(n, what + " must be a number, got " + show(n));
    const std::string& s = n.Scalar();
    char* end = nullptr;
    errno = 0;
    double v = std::strtod(s.c_str(), &end);
    bool looks_numeric = !s.empty() && (is_digit(s[0]) || s[0] == '-' || s[0] == '+' || s[0] == '.');
    if (!looks_numeric || end != s.c_str() + s.size() || errno == ERANGE || !std::isfinite(v)) {
      return err(n, what + " must be a finite number, got " + show(n));
    }
    return v;
  }

  Result<bool> boolean(const YAML::Node& n, const std::string& what) const {
    if (plain(n) && n.Scalar() == "true") return true;
    if (plain(n) && n.Scalar() == "false") return false;
    return err(n, what + " must be true or false, got " + show(n));
  }

  // A sequence of strings; null (an empty value) is an empty list.
  Result<std::vector<std::string>> str_list(const YAML::Node& n, const std::string& what) const {
    std::vector<std::string> out;
    if (n.IsNull()) return out;
    if (!n.IsSequence()) return err(n, what + " must be a list");
    for (std::size_t i = 0; i < n.size(); ++i) {
      KAKEYA_ASSIGN_OR_RETURN(std::string s, str(n[i], what + "[" + std::to_string(i) + "]"));
      out.push_back(std::move(s));
    }
    return out;
  }

  static std::string show(const YAML::Node& n) {
    if (n.IsScalar()) return n.Tag() == "!" ? "\"" + n.Scalar() + "\"" : "`" + n.Scalar() + "`";
    if (n.IsNull()) return "nothing (null)";
    return n.IsMap() ? "a mapping" : "a list";
  }

 private:
  static bool is_integer_text(const std::string& s) {
    std::size_t i = (s.size() > 1 && s[0] == '-') ? 1 : 0;
    if (i >= s.size()) return false;
    for (; i < s.size(); ++i) {
      if (!is_digit(s[i])) return false;
    }
    return true;
  }

  static std::string hint_for(const YAML::Node& n) {
    // `[/bin/sleep, {seconds}]` makes {seconds} a YAML flow mapping.
    if (n.IsMap()) return " (got a mapping; quote placeholders in YAML: \"{name}\")";
    if (n.IsSequence()) return " (got a list)";
    if (n.IsNull()) return " (got nothing)";
    return "";
  }

  std::string origin_;
};

Status check_default_in_bounds(const Reader& rd, const YAML::Node& at, const ParamSpec& p, const std::string& what) {
  const nlohmann::json& d = p.default_value;
  switch (p.kind) {
    case ParamKind::Int: {
      int64_t v = d.get<int64_t>();
      if (v < p.min_int || v > p.max_int) {
        return rd.err(at, what + " default " + std::to_string(v) + " is outside [" + std::to_string(p.min_int) +
                              ", " + std::to_string(p.max_int) + "]");
      }
      break;
    }
    case ParamKind::Float: {
      double v = d.get<double>();
      if (v < p.min_float || v > p.max_float) {
        return rd.err(at, what + " default " + d.dump() + " is outside [" + nlohmann::json(p.min_float).dump() +
                              ", " + nlohmann::json(p.max_float).dump() + "]");
      }
      break;
    }
    case ParamKind::Enum: {
      const std::string v = d.get<std::string>();
      bool found = false;
      for (const auto& x : p.values) found = found || x == v;
      if (!found) return rd.err(at, what + " default \"" + v + "\" is not one of its values");
      break;
    }
    case ParamKind::String: {
      const std::string v = d.get<std::string>();
      if (v.size() > p.max_length) return rd.err(at, what + " default is longer than max_length");
      auto m = p.regex->full_match(v);
      if (!m.ok()) return rd.err(at, what + " default: " + m.error().message);
      if (!m.value()) return rd.err(at, what + " default \"" + v + "\" does not match pattern " + p.pattern);
      break;
    }
    case ParamKind::Bool:
      break;
  }
  return ok_status();
}

Result<ParamSpec> load_param(const Reader& rd, const YAML::Node& key, const YAML::Node& n, const std::string& preset) {
  ParamSpec p;
  p.name = key.Scalar();
  const std::string what = "preset `" + preset + "` param `" + p.name + "`";
  if (!valid_param_name(p.name)) return rd.err(key, what + ": name must match ^[a-z][a-z0-9_]{0,39}$");
  KAKEYA_TRY(rd.check_map(n, what,
                          {"kind", "description", "min", "max", "values", "pattern", "max_length", "default",
                           "required"}));
  if (!n["kind"]) return rd.err(n, what + " needs `kind` (int, float, bool, enum or string)");
  KAKEYA_ASSIGN_OR_RETURN(std::string kind, rd.str(n["kind"], what + " kind"));
  std::set<std::string> allowed_extra;
  if (kind == "int") {
    p.kind = ParamKind::Int;
    allowed_extra = {"min", "max"};
  } else if (kind == "float") {
    p.kind = ParamKind::Float;
    allowed_extra = {"min", "max"};
  } else if (kind == "bool") {
    p.kind = ParamKind::Bool;
  } else if (kind == "enum") {
    p.kind = ParamKind::Enum;
    allowed_extra = {"values"};
  } else if (kind == "string") {
    p.kind = ParamKind::String;
    allowed_extra = {"pattern", "max_length"};
  } else {
    return rd.err(n["kind"], what + ": unknown kind `" + kind + "` (int, float, bool, enum, string)");
  }
  for (const char* k : {"min", "max", "values", "pattern", "max_length"}) {
    if (n[k] && !allowed_extra.count(k)) return rd.err(n[k], what + ": `" + k + "` does not apply to kind " + kind);
  }
  for (const auto& k : allowed_extra) {
    if (!n[k]) return rd.err(n, what + " (kind " + kind + ") needs `" + k + "`");
  }
  if (n["description"]) {
    KAKEYA_ASSIGN_OR_RETURN(p.description, rd.str(n["description"], what + " description"));
  }

  if (p.kind == ParamKind::Int) {
    KAKEYA_ASSIGN_OR_RETURN(p.min_int, rd.integer(n["min"], what + " min"));
    KAKEYA_ASSIGN_OR_RETURN(p.max_int, rd.integer(n["max"], what + " max"));
    if (p.min_int > p.max_int) return rd.err(n["max"], what + ": max " + std::to_string(p.max_int) + " < min " + std::to_string(p.min_int));
  } else if (p.kind == ParamKind::Float) {
    KAKEYA_ASSIGN_OR_RETURN(p.min_float, rd.number(n["min"], what + " min"));
    KAKEYA_ASSIGN_OR_RETURN(p.max_float, rd.number(n["max"], what + " max"));
    if (p.min_float > p.max_float) return rd.err(n["max"], what + ": max < min");
  } else if (p.kind == ParamKind::Enum) {
    KAKEYA_ASSIGN_OR_RETURN(p.values, rd.str_list(n["values"], what + " values"));
    if (p.values.empty()) return rd.err(n["values"], what + ": values must not be empty");
    std::set<std::string> seen;
    for (std::size_t i = 0; i < p.values.size(); ++i) {
      if (p.values[i].empty()) return rd.err(n["values"][i], what + ": enum values must not be empty");
      if (!seen.insert(p.values[i]).second) return rd.err(n["values"][i], what + ": duplicate enum value `" + p.values[i] + "`");
    }
  } else if (p.kind == ParamKind::String) {
    KAKEYA_ASSIGN_OR_RETURN(p.pattern, rd.str(n["pattern"], what + " pattern"));
    auto compiled = Pattern::compile(p.pattern);
    if (!compiled.ok()) return rd.err(n["pattern"], what + ": " + compiled.error().message);
    p.regex = std::make_shared<const Pattern>(std::move(compiled).value());
    KAKEYA_ASSIGN_OR_RETURN(int64_t max_len, rd.integer(n["max_length"], what + " max_length"));
    if (max_len < 1 || max_len > static_cast<int64_t>(kMaxStringParamLength)) {
      return rd.err(n["max_length"], what + ": max_length must be in 1.." + std::to_string(kMaxStringParamLength));
    }
    p.max_length = static_cast<std::size_t>(max_len);
  }

  bool has_default = static_cast<bool>(n["default"]);
  if (n["required"]) {
    KAKEYA_ASSIGN_OR_RETURN(p.required, rd.boolean(n["required"], what + " required"));
  }
  if (p.required && has_default) return rd.err(n["default"], what + ": `required: true` and `default` exclude each other");
  if (!p.required && !has_default) return rd.err(n, what + " needs a `default` or `required: true`");
  if (has_default) {
    const YAML::Node d = n["default"];
    const std::string dw = what + " default";
    switch (p.kind) {
      case ParamKind::Int: {
        KAKEYA_ASSIGN_OR_RETURN(int64_t v, rd.integer(d, dw));
        p.default_value = v;
        break;
      }
      case ParamKind::Float: {
        KAKEYA_ASSIGN_OR_RETURN(double v, rd.number(d, dw));
        p.default_value = v;
        break;
      }
      case ParamKind::Bool: {
        KAKEYA_ASSIGN_OR_RETURN(bool v, rd.boolean(d, dw));
        p.default_value = v;
        break;
      }
      case ParamKind::Enum:
      case ParamKind::String: {
        KAKEYA_ASSIGN_OR_RETURN(std::string v, rd.str(d, dw));
        p.default_value = v;
        break;
      }
    }
    KAKEYA_TRY(check_default_in_bounds(rd, d, p, what));
  }
  return p;
}

Result<PresetSpec> load_preset(const Reader& rd, const YAML::Node& n, const std::set<std::string>& env_allowlist) {
  KAKEYA_TRY(rd.check_map(n, "preset",
                          {"name", "description", "argv", "params", "timeout_s", "labels", "outputs", "env",
                           "idempotent", "gate", "models"}));
  PresetSpec p;
  if (!n["name"]) return rd.err(n, "preset needs `name`");
  KAKEYA_ASSIGN_OR_RETURN(p.name, rd.str(n["name"], "preset name"));
  if (!valid_preset_name(p.name)) return rd.err(n["name"], "preset name `" + p.name + "` must match ^[a-z][a-z0-9-]{1,40}$");
  const std::string what = "preset `" + p.name + "`";
  for (const char* k : {"description", "argv", "timeout_s"}) {
    if (!n[k]) return rd.err(n, what + " needs `" + k + "`");
  }
  KAKEYA_ASSIGN_OR_RETURN(p.description, rd.str(n["description"], what + " description"));
  if (p.description.empty()) return rd.err(n["description"], what + ": description must not be empty");

  KAKEYA_ASSIGN_OR_RETURN(p.timeout_s, rd.integer(n["timeout_s"], what + " timeout_s"));
  if (p.timeout_s < 1 || p.timeout_s > kMaxTimeoutSeconds) {
    return rd.err(n["timeout_s"], what + ": timeout_s " + std::to_string(p.timeout_s) + " is outside 1.." +
                                      std::to_string(kMaxTimeoutSeconds));
  }

  if (n["labels"]) {
    KAKEYA_ASSIGN_OR_RETURN(p.labels, rd.str_list(n["labels"], what + " labels"));
    for (std::size_t i = 0; i < p.labels.size(); ++i) {
      if (!valid_label(p.labels[i])) return rd.err(n["labels"][i], what + ": invalid label `" + p.labels[i] + "`");
    }
  }
  if (n["idempotent"]) {
    KAKEYA_ASSIGN_OR_RETURN(p.idempotent, rd.boolean(n["idempotent"], what + " idempotent"));
  }

  if (n["outputs"]) {
    KAKEYA_ASSIGN_OR_RETURN(p.outputs, rd.str_list(n["outputs"], what + " outputs"));
    std::set<std::string> seen;
    for (std::size_t i = 0; i < p.outputs.size(); ++i) {
      if (!valid_output_path(p.outputs[i])) {
        return rd.err(n["outputs"][i], what + ": output `" + p.outputs[i] +
                                           "` must be a relative path of [A-Za-z0-9._-] segments (no `..`, not absolute)");
      }
      if (!seen.insert(p.outputs[i]).second) return rd.err(n["outputs"][i], what + ": duplicate output `" + p.outputs[i] + "`");
    }
  }
  if (n["env"]) {
    KAKEYA_ASSIGN_OR_RETURN(p.env, rd.str_list(n["env"], what + " env"));
    for (std::size_t i = 0; i < p.env.size(); ++i) {
      if (!env_allowlist.count(p.env[i])) {
        return rd.err(n["env"][i], what + ": env `" + p.env[i] + "` is not in env_allowlist");
      }
    }
  }
  if (n["models"]) {
    KAKEYA_ASSIGN_OR_RETURN(p.models, rd.str_list(n["models"], what + " models"));
    std::set<std::string> seen;
    for (std::size_t i = 0; i < p.models.size(); ++i) {
      if (!valid_model_role(p.models[i])) return rd.err(n["models"][i], what + ": invalid model role `" + p.models[i] + "`");
      if (!seen.insert(p.models[i]).second) return rd.err(n["models"][i], what + ": duplicate model role `" + p.models[i] + "`");
    }
  }
  if (n["gate"] && !n["gate"].IsNull()) {
    const YAML::Node g = n["gate"];
    KAKEYA_TRY(rd.check_unique_keys(g, what + " gate"));
    for (const auto& kv : g) {
      const std::string out = kv.first.Scalar();
      bool declared = false;
      for (const auto& o : p.outputs) declared = declared || o == out;
      if (!declared) return rd.err(kv.first, what + ": gate report `" + out + "` is not a declared output");
      KAKEYA_ASSIGN_OR_RETURN(auto rules, rd.str_list(kv.second, what + " gate " + out));
      for (std::size_t i = 0; i < rules.size(); ++i) {
        if (!valid_rule_code(rules[i])) return rd.err(kv.second[i], what + ": invalid gate rule code `" + rules[i] + "`");
      }
      p.gate[out] = std::move(rules);
    }
  }

  if (n["params"] && !n["params"].IsNull()) {
    const YAML::Node params = n["params"];
    KAKEYA_TRY(rd.check_unique_keys(params, what + " params"));
    for (const auto& kv : params) {
      KAKEYA_ASSIGN_OR_RETURN(ParamSpec ps, load_param(rd, kv.first, kv.second, p.name));
      p.params.push_back(std::move(ps));
    }
  }

  // argv: literal argv[0], whole-token placeholders, every reference declared.
  const YAML::Node argv = n["argv"];
  KAKEYA_ASSIGN_OR_RETURN(p.argv, rd.str_list(argv, what + " argv"));
  if (p.argv.empty()) return rd.err(argv, what + ": argv must not be empty");
  std::set<std::string> used_params;
  for (std::size_t i = 0; i < p.argv.size(); ++i) {
    auto tok = parse_argv_token(p.argv[i]);
    if (!tok.ok()) return rd.err(argv[i], what + " argv[" + std::to_string(i) + "]: " + tok.error().message);
    if (i == 0 && tok->kind != ArgvToken::Kind::Literal) {
      return rd.err(argv[i], what + ": argv[0] must be a literal program, not a placeholder");
    }
    switch (tok->kind) {
      case ArgvToken::Kind::Param:
        if (!p.find_param(tok->name)) {
          return rd.err(argv[i], what + ": argv placeholder {" + tok->name + "} is not a declared param");
        }
        used_params.insert(tok->name);
        break;
      case ArgvToken::Kind::Env:
        if (!env_allowlist.count(tok->name)) {
          return rd.err(argv[i], what + ": argv uses env `" + tok->name + "` which is not in env_allowlist");
        }
        break;
      case ArgvToken::Kind::Model: {
        bool declared = false;
        for (const auto& m : p.models) declared = declared || m == tok->name;
        if (!declared) return rd.err(argv[i], what + ": argv uses model role `" + tok->name + "` not listed in models");
        break;
      }
      default:
        break;
    }
  }
  for (const auto& ps : p.params) {
    if (!used_params.count(ps.name)) return rd.err(n["params"][ps.name], what + ": param `" + ps.name + "` is declared but not used in argv");
  }
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
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error("bad_catalog", path.string() + ": cannot read the preset catalog");
  std::ostringstream ss;
  ss << in.rdbuf();
  return load_string(ss.str(), path.string());
}

Result<PresetCatalog> PresetCatalog::load_string(std::string_view yaml, std::string_view origin) {
  Reader rd{std::string(origin)};
  YAML::Node loaded;
  try {
    loaded = YAML::Load(std::string(yaml));
  } catch (const YAML::Exception& e) {
    return rd.err(e.mark, "invalid YAML: " + e.msg);
  }
  const YAML::Node& root = loaded;  // const: lookups never insert
  try {
    KAKEYA_TRY(rd.check_map(root, "the catalog", {"version", "env_allowlist", "presets"}));
    if (!root["version"]) return rd.err(root, "the catalog needs `version: 1`");
    KAKEYA_ASSIGN_OR_RETURN(int64_t version, rd.integer(root["version"], "version"));
    if (version != 1) return rd.err(root["version"], "unsupported catalog version " + std::to_string(version) + " (expected 1)");

    PresetCatalog cat;
    std::set<std::string> allow;
    if (root["env_allowlist"]) {
      KAKEYA_ASSIGN_OR_RETURN(cat.env_allowlist_, rd.str_list(root["env_allowlist"], "env_allowlist"));
      for (std::size_t i = 0; i < cat.env_allowlist_.size(); ++i) {
        const auto& e = cat.env_allowlist_[i];
        if (!valid_env_name(e)) return rd.err(root["env_allowlist"][i], "env_allowlist entry `" + e + "` must match ^[A-Z_][A-Z0-9_]*$");
        if (!allow.insert(e).second) return rd.err(root["env_allowlist"][i], "duplicate env_allowlist entry `" + e + "`");
      }
    }
    if (!root["presets"]) return rd.err(root, "the catalog needs a `presets` list");
    const YAML::Node presets = root["presets"];
    if (!presets.IsSequence()) return rd.err(presets, "`presets` must be a list");
    std::map<std::string, int> first_line;
    for (const auto& pn : presets) {
      KAKEYA_ASSIGN_OR_RETURN(PresetSpec spec, load_preset(rd, pn, allow));
      auto [it, inserted] = first_line.emplace(spec.name, pn.Mark().line + 1);
      if (!inserted) {
        return rd.err(pn["name"], "duplicate preset name `" + spec.name + "` (first defined on line " +
                                      std::to_string(it->second) + ")");
      }
      cat.presets_.push_back(std::move(spec));
    }
    return cat;
  } catch (const YAML::Exception& e) {
    return rd.err(e.mark, "invalid catalog: " + e.msg);
  }
}

}  // namespace kakeya::bridge
