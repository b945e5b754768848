#pragma once
// How the CLI reports: one error line on stderr (and, with --json, a JSON error document on
// stdout), JSON documents on stdout, and the exit code of an error (bridge/exit_codes.h).

#include <nlohmann/json.hpp>

#include "bridge/exit_codes.h"
#include "bridge/result.h"
#include "client/settings.h"

namespace kakeya::client {

// Prints "kakeya: <code>: <message>" on stderr; with `g.json` also
//   {"error": {"code": C, "message": M}, "exit_code": N}
// on stdout, so a caller that parses stdout sees the failure too. Returns `exit_code`.
int report_error(const GlobalOptions& g, const Error& error, int exit_code);

// Usage errors (bad flags, bad values, unknown preset/params, a URL with a password): exit 64.
bool is_usage_error(const Error& error);

// The exit code of an error: kExitUsage (64) for usage errors, kExitRemote (75) for
// is_remote_error codes (the remote unreachable, a timeout, refused or unusable credentials:
// retryable), kExitFailure (1) otherwise.
int exit_code_for(const Error& error);

// report_error with exit_code_for(error). An `auth_failed` error is first restated with the
// credential sources (bridge::explain_auth_failure: what was sent, which variables and files
// supply credentials), never libgit2's wording.
int fail(const GlobalOptions& g, const Error& error);

// Writes `doc` pretty-printed (2 spaces) with a trailing newline on stdout.
void print_json(const nlohmann::json& doc);

// Whether stdin / stderr / stdout is a terminal.
bool stdin_is_tty();
bool stderr_is_tty();
bool stdout_is_tty();

}  // namespace kakeya::client
