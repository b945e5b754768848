#pragma once
// Subcommands of kakeya-runner. Exit codes: 0 ok, 1 runtime failure, 2 bad config/catalog.
#include <CLI/CLI.hpp>

namespace kakeya::runner::cmd {

void add_run(CLI::App& app, int& exit_code);     // daemon
void add_once(CLI::App& app, int& exit_code);    // serve what is pending, then exit
void add_doctor(CLI::App& app, int& exit_code);  // check config, catalog, models, remote

}  // namespace kakeya::runner::cmd
