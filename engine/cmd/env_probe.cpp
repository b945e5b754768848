// kakeya-engine env-probe --out DIR: writes DIR/report.json describing the real machine.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "engine/cmd/commands.h"
#include "engine/presets/env_probe.h"
#include "engine/presets/report.h"

namespace kakeya::engine::cmd {

void add_env_probe(CLI::App& app, int& exit_code) {
  auto* sub = app.add_subcommand("env-probe", "Describe this machine (CPU, memory, OpenBLAS, Vulkan) as JSON");
  auto out = std::make_shared<std::string>();
  auto json = std::make_shared<bool>(false);
  sub->add_option("--out", *out, "Directory for report.json (created if missing)");
  sub->add_flag("--json", *json, "Print the report JSON on stdout instead of a summary");
  sub->callback([out, json, &exit_code] {
    const nlohmann::json report = env_probe_report();
    if (!out->empty()) {
      std::error_code ec;
      std::filesystem::create_directories(*out, ec);
      const auto path = std::filesystem::path(*out) / "report.json";
      std::ofstream f(path);
      f << report_json_text(report) << "\n";
      if (!f) {
        std::cerr << "env-probe: cannot write " << path << "\n";
        exit_code = 1;
        return;
      }
      std::cerr << "env-probe: wrote " << path.string() << "\n";
    }
    if (*json) {
      std::cout << report_json_text(report) << "\n";
    } else {
      const auto& cpu = report["cpu"];
      std::cout << "cpu: " << cpu["model_name"].dump() << " (" << cpu["logical_cpus_online"]
                << " logical CPUs), avx2=" << cpu["features"]["avx2"]
                << " avx512f=" << cpu["features"]["avx512f"] << " neon=" << cpu["features"]["neon"] << "\n"
                << "memory: " << report["memory"].value("total_bytes", 0LL) / (1024 * 1024) << " MiB\n"
                << "openblas: " << report["openblas"]["config"].get<std::string>() << "\n"
                << "vulkan: "
                << (report["vulkan"]["available"].get<bool>()
                        ? std::to_string(report["vulkan"]["devices"].size()) + " device(s)"
                        : report["vulkan"].value("reason", std::string("unavailable")))
                << "\n";
    }
  });
}

}  // namespace kakeya::engine::cmd
