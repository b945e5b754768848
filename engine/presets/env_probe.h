#pragma once
// The environment probe: a JSON description of the real machine the engine runs on.
// Every value is read from the machine (procfs, uname, OpenBLAS, the Vulkan loader);
// nothing is assumed. Missing sources are reported as null with a reason, never guessed.
#include <string>

#include <nlohmann/json.hpp>

#include "engine/backend.h"

namespace kakeya::engine {

// CPU: model name, vendor, architecture, feature flags (avx, avx2, fma, f16c, avx512f/bw/vl/vnni,
// neon/asimd), logical CPUs online, physical cores, cpufreq if available. Source: /proc/cpuinfo.
nlohmann::json probe_cpu();
// Memory: total and available bytes from /proc/meminfo.
nlohmann::json probe_memory();
// OpenBLAS: linked config string, core name, threads, parallel mode (openblas_get_* API).
nlohmann::json probe_openblas();
// Vulkan: every physical device the loader finds (vulkan/vk_device.h DeviceCaps: index, type,
// driver, memory heaps, subgroup size, fp16/int8 arithmetic, 16/8-bit storage, cooperative
// matrix extensions, whether the backend can use it and what it lacks) and the default device.
// {"available": false, "reason": ...} when this build has no Vulkan backend, or no loader, driver
// or device is found.
nlohmann::json probe_vulkan();
// OS (uname), build info and engine version.
nlohmann::json probe_build();

// Every backend open_backend knows, opened with default options: [{name, available, info
// (to_json(BackendInfo)) or reason}].
nlohmann::json probe_backends();

// The whole env-probe report: {kind: "env-probe", schema_version: 1, cpu, memory, openblas,
// vulkan, os, build, backends (probe_backends), engine (engine_info of `backend`, the one the
// command opened for --backend), created_at}.
nlohmann::json env_probe_report(const std::string& backend_requested, const Backend& backend);

}  // namespace kakeya::engine
