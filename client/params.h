#pragma once
// Request parameters from the command line, typed per the preset catalog.
//
// `-p key=value` values arrive as strings; the request carries JSON typed per the param kind
// (DESIGN §2: strict typing, the runner re-validates). A value that starts with `-` (e.g.
// `-p flags=-rf`, `-p offset=-3`) is an ordinary value: it is never parsed as an option.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "bridge/catalog.h"
#include "bridge/result.h"

namespace kakeya::client {

// Converts the CLI text of one value to JSON per `spec.kind`:
//   int    -> JSON integer: optional '-' then decimal digits, int64 range ("5.0", "0x5" refused)
//   float  -> JSON number: decimal/scientific (std::from_chars), finite
//   bool   -> true/false (also accepted: 1/0, yes/no, on/off; ASCII case-insensitive)
//   enum, string -> the text itself, byte for byte (bounds are left to validate_params)
// Error `bad_param` names `params.<name>`, the kind and the text.
Result<nlohmann::json> parse_param_value(const bridge::ParamSpec& spec, std::string_view text);

// Builds the params object: first the object from `params_json` (--params-json; strict JSON,
// must be an object, values kept as given), then each `key=value` item (-p, split at the first
// '=') typed with parse_param_value, overriding --params-json. Errors: `bad_param` (no '=',
// empty key, untypable value, --params-json not an object or not valid JSON), `unknown_param`
// (a key the preset does not declare, listing the declared ones), `duplicate_param` (a key given
// twice with -p). Does not check bounds or fill defaults: see validate_params.
Result<nlohmann::json> build_params(const bridge::PresetSpec& preset, const std::vector<std::string>& items,
                                    const std::optional<std::string>& params_json);

}  // namespace kakeya::client
