#pragma once
// Strict JSON parsing for documents that cross the git bus (request.json, status.json).
//
// nlohmann::json::parse silently keeps the last of duplicate keys; a request with two
// "steps" keys could then mean different things to the client, the runner and a human
// reading the branch. parse_json_strict rejects such documents.

#include <cstddef>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "bridge/result.h"

namespace kakeya::bridge {

// Maximum nesting depth of objects/arrays accepted by parse_json_strict.
inline constexpr std::size_t kJsonMaxDepth = 64;

// Parses `text` as exactly one JSON value (RFC 8259) with these extra rules:
//  - a key repeated within one object, at any depth, is an error;
//  - anything but whitespace after the value is an error (trailing garbage);
//  - nesting deeper than kJsonMaxDepth is an error;
//  - strings must be valid UTF-8 (nlohmann's lexer rule).
// Errors (code "duplicate_key", "parse_error" or "too_deep") name the key path
// (e.g. `params.steps`, `labels[2]`; `<root>` for the top level) and the position as
// `line L, column C` (1-based, columns in bytes). Messages are well-formed, one-line UTF-8 of
// bounded length whatever the input: the bytes the parser stopped at are quoted with
// printable() (bridge/utf8.h), keys longer than 64 bytes are cut.
Result<nlohmann::json> parse_json_strict(std::string_view text);

// Formats a JSON key path element list as used in error messages: `a.b[3].c`.
// Keys that are not identifier-like are quoted: `params["a b"]`.
std::string json_path_append_key(std::string_view path, std::string_view key);
std::string json_path_append_index(std::string_view path, std::size_t index);

// Short, escaped rendering of a JSON value for error messages: compact JSON text passed through
// printable(), at most 80 bytes.
std::string json_excerpt(const nlohmann::json& value);

}  // namespace kakeya::bridge
