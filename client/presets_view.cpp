#include "client/presets_view.h"

#include <fmt/format.h>

#include "bridge/json_text.h"

namespace kakeya::client {
namespace {

std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ", ") + s;
  return out.empty() ? "-" : out;
}

}  // namespace

std::string format_param_kind(const bridge::ParamSpec& p) {
  switch (p.kind) {
    case bridge::ParamKind::Int:
      return fmt::format("int {}..{}", p.min_int, p.max_int);
    case bridge::ParamKind::Float:
      return fmt::format("float {}..{}", p.min_float, p.max_float);
    case bridge::ParamKind::Bool:
      return "bool";
    case bridge::ParamKind::Enum: {
      std::string v;
      for (const auto& s : p.values) v += (v.empty() ? "" : "|") + s;
      return "enum {" + v + "}";
    }
    case bridge::ParamKind::String:
      return fmt::format("string /{}/ <={} bytes", p.pattern, p.max_length);
  }
  return "?";
}

std::string format_preset(const bridge::PresetSpec& preset) {
  std::string out = preset.name + "\n  " + preset.description + "\n";
  if (preset.params.empty()) {
    out += "  params:  (none)\n";
  } else {
    out += "  params:\n";
    for (const auto& p : preset.params) {
      std::string dflt = p.required ? "required" : "default " + bridge::to_json_text(p.default_value);
      out += fmt::format("    {:<16} {:<28} {}\n", p.name, format_param_kind(p), dflt);
      if (!p.description.empty()) out += fmt::format("    {:<16} {}\n", "", p.description);
    }
  }
  out += "  labels:  " + join(preset.labels) + "\n";
  out += "  outputs: " + join(preset.outputs) + "\n";
  out += fmt::format("  timeout: {} s\n", preset.timeout_s);
  return out;
}

}  // namespace kakeya::client
