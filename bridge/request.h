#pragma once
// The request manifest: `.kakeya/request.json` on a request branch (DESIGN.md §2).
//
// Shape (every key required, no others; duplicate keys rejected):
//   {
//     "schema_version": 1,                     JSON integer 1 (not 1.0, not "1", not true)
//     "preset": "env-probe",                   ^[a-z][a-z0-9-]{1,40}$
//     "params": {"steps": 8},                  object; values are JSON scalars (never null),
//                                              typed per the preset catalog (validate_params)
//     "nonce": "k3x9q2m7a1b4",                 ^[a-z0-9][a-z0-9-]{3,63}$
//     "requested_by": "alice@example.com",     informational string (<= 256 bytes)
//     "created_at": "2024-05-01T12:00:00Z",    RFC 3339 date-time
//     "client": {"name": "kakeya", "version": "0.1.0"}   exactly these two strings
//   }
// JSON Schema: manifests/schemas/request.schema.json.

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "bridge/result.h"

namespace kakeya::bridge {

inline constexpr int kRequestSchemaVersion = 1;

struct RequestManifest {
  int schema_version = kRequestSchemaVersion;
  std::string preset;
  nlohmann::json params = nlohmann::json::object();  // always an object
  std::string nonce;
  std::string requested_by;
  std::string created_at;  // RFC 3339
  struct Client {
    std::string name;
    std::string version;
  } client;
};

// Parses and validates request.json text. Errors:
//   too_large     more than kMaxRequestBytes (bridge/limits.h), checked before parsing
//   parse_error / duplicate_key / too_deep  (from parse_json_strict)
//   unknown_key   a key not listed above (names it, e.g. `client.extra`)
//   missing_key   a required key is absent
//   bad_type      wrong JSON type (names the field and the value)
//   bad_value     right type, invalid value (pattern, schema_version != 1, RFC 3339, null param)
//   schema_violation  passes the checks above but not request.schema.json (bridge/json_schema.h;
//                 the two are kept in agreement by the tests, so this names a drift)
Result<RequestManifest> parse_request(std::string_view json_text);

// Validates an in-memory manifest with the same rules as parse_request (except JSON syntax), and
// that every string is well-formed UTF-8 (a parsed document always is).
Status validate_request(const RequestManifest& manifest);

// Pretty JSON (2-space indent, trailing newline) in a fixed key order:
// schema_version, preset, params (keys sorted), nonce, requested_by, created_at, client.
// parse_request(serialize_request(m)) round-trips.
std::string serialize_request(const RequestManifest& manifest);

// A fresh random nonce: 12 characters of [a-z0-9] from std::random_device (the OS CSPRNG
// on Linux/macOS), uniformly distributed.
std::string new_nonce();

// Current UTC time as RFC 3339 with seconds and `Z`, e.g. "2024-05-01T12:00:00Z".
std::string now_rfc3339();

// RFC 3339 `date-time` (section 5.6): YYYY-MM-DDTHH:MM:SS[.frac](Z|+HH:MM|-HH:MM), with
// calendar-valid dates (leap years), hour <= 23, minute <= 59, second <= 60, and 1..9 fraction
// digits (RFC 3339 sets no limit; nanoseconds are the finest any writer uses).
// `T` and `Z` may be lower case (RFC 3339 §5.6 NOTE).
bool is_rfc3339(std::string_view text);

// True when `nonce` matches ^[a-z0-9][a-z0-9-]{3,63}$.
bool is_valid_nonce(std::string_view nonce);

// True when `name` matches the preset-name pattern ^[a-z][a-z0-9-]{1,40}$.
bool is_valid_preset_name(std::string_view name);

}  // namespace kakeya::bridge
