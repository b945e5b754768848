#pragma once
// The CLI11 flags shared by `kakeya request` and `kakeya run` (in the library so that tests can
// parse real argv with them).

#include <CLI/CLI.hpp>

#include "client/request_builder.h"

namespace kakeya::client {

// Registers on `sub`: positional PRESET (required), -p/--param key=value (repeatable; each
// occurrence takes exactly one token, so a value such as `flags=-rf` stays a value and a
// positional after it is not swallowed), --params-json JSON, --no-workload, --repo PATH,
// --suffix S. Values are stored into `opts`, which must outlive parsing.
void add_request_flags(CLI::App& sub, RequestOptions& opts);

}  // namespace kakeya::client
