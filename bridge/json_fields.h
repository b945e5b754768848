#pragma once
// Field checks shared by the strict readers of bus documents (request.json, cancel.json): one
// wording for every type, key and value error, each naming the field and showing the value
// escaped and bounded (json_excerpt). `path` arguments are key paths as built by
// json_path_append_key ("" = the document root).

#include <cstddef>
#include <initializer_list>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "bridge/result.h"

namespace kakeya::bridge {

// "integer" / "number" for JSON numbers, nlohmann's type name otherwise.
const char* json_type_name(const nlohmann::json& v);

// bad_type: "`<field>` must be <expected>, got <type> <excerpt>".
Error field_type_error(std::string_view field, std::string_view expected, const nlohmann::json& v);
// bad_value: "`<field>` = <excerpt> is invalid: <why>".
Error field_value_error(std::string_view field, const nlohmann::json& v, std::string_view why);

// `obj` has exactly the `keys` (all required): unknown_key / missing_key naming the key path.
Status check_exact_keys(const nlohmann::json& obj, std::string_view path, std::initializer_list<const char*> keys);

// obj[key] as a string (bad_type otherwise). REQUIRES: obj contains key.
Result<std::string> string_field(const nlohmann::json& obj, std::string_view path, const char* key);

// An informational one-line string: well-formed UTF-8, at most `max_bytes`, no control
// characters (C0, DEL). bad_value naming `field` otherwise.
Status check_info_string(std::string_view field, const std::string& s, std::size_t max_bytes);

// `text` of document `what` (e.g. ".kakeya/request.json") is at most `max_bytes`: checked
// before parsing. Error `too_large` naming the document and both sizes.
Status check_document_size(std::string_view what, std::string_view text, std::size_t max_bytes);

}  // namespace kakeya::bridge
