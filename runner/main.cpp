// kakeya-runner: the runner daemon (operators). Subcommands live in runner/cmd/.
#include <CLI/CLI.hpp>

#include "bridge/cli_parse.h"
#include "bridge/version.h"
#include "runner/cmd/commands.h"

int main(int argc, char** argv) {
  CLI::App app{"kakeya-runner — claims Kakeya requests from a git remote and runs allow-listed presets",
               "kakeya-runner"};
  app.set_version_flag("--version", kakeya::engine_version());
  app.require_subcommand(1);
  int exit_code = 0;
  kakeya::runner::cmd::add_run(app, exit_code);
  kakeya::runner::cmd::add_once(app, exit_code);
  kakeya::runner::cmd::add_doctor(app, exit_code);
  kakeya::runner::cmd::add_status(app, exit_code);
  if (auto code = kakeya::parse_command_line(app, argc, argv)) return *code;
  return exit_code;
}
