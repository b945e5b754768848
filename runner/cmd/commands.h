#pragma once
// Subcommands of kakeya-runner. Exit codes (bridge/exit_codes.h): 0 ok, 1 runtime failure or a
// failed doctor check, 2 (kExitConfig) the config, catalog or credentials cannot be used, 64 usage.
#include <CLI/CLI.hpp>

namespace kakeya::runner::cmd {

void add_run(CLI::App& app, int& exit_code);     // daemon
void add_once(CLI::App& app, int& exit_code);    // serve what is pending, then exit
void add_doctor(CLI::App& app, int& exit_code);  // check config, catalog, models, remote
void add_status(CLI::App& app, int& exit_code);  // the daemon's state file, for the host's operator

}  // namespace kakeya::runner::cmd
