#pragma once
// Subcommands of the `kakeya` CLI, one file each (Buildkite clicommand/ style). Each add_*
// registers its flags on `root` and returns the action to run when it was chosen. Actions
// return the process exit code; logic lives in the client library (client/*.h).

#include <functional>

#include <CLI/CLI.hpp>

#include "client/request_builder.h"
#include "client/settings.h"

namespace kakeya::client::cmd {

struct Command {
  CLI::App* app = nullptr;
  std::function<int()> run;
};

Command add_presets(CLI::App& root, GlobalOptions& g);
Command add_request(CLI::App& root, GlobalOptions& g);
Command add_run(CLI::App& root, GlobalOptions& g);
Command add_wait(CLI::App& root, GlobalOptions& g);
Command add_status(CLI::App& root, GlobalOptions& g);
Command add_fetch(CLI::App& root, GlobalOptions& g);
Command add_cancel(CLI::App& root, GlobalOptions& g);
Command add_list(CLI::App& root, GlobalOptions& g);
Command add_doctor(CLI::App& root, GlobalOptions& g);
Command add_runners(CLI::App& root, GlobalOptions& g);
Command add_gc(CLI::App& root, GlobalOptions& g);
Command add_gate(CLI::App& root, GlobalOptions& g);
Command add_logs(CLI::App& root, GlobalOptions& g);
Command add_verify(CLI::App& root, GlobalOptions& g);

// Builds the manifest and pushes the request; prints nothing. Returns the exit code on error.
int submit(const GlobalOptions& g, const RequestOptions& opts, std::optional<Submission>& out,
           std::optional<Session>& session);

}  // namespace kakeya::client::cmd
