// kakeya-engine env-probe --out DIR: writes DIR/report.json describing the real machine
// (engine/presets/env_probe.h).
#include <iostream>
#include <memory>
#include <string>

#include "engine/cmd/commands.h"
#include "engine/cmd/flags.h"
#include "engine/presets/env_probe.h"

namespace kakeya::engine::cmd {

void add_env_probe(CLI::App& app, int& exit_code) {
  auto* sub = app.add_subcommand("env-probe", "Describe this machine (CPU, memory, OpenBLAS, Vulkan, backends) as JSON");
  auto flags = std::make_shared<CommonFlags>();
  add_common_flags(sub, *flags, kBackendFlag | kThreadsFlag | kOutFlag | kJsonFlag);
  sub->callback([flags, &exit_code] {
    const std::string name = "env-probe";
    auto backend = open_flag_backend(*flags);
    if (!backend.ok()) {
      exit_code = fail(name, backend.error());
      return;
    }
    const nlohmann::json report = env_probe_report(flags->backend, **backend);
    if (Status st = emit_report(name, *flags, report); !st.ok()) {
      exit_code = fail(name, st.error());
      return;
    }
    if (!flags->json) {
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
      for (const auto& b : report["backends"]) {
        std::cout << "backend " << b["name"].get<std::string>() << ": "
                  << (b["available"].get<bool>() ? b["info"]["device"].get<std::string>() + " (" +
                                                       b["info"]["kernel_set"].get<std::string>() + ")"
                                                 : b["reason"].get<std::string>())
                  << "\n";
      }
    }
    exit_code = 0;
  });
}

}  // namespace kakeya::engine::cmd
