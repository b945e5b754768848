#include "client/params.h"

#include <charconv>
#include <cmath>
#include <set>

#include "bridge/json_strict.h"

namespace kakeya::client {
namespace {

Error bad(const bridge::ParamSpec& spec, std::string_view text, std::string_view why) {
  return make_error(errc::kBadParam, "params." + spec.name + " (" + bridge::to_string(spec.kind) + "): '" +
                                     std::string(text) + "' " + std::string(why));
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

std::string declared_names(const bridge::PresetSpec& preset) {
  std::string out;
  for (const auto& p : preset.params) out += (out.empty() ? "" : ", ") + p.name;
  return out.empty() ? "none" : out;
}

}  // namespace

Result<nlohmann::json> parse_param_value(const bridge::ParamSpec& spec, std::string_view text) {
  switch (spec.kind) {
    case bridge::ParamKind::Int: {
      if (text.empty()) return bad(spec, text, "is not an integer");
      int64_t v = 0;
      const char* first = text.data();
      const char* last = text.data() + text.size();
      auto [ptr, ec] = std::from_chars(first, last, v, 10);
      if (ec == std::errc::result_out_of_range) return bad(spec, text, "is out of the 64-bit integer range");
      if (ec != std::errc() || ptr != last) return bad(spec, text, "is not an integer");
      return nlohmann::json(v);
    }
    case bridge::ParamKind::Float: {
      double v = 0;
      const char* first = text.data();
      const char* last = text.data() + text.size();
      auto [ptr, ec] = std::from_chars(first, last, v, std::chars_format::general);
      if (text.empty() || ec != std::errc() || ptr != last) return bad(spec, text, "is not a number");
      if (!std::isfinite(v)) return bad(spec, text, "is not finite");
      return nlohmann::json(v);
    }
    case bridge::ParamKind::Bool: {
      std::string t = lower(text);
      if (t == "true" || t == "1" || t == "yes" || t == "on") return nlohmann::json(true);
      if (t == "false" || t == "0" || t == "no" || t == "off") return nlohmann::json(false);
      return bad(spec, text, "is not a boolean (true/false)");
    }
    case bridge::ParamKind::Enum:
    case bridge::ParamKind::String:
      return nlohmann::json(std::string(text));
  }
  return bad(spec, text, "has an unknown kind");
}

Result<nlohmann::json> build_params(const bridge::PresetSpec& preset, const std::vector<std::string>& items,
                                    const std::optional<std::string>& params_json) {
  nlohmann::json params = nlohmann::json::object();
  if (params_json) {
    auto parsed = bridge::parse_json_strict(*params_json);
    if (!parsed.ok()) {
      return make_error(errc::kBadParam, "--params-json: " + parsed.error().message);
    }
    if (!parsed->is_object()) {
      return make_error(errc::kBadParam, "--params-json must be a JSON object, got " + bridge::json_excerpt(*parsed));
    }
    params = std::move(*parsed);
  }
  std::set<std::string> seen;
  for (const auto& item : items) {
    std::size_t eq = item.find('=');
    if (eq == std::string::npos) {
      return make_error(errc::kBadParam, "-p '" + item + "': expected key=value");
    }
    std::string key = item.substr(0, eq);
    if (key.empty()) return make_error(errc::kBadParam, "-p '" + item + "': empty key");
    const bridge::ParamSpec* spec = preset.find_param(key);
    if (spec == nullptr) {
      return make_error(errc::kUnknownParam, "params." + key + ": preset '" + preset.name +
                                             "' has no such parameter (declared: " + declared_names(preset) + ")");
    }
    if (!seen.insert(key).second) {
      return make_error(errc::kDuplicateParam, "params." + key + " given twice with -p");
    }
    KAKEYA_ASSIGN_OR_RETURN(params[key], parse_param_value(*spec, std::string_view(item).substr(eq + 1)));
  }
  return params;
}

}  // namespace kakeya::client
