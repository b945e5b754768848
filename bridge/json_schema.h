#pragma once
// The JSON Schemas of manifests/schemas/, checked at run time. The build compiles each schema
// file into the binaries (cmake/embed_files.cmake); nothing is looked up on disk, so a runner
// validates with exactly the schemas it was built with. Validation is valijson's (draft 7,
// strong types: 1.0 is not an integer, "1" is not a number).
//
// Each document that crosses a program boundary has one C++ type whose parser calls this after
// its own checks (which give the precise messages), so the schema and the code cannot drift
// apart unnoticed; the tests check every writer's output against its schema.
//
// The schemas use `pattern` with bounded repetition for timestamps instead of `format:
// date-time`: valijson matches both with std::regex, which recurses once per character of an
// unbounded repetition (a long hostile string would overflow the stack).

#include <string_view>

#include <nlohmann/json.hpp>

#include "bridge/result.h"

namespace kakeya::bridge {

enum class JsonSchema {
  kRequest,  // request.schema.json: .kakeya/request.json (bridge/request.h)
  kStatus,   // status.schema.json:  .kakeya/run/status.json (bridge/run_state.h)
  kSummary,  // summary.schema.json: .kakeya/run/summary.json (bridge/summary.h)
  kReport,   // report.schema.json:  the envelope of every engine report (bridge/report_envelope.h)
};

// "request.schema.json", ... (the file name under manifests/schemas/).
std::string_view schema_file_name(JsonSchema schema);

// The schema's text as compiled in.
std::string_view schema_text(JsonSchema schema);

// Checks `doc` against `schema`. Error "schema_violation":
// "<file name>: <JSON pointer of the offending value, `/` for the root>: <valijson's reason>"
// for the first violation found. Never throws.
Status validate_against_schema(JsonSchema schema, const nlohmann::json& doc);

}  // namespace kakeya::bridge
