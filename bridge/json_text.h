#pragma once
// Writing JSON documents that may carry untrusted strings (request values, branch names, job
// output, reasons). nlohmann::json::dump() throws type_error.316 on a string that is not
// well-formed UTF-8, and an exception there once ended the runner (issue 10). Every JSON text a
// runner or client writes goes through to_json_text(), which never throws on content:
// strings and keys that are not well-formed UTF-8 are written with their invalid bytes as `\xNN`
// (bridge/utf8.h escape_invalid_utf8); everything else is nlohmann's ordinary output.

#include <string>

#include <nlohmann/json.hpp>

namespace kakeya::bridge {

// `doc` as JSON text: compact when indent < 0, else pretty with `indent` spaces (no trailing
// newline). Non-ASCII characters are written as UTF-8, not \u escapes.
std::string to_json_text(const nlohmann::json& doc, int indent = -1);
std::string to_json_text(const nlohmann::ordered_json& doc, int indent = -1);

// The form of every JSON file on the bus (status.json, summary.json, gate.json, runner.json,
// cancel.json): 2-space indent and a trailing newline.
std::string to_json_file(const nlohmann::json& doc);

}  // namespace kakeya::bridge
