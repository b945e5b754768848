#pragma once
// Labels a runner earns from its hardware, detected at start-up by running the engine it will
// run jobs with: `vulkan` when `kakeya-engine devices` (engine/cmd/devices.cpp) finds a Vulkan
// device the engine's backend can use. The label is never taken from the config: a configured
// `vulkan` is dropped (with a warning) unless a device is found, so presets that require it
// (engine-selftest) run only where a device is, and a `backend=vulkan` request on any other
// runner fails in the engine with the reason (never a silent CPU run).
#include <string>
#include <vector>

#include "runner/config.h"

namespace kakeya::runner {

// The hardware labels of this host ({"vulkan"} or {}); `why` says what was found or why not.
// The engine is looked up like a job's argv[0] (tool_dirs, then the runner's own directory) and
// run with the runner's VK_ICD_FILENAMES / VK_DRIVER_FILES, for at most 60 s.
std::vector<std::string> detect_device_labels(const RunnerConfig& config, std::string* why);

// config.labels without a configured "vulkan", plus the detected labels.
void apply_device_labels(RunnerConfig& config, const std::vector<std::string>& detected);

}  // namespace kakeya::runner
