// kakeya-engine devices [--json]: the Vulkan devices of this machine (engine/presets/env_probe.h
// probe_vulkan), for operators and for the runner's `vulkan` label. Exit 0 when at least one
// device the backend can use is present, 1 otherwise (the reason on stderr).
#include <iostream>

#include "engine/cmd/commands.h"
#include "engine/presets/env_probe.h"

namespace kakeya::engine::cmd {

void add_devices(CLI::App& app, int& exit_code) {
  auto* sub = app.add_subcommand("devices", "List the Vulkan devices (exit 1 when none is usable)");
  auto json_out = std::make_shared<bool>(false);
  sub->add_flag("--json", *json_out, "Print the list as JSON");
  sub->callback([json_out, &exit_code] {
    const nlohmann::json v = probe_vulkan();
    size_t usable = 0;
    for (const auto& d : v.value("devices", nlohmann::json::array())) usable += d.value("usable", false) ? 1 : 0;
    if (*json_out) {
      std::cout << v.dump(2) << "\n";
    } else if (!v.value("available", false)) {
      std::cout << "no Vulkan device: " << v.value("reason", std::string("unknown")) << "\n";
    } else {
      for (const auto& d : v["devices"]) {
        std::cout << "vulkan:" << d["index"] << "  " << d["name"].get<std::string>() << "  ("
                  << d["type"].get<std::string>() << ", " << d["driver"].get<std::string>() << ", "
                  << d["device_local_bytes"].get<uint64_t>() / (1024 * 1024) << " MiB, subgroup "
                  << d["subgroup_size"] << ")"
                  << (d["usable"].get<bool>() ? "" : "  unusable: " + d["missing"].get<std::string>()) << "\n";
      }
    }
    if (usable == 0) std::cerr << "devices: no usable Vulkan device\n";
    exit_code = usable > 0 ? 0 : 1;
  });
}

}  // namespace kakeya::engine::cmd
