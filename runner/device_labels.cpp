#include "runner/device_labels.h"

#include <algorithm>
#include <string>

#include "runner/engine_check.h"
#include "runner/process.h"

namespace kakeya::runner {

std::vector<std::string> detect_device_labels(const RunnerConfig& config, std::string* why) {
  auto engine = find_engine(config);
  if (!engine.ok()) {
    *why = "no kakeya-engine: " + engine.error().message;
    return {};
  }
  ProcessSpec spec;
  spec.argv = {engine.value().string(), "devices"};
  spec.env = build_job_environment({"VK_ICD_FILENAMES", "VK_DRIVER_FILES", "XDG_RUNTIME_DIR"}, {});
  spec.timeout_s = 60;
  std::string out;
  auto p = Process::spawn(spec, [&out](int stream, std::string_view data) {
    if (stream == 1 && out.size() < 65536) out.append(data);
  });
  if (!p.ok()) {
    *why = p.error().message;
    return {};
  }
  const ProcessResult r = p.value()->wait();
  if (r.exit_code != 0) {
    *why = "kakeya-engine devices found no usable Vulkan device" + (out.empty() ? "" : ": " + out);
    return {};
  }
  *why = out;
  return {"vulkan"};
}

void apply_device_labels(RunnerConfig& config, const std::vector<std::string>& detected) {
  std::erase(config.labels, std::string("vulkan"));
  for (const std::string& l : detected)
    if (std::find(config.labels.begin(), config.labels.end(), l) == config.labels.end()) config.labels.push_back(l);
}

}  // namespace kakeya::runner
