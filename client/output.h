#pragma once
// How the CLI reports: one error line on stderr, JSON documents on stdout.

#include <nlohmann/json.hpp>

#include "bridge/result.h"

namespace kakeya::client {

// Prints "kakeya: <code>: <message>" on stderr and returns `exit_code`.
int report_error(const Error& error, int exit_code);

// Usage errors (bad flags, bad values, unknown preset/params): exit 64 (kExitUsage).
// Codes treated as usage errors: see is_usage_error.
bool is_usage_error(const Error& error);

// report_error with kExitUsage for usage errors, kExitFailure otherwise.
int fail(const Error& error);

// Writes `doc` pretty-printed (2 spaces) with a trailing newline on stdout.
void print_json(const nlohmann::json& doc);

// Whether stdin / stderr / stdout is a terminal.
bool stdin_is_tty();
bool stderr_is_tty();
bool stdout_is_tty();

}  // namespace kakeya::client
