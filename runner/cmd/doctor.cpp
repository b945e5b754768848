// `kakeya-runner doctor`: config, catalog, models, tools, remote reachability.
#include <iostream>

#include <nlohmann/json.hpp>

#include "bridge/gitbus.h"
#include "bridge/json_text.h"
#include "runner/cmd/commands.h"
#include "runner/cmd/common.h"
#include "runner/process.h"

namespace kakeya::runner::cmd {

void add_doctor(CLI::App& app, int& exit_code) {
  auto* sub = app.add_subcommand("doctor", "Check the config, catalog, model registry, tools and remote");
  auto o = std::make_shared<CommonOptions>();
  auto json = std::make_shared<bool>(false);
  add_common_options(sub, *o);
  sub->add_flag("--json", *json, "Machine-readable output");
  sub->callback([o, json, &exit_code] {
    setup_logging(*o);
    nlohmann::json checks = nlohmann::json::array();
    bool all_ok = true;
    auto check = [&](const std::string& name, bool ok, const std::string& detail) {
      checks.push_back({{"check", name}, {"ok", ok}, {"detail", detail}});
      all_ok = all_ok && ok;
      if (!*json) std::cout << (ok ? "ok   " : "FAIL ") << name << ": " << detail << "\n";
    };
    auto loaded = load_all(*o);
    if (!loaded) {
      check("config+catalog+credentials", false, "see the error above");
      exit_code = 2;
    } else {
      const auto& cfg = loaded->cfg;
      check("config", true, o->config_path + " (runner " + cfg.runner_id + ")");
      check("catalog", true, cfg.catalog_path.string() + ": " + std::to_string(loaded->catalog.presets().size()) + " presets");
      for (const auto& p : loaded->catalog.presets()) {
        for (const auto& role : p.models) {
          auto m = resolve_model(cfg, role);
          check("model " + role + " (preset " + p.name + ")", m.ok(), m.ok() ? m->string() : m.error().message);
        }
        if (!p.argv.empty() && p.argv[0].find('/') == std::string::npos) {
          std::vector<std::filesystem::path> dirs = cfg.tool_dirs;
          std::error_code ec;
          dirs.push_back(std::filesystem::read_symlink("/proc/self/exe", ec).parent_path());
          auto prog = resolve_program(p.argv[0], dirs);
          check("tool " + p.argv[0] + " (preset " + p.name + ")", prog.ok(), prog.ok() ? prog->string() : prog.error().message);
        }
      }
      auto bus = bridge::GitBus::open(cfg.remote_url, cfg.work_dir / "cache" / "doctor", loaded->creds);
      if (!bus.ok()) {
        check("remote", false, bus.error().str());
      } else {
        auto refs = bus->ls_remote("refs/heads/");
        check("remote", refs.ok(), refs.ok() ? bridge::redact_url(cfg.remote_url) + ": " + std::to_string(refs->size()) + " branches"
                                            : refs.error().str());
      }
      exit_code = all_ok ? 0 : 1;
    }
    if (*json) std::cout << bridge::to_json_file(nlohmann::json{{"ok", all_ok}, {"checks", checks}});
  });
}

}  // namespace kakeya::runner::cmd
