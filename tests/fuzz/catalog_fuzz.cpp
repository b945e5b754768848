// libFuzzer target: the preset catalog loader (bridge/catalog.h over bridge/yaml_strict.h) on
// arbitrary bytes. Any crash, sanitizer report or exception is a bug: every malformed catalog
// must become an Error. A catalog that loads must be usable as loaded: its defaults pass the
// request-time check (validate_params on {} fails only for required params) and, with every
// env name and model role supplied, its argv resolves; every string in it is well-formed UTF-8.

#include <cstddef>
#include <cstdint>
#include <string_view>

#include <nlohmann/json.hpp>

#include "bridge/catalog.h"

using kakeya::bridge::ArgvContext;
using kakeya::bridge::PresetCatalog;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto cat = PresetCatalog::load_string(text, "fuzz.yaml");
  if (!cat.ok()) {
    if (!cat.error().message.starts_with("fuzz.yaml")) __builtin_trap();  // every message names the origin
    return 0;
  }
  for (const auto& preset : cat->presets()) {
    if (cat->find(preset.name) != &preset) __builtin_trap();
    auto params = kakeya::bridge::validate_params(preset, nlohmann::json::object());
    if (!params.ok()) {
      bool has_required = false;
      for (const auto& p : preset.params) has_required = has_required || p.required;
      if (!has_required || params.error().code != kakeya::errc::kMissingParam) __builtin_trap();
      continue;
    }
    ArgvContext ctx;
    ctx.params = &params.value();
    for (const auto& name : cat->env_allowlist()) ctx.env[name] = "value";
    for (const auto& role : preset.models) ctx.models[role] = "/models/" + role + ".gguf";
    ctx.out_dir = "/out";
    auto argv = kakeya::bridge::resolve_argv(preset, ctx);
    if (!argv.ok() || argv->size() != preset.argv.size()) __builtin_trap();
    (void)to_json(preset).dump();  // strict: the reader only lets well-formed UTF-8 through
  }
  return 0;
}
