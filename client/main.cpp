// kakeya: the client CLI. Thin: global options and dispatch; subcommands in cmd/, logic in client/.
#include <iostream>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>

#include "bridge/cli_parse.h"
#include "bridge/version.h"
#include "client/cmd/commands.h"
#include "client/output.h"

int main(int argc, char** argv) {
  using namespace kakeya::client;
  GlobalOptions g;
  g.exe_dir = executable_dir(argc > 0 ? argv[0] : nullptr);

  CLI::App app{"kakeya: run vetted jobs on a remote runner through git push", "kakeya"};
  app.set_version_flag("--version", kakeya::engine_version());
  app.require_subcommand(1);
  app.fallthrough();  // global options may follow the subcommand
  app.add_option("--remote", g.remote, "Git remote URL of the bus (env KAKEYA_REMOTE)");
  app.add_option("--prefix", g.prefix,
                 "Request branch prefix: branches are <prefix><preset>-<nonce>[<suffix>] (default kakeya/req/; "
                 "may end inside a name, e.g. agents/kakeya-)");
  app.add_option("--credentials-file", g.credentials_file, "git-credential-store file with the token");
  app.add_option("--cache-dir", g.cache_dir, "Object cache (default $XDG_CACHE_HOME/kakeya/<remote hash>)");
  app.add_option("--catalog", g.catalog, "Preset catalog presets.yaml (env KAKEYA_CATALOG)");
  app.add_flag("--json", g.json, "Machine-readable output (JSON; JSON lines for run/wait progress)");

  std::vector<cmd::Command> commands = {
      cmd::add_presets(app, g), cmd::add_request(app, g), cmd::add_run(app, g),
      cmd::add_wait(app, g),    cmd::add_status(app, g),  cmd::add_fetch(app, g),
      cmd::add_cancel(app, g),  cmd::add_list(app, g),    cmd::add_doctor(app, g),
      cmd::add_runners(app, g), cmd::add_gc(app, g),     cmd::add_gate(app, g),
      cmd::add_logs(app, g),    cmd::add_verify(app, g)};

  // A command line that cannot be parsed: exit 64, the error as JSON too when --json was given
  // (CLI11 has not stored the flag's value when parsing stops).
  const auto usage_error = [&](const std::string& reason) {
    for (int i = 1; i < argc; ++i) g.json = g.json || std::string_view(argv[i]) == "--json";
    report_error(g, kakeya::make_error(kakeya::errc::kUsage, reason), kExitUsage);
  };
  if (auto code = kakeya::parse_command_line(app, argc, argv, usage_error)) return *code;
  for (auto& c : commands) {
    if (c.app->parsed()) return c.run();
  }
  return kExitUsage;
}
