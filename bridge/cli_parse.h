#pragma once
// Command-line parsing with Kakeya's exit codes (bridge/exit_codes.h), shared by the three
// binaries: CLI11 exits 105/106 (and others) on a parse error by default; every Kakeya command
// exits kExitUsage (64) instead, with one line on stderr naming the problem.
// Header-only: CLI11 is header-only and linked into the binaries, not into the bridge library.

#include <CLI/CLI.hpp>

#include <iostream>
#include <optional>
#include <string>

#include "bridge/exit_codes.h"

namespace kakeya {

// Parses argv into `app`. Returns nullopt when the command should run; otherwise the exit code:
// --help and --version print and give 0; a parse error prints "<program>: usage: <reason> (see
// <program> --help)" on stderr and gives kExitUsage. `on_usage_error`, when set, is called with
// the reason instead of printing (the client also writes it as JSON with --json).
template <typename OnUsageError = std::nullptr_t>
std::optional<int> parse_command_line(CLI::App& app, int argc, char** argv, OnUsageError on_usage_error = nullptr) {
  try {
    app.parse(argc, argv);
    return std::nullopt;
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    const std::string program = app.get_name().empty() ? "kakeya" : app.get_name();
    const std::string reason = std::string(e.what()) + " (see " + program + " --help)";
    if constexpr (std::is_same_v<OnUsageError, std::nullptr_t>) {
      std::cerr << program << ": usage: " << reason << std::endl;
    } else {
      on_usage_error(reason);
    }
    return kExitUsage;
  }
}

}  // namespace kakeya
