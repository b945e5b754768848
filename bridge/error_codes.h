#pragma once
// The error codes of Error::code (bridge/result.h), one named constant each. The strings are
// what goes on the wire (CLI JSON output, rejection reasons); code compares constants.

namespace kakeya::errc {

// Reading documents (YAML, JSON).
inline constexpr char kIo[] = "io";                        // a file cannot be read or written
inline constexpr char kTooLarge[] = "too_large";           // above a size or depth limit, before parsing
inline constexpr char kParseError[] = "parse_error";       // not YAML / not JSON at all
inline constexpr char kUnknownKey[] = "unknown_key";       // a key the format does not declare
inline constexpr char kDuplicateKey[] = "duplicate_key";   // a key given twice in one mapping
inline constexpr char kMissingKey[] = "missing_key";       // a required key is absent
inline constexpr char kBadType[] = "bad_type";             // right key, wrong type
inline constexpr char kOutOfRange[] = "out_of_range";      // a number outside its bounds
inline constexpr char kBadValue[] = "bad_value";           // right type, invalid value
inline constexpr char kSchemaViolation[] = "schema_violation";  // fails its manifests/schemas/ schema

// Quantities.
inline constexpr char kBadDuration[] = "bad_duration";

}  // namespace kakeya::errc
