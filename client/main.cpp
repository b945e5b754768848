// kakeya: the client CLI. Thin: global options and dispatch; subcommands in cmd/, logic in client/.
#include <iostream>
#include <vector>

#include <CLI/CLI.hpp>

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
      cmd::add_verify(app, g)};

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    report_error(kakeya::make_error(kakeya::errc::kUsage, std::string(e.what()) + " (see kakeya --help)"), kExitUsage);
    return kExitUsage;
  }
  for (auto& c : commands) {
    if (c.app->parsed()) return c.run();
  }
  return kExitUsage;
}
