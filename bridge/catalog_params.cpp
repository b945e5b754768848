// Request-time use of a PresetSpec: parameter validation, argv placeholder substitution,
// and the JSON view of a preset.
#include <charconv>
#include <cmath>

#include "bridge/catalog.h"
#include "bridge/error_codes.h"
#include "bridge/json_strict.h"
#include "bridge/names.h"

namespace kakeya::bridge {
namespace {

using nlohmann::json;

std::string field(const std::string& name) { return json_path_append_key("params", name); }

std::string format_double(double v) {
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, res.ptr);
}

const char* json_kind(const json& v) {
  if (v.is_number_integer()) return "integer";
  if (v.is_number_float()) return "number";
  return v.type_name();
}

Error type_error(const std::string& name, const json& v, std::string_view expected) {
  return make_error(errc::kBadType, "`" + name + "` must be " + std::string(expected) + ", got " +
                                    json_kind(v) + " " + json_excerpt(v));
}

}  // namespace

Result<ParamValue> validate_param_value(const ParamSpec& p, const nlohmann::json& v, std::string_view field_name) {
  const std::string name(field_name);
  ParamValue out;
  out.kind = p.kind;
  switch (p.kind) {
    case ParamKind::Int: {
      if (!v.is_number_integer()) return type_error(name, v, "a JSON integer");
      if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) {
        return make_error(errc::kOutOfRange, "`" + name + "` = " + json_excerpt(v) + " is above max " +
                                               std::to_string(p.max_int));
      }
      int64_t x = v.get<int64_t>();
      if (x < p.min_int) {
        return make_error(errc::kOutOfRange, "`" + name + "` = " + std::to_string(x) + " is below min " +
                                               std::to_string(p.min_int));
      }
      if (x > p.max_int) {
        return make_error(errc::kOutOfRange, "`" + name + "` = " + std::to_string(x) + " is above max " +
                                               std::to_string(p.max_int));
      }
      out.value = x;
      return out;
    }
    case ParamKind::Float: {
      if (!v.is_number()) return type_error(name, v, "a JSON number");
      double x = v.get<double>();
      if (!std::isfinite(x)) return make_error(errc::kBadValue, "`" + name + "` = " + json_excerpt(v) + " is not finite");
      if (x < p.min_float) {
        return make_error(errc::kOutOfRange, "`" + name + "` = " + format_double(x) + " is below min " +
                                               format_double(p.min_float));
      }
      if (x > p.max_float) {
        return make_error(errc::kOutOfRange, "`" + name + "` = " + format_double(x) + " is above max " +
                                               format_double(p.max_float));
      }
      out.value = x;
      return out;
    }
    case ParamKind::Bool:
      if (!v.is_boolean()) return type_error(name, v, "true or false");
      out.value = v.get<bool>();
      return out;
    case ParamKind::Enum: {
      if (!v.is_string()) return type_error(name, v, "a JSON string");
      std::string s = v.get<std::string>();
      for (const auto& allowed : p.values) {
        if (allowed == s) {
          out.value = s;
          return out;
        }
      }
      std::string list;
      for (const auto& allowed : p.values) list += (list.empty() ? "" : ", ") + allowed;
      return make_error(errc::kBadValue, "`" + name + "` = " + json_excerpt(v) + " is not one of: " + list);
    }
    case ParamKind::String: {
      if (!v.is_string()) return type_error(name, v, "a JSON string");
      std::string s = v.get<std::string>();
      if (s.size() > p.max_length) {
        return make_error(errc::kOutOfRange, "`" + name + "` = " + json_excerpt(v) + " is " +
                                               std::to_string(s.size()) + " bytes, above max_length " +
                                               std::to_string(p.max_length));
      }
      if (s.find('\0') != std::string::npos) {
        return make_error(errc::kBadValue, "`" + name + "` = " + json_excerpt(v) + " contains a NUL byte");
      }
      auto matched = p.regex->full_match(s);
      if (!matched.ok()) {
        return make_error(errc::kBadValue, "`" + name + "` = " + json_excerpt(v) + ": " + matched.error().message);
      }
      if (!matched.value()) {
        return make_error(errc::kBadValue, "`" + name + "` = " + json_excerpt(v) + " does not match pattern " +
                                           p.pattern);
      }
      out.value = std::move(s);
      return out;
    }
  }
  return make_error(errc::kBadValue, "`" + name + "`: unknown kind");
}

const char* to_string(ParamKind kind) {
  switch (kind) {
    case ParamKind::Int: return "int";
    case ParamKind::Float: return "float";
    case ParamKind::Bool: return "bool";
    case ParamKind::Enum: return "enum";
    case ParamKind::String: return "string";
  }
  return "unknown";
}

std::string ParamValue::to_arg() const {
  if (auto* i = std::get_if<int64_t>(&value)) return std::to_string(*i);
  if (auto* d = std::get_if<double>(&value)) return format_double(*d);
  if (auto* b = std::get_if<bool>(&value)) return *b ? "true" : "false";
  return std::get<std::string>(value);
}

nlohmann::json ParamValue::to_json() const {
  return std::visit([](const auto& x) { return json(x); }, value);
}

const ParamValue* ResolvedParams::find(std::string_view name) const {
  auto it = values.find(std::string(name));
  return it == values.end() ? nullptr : &it->second;
}

nlohmann::json ResolvedParams::to_json() const {
  json out = json::object();
  for (const auto& [k, v] : values) out[k] = v.to_json();
  return out;
}

Result<ArgvToken> parse_argv_token(std::string_view t) {
  auto inner = [&](std::string_view prefix) -> std::string_view {
    return t.substr(prefix.size(), t.size() - prefix.size() - 1);
  };
  if (t == "${OUT}") return ArgvToken{ArgvToken::Kind::Out, ""};
  if (t.size() > 7 && t.substr(0, 6) == "${ENV:" && t.back() == '}') {
    std::string_view name = inner("${ENV:");
    if (is_env_name(name)) return ArgvToken{ArgvToken::Kind::Env, std::string(name)};
    return make_error(errc::kBadPlaceholder,
                      "bad env name in `" + std::string(t) + "` (expected " + std::string(kEnvNamePattern) + ")");
  }
  if (t.size() > 9 && t.substr(0, 8) == "${MODEL:" && t.back() == '}') {
    std::string_view role = inner("${MODEL:");
    if (is_model_role(role)) return ArgvToken{ArgvToken::Kind::Model, std::string(role)};
    return make_error(errc::kBadPlaceholder,
                      "bad model role in `" + std::string(t) + "` (expected " + std::string(kModelRolePattern) + ")");
  }
  if (t.size() > 2 && t.front() == '{' && t.back() == '}') {
    std::string_view name = inner("{");
    if (is_param_name(name)) return ArgvToken{ArgvToken::Kind::Param, std::string(name)};
    return make_error(errc::kBadPlaceholder,
                      "bad param name in `" + std::string(t) + "` (expected " + std::string(kParamNamePattern) + ")");
  }
  if (t.find('{') != std::string_view::npos || t.find('}') != std::string_view::npos) {
    return make_error(errc::kBadPlaceholder, "`" + std::string(t) +
                                             "` mixes a placeholder with other text or is not a known placeholder; "
                                             "placeholders must be whole argv tokens ({param}, ${ENV:NAME}, "
                                             "${MODEL:role}, ${OUT})");
  }
  return ArgvToken{ArgvToken::Kind::Literal, std::string(t)};
}

Result<ResolvedParams> validate_params(const PresetSpec& preset, const nlohmann::json& params) {
  if (!params.is_object()) {
    return make_error(errc::kBadType, "`params` must be an object, got " + json_excerpt(params));
  }
  for (const auto& [k, v] : params.items()) {
    if (!preset.find_param(k)) {
      std::string known;
      for (const auto& p : preset.params) known += (known.empty() ? "" : ", ") + p.name;
      return make_error(errc::kUnknownParam, "`" + field(k) + "` is not a parameter of preset " + preset.name +
                                             " (known: " + (known.empty() ? "none" : known) + ")");
    }
  }
  ResolvedParams out;
  for (const auto& p : preset.params) {
    auto it = params.find(p.name);
    if (it == params.end()) {
      if (p.required) {
        return make_error(errc::kMissingParam, "`" + field(p.name) + "` is required by preset " + preset.name);
      }
      KAKEYA_ASSIGN_OR_RETURN(ParamValue dv, validate_param_value(p, p.default_value, field(p.name)));
      out.values.emplace(p.name, std::move(dv));
      continue;
    }
    if (it->is_null()) {
      return make_error(errc::kBadType, "`" + field(p.name) + "` is null; omit it to use the default");
    }
    KAKEYA_ASSIGN_OR_RETURN(ParamValue v, validate_param_value(p, *it, field(p.name)));
    out.values.emplace(p.name, std::move(v));
  }
  return out;
}

Result<std::vector<std::string>> resolve_argv(const PresetSpec& preset, const ArgvContext& ctx) {
  std::vector<std::string> argv;
  argv.reserve(preset.argv.size());
  for (const auto& raw : preset.argv) {
    KAKEYA_ASSIGN_OR_RETURN(ArgvToken tok, parse_argv_token(raw));
    switch (tok.kind) {
      case ArgvToken::Kind::Literal:
        argv.push_back(std::move(tok.name));
        break;
      case ArgvToken::Kind::Param: {
        const ParamValue* v = ctx.params ? ctx.params->find(tok.name) : nullptr;
        if (!v) {
          return make_error(errc::kMissingParam, "preset " + preset.name + " argv needs param `" + tok.name +
                                                 "` but it was not resolved (call validate_params first)");
        }
        argv.push_back(v->to_arg());
        break;
      }
      case ArgvToken::Kind::Env: {
        auto it = ctx.env.find(tok.name);
        if (it == ctx.env.end()) {
          return make_error(errc::kMissingEnv, "preset " + preset.name + " needs environment variable " + tok.name +
                                               " on the runner, and it is not set");
        }
        argv.push_back(it->second);
        break;
      }
      case ArgvToken::Kind::Model: {
        auto it = ctx.models.find(tok.name);
        if (it == ctx.models.end() || it->second.empty()) {
          return make_error(errc::kMissingModel, "preset " + preset.name + " needs model role `" + tok.name +
                                                 "`: set models." + tok.name +
                                                 " in the runner config or install it under ~/.kakeya/models/");
        }
        argv.push_back(it->second);
        break;
      }
      case ArgvToken::Kind::Out:
        if (ctx.out_dir.empty()) {
          return make_error(errc::kMissingOutDir, "preset " + preset.name + " uses ${OUT} but no output directory was given");
        }
        argv.push_back(ctx.out_dir);
        break;
    }
  }
  return argv;
}

nlohmann::json to_json(const PresetSpec& p) {
  json params = json::object();
  for (const auto& ps : p.params) {
    json j = {{"kind", to_string(ps.kind)}, {"description", ps.description}, {"required", ps.required}};
    if (!ps.required) j["default"] = ps.default_value;
    switch (ps.kind) {
      case ParamKind::Int:
        j["min"] = ps.min_int;
        j["max"] = ps.max_int;
        break;
      case ParamKind::Float:
        j["min"] = ps.min_float;
        j["max"] = ps.max_float;
        break;
      case ParamKind::Enum:
        j["values"] = ps.values;
        break;
      case ParamKind::String:
        j["pattern"] = ps.pattern;
        j["max_length"] = ps.max_length;
        break;
      case ParamKind::Bool:
        break;
    }
    params[ps.name] = std::move(j);
  }
  return json{{"name", p.name},       {"description", p.description}, {"argv", p.argv},
              {"params", params},     {"timeout_s", p.timeout_s},     {"labels", p.labels},
              {"outputs", p.outputs}, {"env", p.env},                 {"idempotent", p.idempotent},
              {"gate", p.gate},       {"models", p.models}};
}

}  // namespace kakeya::bridge
