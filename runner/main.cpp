// kakeya-runner: the runner daemon (operators). Subcommands live in runner/cmd/.
#include <CLI/CLI.hpp>

#include "bridge/version.h"
#include "runner/cmd/commands.h"

int main(int argc, char** argv) {
  CLI::App app{"kakeya-runner — claims Kakeya requests from a git remote and runs allow-listed presets"};
  app.set_version_flag("--version", kakeya::engine_version());
  app.require_subcommand(1);
  int exit_code = 0;
  kakeya::runner::cmd::add_run(app, exit_code);
  kakeya::runner::cmd::add_once(app, exit_code);
  kakeya::runner::cmd::add_doctor(app, exit_code);
  CLI11_PARSE(app, argc, argv);
  return exit_code;
}
