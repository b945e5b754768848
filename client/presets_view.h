#pragma once
// Rendering the preset catalog for `kakeya presets`.

#include <string>

#include <nlohmann/json.hpp>

#include "bridge/catalog.h"

namespace kakeya::client {

// A block per preset: name, description, params (kind, bounds, default or "required"),
// labels, outputs, timeout.
std::string format_preset(const bridge::PresetSpec& preset);

// "int 1..64" / "float 0..1" / "enum {a|b}" / "string /re/ <=N bytes" / "bool".
std::string format_param_kind(const bridge::ParamSpec& spec);

}  // namespace kakeya::client
