// `kakeya-runner doctor`: can this runner serve? Each check is `ok` or `FAIL` with its reason:
//   config, catalog           they load (else exit 2, the error above)
//   work_dir, jobs, spool     writable by this account (a file created and removed in each)
//   model <role>              each model role a preset uses: configured and loadable by the engine
//                             (`kakeya-engine check-model`: header, architecture, tokenizer, tensor
//                             types); a data file (not GGUF) is only checked to exist. A role that
//                             is not configured at all is not a failure: the presets that need it
//                             are disabled on this runner (reported)
//   tool <argv0>              the program of each enabled preset is found in tool_dirs
//   labels                    presets needing labels this runner lacks are disabled (reported);
//                             Vulkan: found by the engine, or why not, when a preset needs it
//   remote                    reachable with the credentials (the source used is named)
//   push <prefix>             push permission where the runner works: a probe branch created and
//                             deleted (compare-and-swap) under each watched namespace
// Exit 0 when every check passed, 1 when one failed, 2 when the config, catalog or credentials
// cannot be used. `--json`: {ok, checks: [{check, ok, detail}], disabled_presets: [{preset, reason}]}.
#include <unistd.h>

#include <fstream>
#include <iostream>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "bridge/credentials.h"
#include "bridge/exit_codes.h"
#include "bridge/gitbus.h"
#include "bridge/json_text.h"
#include "bridge/push_probe.h"
#include "runner/cmd/commands.h"
#include "runner/cmd/common.h"
#include "runner/device_labels.h"
#include "runner/engine_check.h"
#include "runner/job.h"
#include "runner/process.h"

namespace kakeya::runner::cmd {
namespace {

namespace fs = std::filesystem;

// Creates `dir` if needed and a file in it, then removes the file. Error `io` naming the path.
Status check_writable(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return make_error(errc::kIo, "cannot create " + dir.string() + ": " + ec.message());
  const fs::path probe = dir / (".doctor-" + std::to_string(::getpid()));
  {
    std::ofstream out(probe);
    if (!(out << "probe")) return make_error(errc::kIo, "cannot write in " + dir.string());
  }
  fs::remove(probe, ec);
  if (ec) return make_error(errc::kIo, "cannot remove " + probe.string() + ": " + ec.message());
  return ok_status();
}

struct Report {
  bool json = false;
  bool all_ok = true;
  nlohmann::json checks = nlohmann::json::array();
  std::map<std::string, std::string> disabled;  // preset -> why

  void check(const std::string& name, bool ok, const std::string& detail) {
    checks.push_back({{"check", name}, {"ok", ok}, {"detail", detail}});
    all_ok = all_ok && ok;
    if (!json) std::cout << (ok ? "ok   " : "FAIL ") << name << ": " << detail << "\n";
  }
  void disable(const std::string& preset, const std::string& why) {
    if (disabled.emplace(preset, why).second && !json) std::cout << "off  preset " << preset << ": " << why << "\n";
  }
};

void check_models(const Loaded& l, Report& rep) {
  const RunnerConfig& cfg = l.cfg;
  std::map<std::string, std::vector<std::string>> roles;  // role -> presets using it
  for (const auto& p : l.catalog.presets()) {
    for (const auto& role : p.models) roles[role].push_back(p.name);
  }
  std::map<fs::path, Status> checked;  // a file shared by several roles is checked once
  for (const auto& [role, presets] : roles) {
    auto path = resolve_model(cfg, role);
    if (!path.ok() && cfg.models.count(role) == 0) {
      for (const auto& p : presets) rep.disable(p, "model role '" + role + "' is not configured");
      rep.check("model " + role, true, "not configured: presets that need it are disabled here (set models." + role +
                                           " in " + cfg.source_path.string() + " to enable them)");
      continue;
    }
    if (!path.ok()) {
      rep.check("model " + role, false, path.error().message);
      continue;
    }
    if (!looks_like_gguf(*path)) {
      rep.check("model " + role, true, path->string() + " (a data file, not a GGUF model: only its presence is checked)");
      continue;
    }
    auto it = checked.find(*path);
    std::string detail;
    if (it == checked.end()) {
      auto report = check_model_with_engine(cfg, *path);
      it = checked.emplace(*path, report.ok() ? ok_status() : Status(report.error())).first;
      if (report.ok()) {
        detail = path->string() + ": " + (*report)["architecture"].get<std::string>() + ", " +
                 std::to_string((*report)["n_layer"].get<int64_t>()) + " layers, tensor types " +
                 bridge::to_json_text((*report)["tensor_types"]);
      }
    } else {
      detail = path->string() + " (checked above)";
    }
    rep.check("model " + role, it->second.ok(),
              it->second.ok() ? detail : path->string() + ": the engine cannot load it: " + it->second.error().str());
  }
}

void check_labels_and_tools(const Loaded& l, Report& rep) {
  const RunnerConfig& cfg = l.cfg;
  bool needs_vulkan = false;
  for (const auto& p : l.catalog.presets()) {
    std::vector<std::string> missing;
    for (const auto& label : p.labels) {
      if (std::find(cfg.labels.begin(), cfg.labels.end(), label) == cfg.labels.end()) missing.push_back(label);
      needs_vulkan = needs_vulkan || label == "vulkan";
    }
    if (!missing.empty()) {
      std::string list;
      for (const auto& m : missing) list += (list.empty() ? "'" : ", '") + m + "'";
      rep.disable(p.name, "needs label " + list + " this runner does not have");
    }
    if (rep.disabled.count(p.name) || p.argv.empty() || p.argv[0].find('/') != std::string::npos) continue;
    std::vector<fs::path> dirs = cfg.tool_dirs;
    dirs.push_back(self_exe_dir());
    auto prog = resolve_program(p.argv[0], dirs);
    rep.check("tool " + p.argv[0] + " (preset " + p.name + ")", prog.ok(), prog.ok() ? prog->string() : prog.error().message);
  }
  if (needs_vulkan) {
    std::string why;
    const bool found = !detect_device_labels(cfg, &why).empty();
    rep.check("vulkan", true, found ? "a device the engine can use: " + why.substr(0, why.find('\n'))
                                    : "no usable device (" + why.substr(0, why.find('\n')) +
                                          "): presets that need label 'vulkan' are disabled here");
  }
}

void check_remote(const Loaded& l, Report& rep) {
  const RunnerConfig& cfg = l.cfg;
  const std::string told = "credentials_file in " + cfg.source_path.string();
  auto bus = bridge::GitBus::open(cfg.remote_url, cfg.work_dir / "cache" / "doctor", l.creds);
  if (!bus.ok()) {
    rep.check("remote", false, bridge::explain_auth_failure(bus.error(), cfg.remote_url, l.creds, told).str());
    return;
  }
  auto refs = bus->ls_remote("refs/heads/");
  rep.check("remote", refs.ok(),
            refs.ok() ? bridge::redact_url(cfg.remote_url) + ": " + std::to_string(refs->size()) + " branches (credentials: " +
                            l.creds.source + ")"
                      : bridge::explain_auth_failure(refs.error(), cfg.remote_url, l.creds, told).str());
  if (!refs.ok()) return;
  std::set<std::string> prefixes;
  for (const auto& pattern : cfg.branch_patterns) {
    const std::string prefix = bridge::literal_prefix(pattern);
    if (prefix.empty()) {
      rep.check("push " + pattern, true, "no literal namespace in the pattern: push permission not probed");
      continue;
    }
    if (!prefixes.insert(prefix).second) continue;
    auto probe = bridge::probe_push(*bus, prefix, runner_author(cfg));
    rep.check("push " + prefix, probe.ok(),
              probe.ok() ? "created and deleted " + *probe
                         : bridge::explain_auth_failure(probe.error(), cfg.remote_url, l.creds, told).str());
  }
}

}  // namespace

void add_doctor(CLI::App& app, int& exit_code) {
  auto* sub = app.add_subcommand("doctor", "Check config, catalog, work_dir, models (with the engine), tools, "
                                           "Vulkan, the remote and push permission");
  auto o = std::make_shared<CommonOptions>();
  auto json = std::make_shared<bool>(false);
  add_common_options(sub, *o);
  sub->add_flag("--json", *json, "Machine-readable output");
  sub->callback([o, json, &exit_code] {
    setup_logging(*o);
    Report rep;
    rep.json = *json;
    auto loaded = load_all(*o);
    if (!loaded) {
      rep.check("config+catalog+credentials", false, "see the error above");
      exit_code = kExitConfig;
    } else {
      const auto& cfg = loaded->cfg;
      rep.check("config", true, o->config_path + " (runner " + cfg.runner_id + ")");
      rep.check("catalog", true, cfg.catalog_path.string() + ": " + std::to_string(loaded->catalog.presets().size()) + " presets");
      for (const auto& [name, dir] : {std::pair<std::string, fs::path>{"work_dir", cfg.work_dir},
                                      {"jobs", cfg.work_dir / "jobs"}, {"spool", cfg.work_dir / "spool"}}) {
        auto st = check_writable(dir);
        rep.check(name + " writable", st.ok(), st.ok() ? dir.string() : st.error().message);
      }
      check_models(*loaded, rep);
      check_labels_and_tools(*loaded, rep);
      check_remote(*loaded, rep);
      const std::size_t total = loaded->catalog.presets().size();
      if (!*json) {
        std::cout << "presets: " << total - rep.disabled.size() << " of " << total << " enabled on this runner\n";
      }
      exit_code = rep.all_ok ? kExitOk : kExitFailure;
    }
    if (*json) {
      nlohmann::json off = nlohmann::json::array();
      for (const auto& [preset, why] : rep.disabled) off.push_back({{"preset", preset}, {"reason", why}});
      std::cout << bridge::to_json_file(
          nlohmann::json{{"ok", rep.all_ok}, {"checks", rep.checks}, {"disabled_presets", off}});
    }
  });
}

}  // namespace kakeya::runner::cmd
