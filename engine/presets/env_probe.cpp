#include "engine/presets/env_probe.h"

#include <cblas.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <chrono>
#include <ctime>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include "bridge/version.h"
#include "engine/presets/report.h"

#if defined(KAKEYA_HAVE_VULKAN)
#include "engine/vulkan/vk_device.h"
#endif

extern "C" {
// OpenBLAS extensions (declared in openblas_config.h on some distributions only).
char* openblas_get_config(void);
char* openblas_get_corename(void);
int openblas_get_num_threads(void);
int openblas_get_parallel(void);
}

namespace kakeya::engine {
namespace {

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t");
  const auto e = s.find_last_not_of(" \t\r\n");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

// Key/value pairs of the first processor block plus counts across blocks.
struct CpuInfo {
  std::map<std::string, std::string> first;
  std::set<std::pair<std::string, std::string>> physical_cores;  // (physical id, core id)
  int processors = 0;
};

CpuInfo read_cpuinfo() {
  CpuInfo info;
  std::ifstream in("/proc/cpuinfo");
  std::string line, phys;
  while (std::getline(in, line)) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    const std::string key = trim(line.substr(0, colon));
    const std::string val = trim(line.substr(colon + 1));
    if (key == "processor") ++info.processors;
    if (key == "physical id") phys = val;
    if (key == "core id") info.physical_cores.insert({phys, val});
    if (info.processors <= 1 && !info.first.count(key)) info.first[key] = val;
  }
  return info;
}

}  // namespace

nlohmann::json probe_cpu() {
  const CpuInfo info = read_cpuinfo();
  nlohmann::json cpu;
  utsname u{};
  uname(&u);
  cpu["arch"] = u.machine;
  auto get = [&](const char* k) -> nlohmann::json {
    auto it = info.first.find(k);
    return it == info.first.end() ? nlohmann::json() : nlohmann::json(it->second);
  };
  cpu["model_name"] = get("model name").is_null() ? get("Model") : get("model name");
  cpu["vendor"] = get("vendor_id").is_null() ? get("CPU implementer") : get("vendor_id");
  // x86 "cpu family" / "model" as /proc/cpuinfo prints them (decimal; null elsewhere): "AMD EPYC"
  // alone does not tell a Zen 4 (family 25) from a Zen 5 (family 26) VM.
  cpu["family"] = get("cpu family");
  cpu["model"] = get("model");
  std::string flags = info.first.count("flags") ? info.first.at("flags") : "";
  if (flags.empty() && info.first.count("Features")) flags = info.first.at("Features");
  std::set<std::string> have;
  std::istringstream fs(flags);
  for (std::string f; fs >> f;) have.insert(f);
  nlohmann::json feat;
  for (const char* f : {"sse4_2", "avx", "avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vl",
                        "avx512_vnni", "avx512_bf16", "amx_tile", "asimd", "sve"}) {
    feat[f] = have.count(f) > 0;
  }
  feat["neon"] = have.count("asimd") > 0 || have.count("neon") > 0;
  cpu["features"] = feat;
  cpu["features_source"] = "/proc/cpuinfo";
  cpu["logical_cpus_online"] = sysconf(_SC_NPROCESSORS_ONLN);
  cpu["logical_cpus_in_cpuinfo"] = info.processors;
  cpu["physical_cores"] = info.physical_cores.empty() ? nlohmann::json()
                                                      : nlohmann::json(info.physical_cores.size());
  cpu["cache_size"] = get("cache size");
  std::ifstream maxf("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq");
  long khz = 0;
  cpu["max_freq_mhz"] = (maxf >> khz) ? nlohmann::json(khz / 1000) : nlohmann::json();
  return cpu;
}

nlohmann::json probe_memory() {
  std::ifstream in("/proc/meminfo");
  nlohmann::json mem;
  std::string key;
  long long kb = 0;
  std::string unit;
  while (in >> key >> kb) {
    std::getline(in, unit);
    if (key == "MemTotal:") mem["total_bytes"] = kb * 1024;
    if (key == "MemAvailable:") mem["available_bytes"] = kb * 1024;
    if (key == "SwapTotal:") mem["swap_total_bytes"] = kb * 1024;
  }
  mem["source"] = "/proc/meminfo";
  return mem;
}

nlohmann::json probe_openblas() {
  nlohmann::json j;
  j["present"] = true;
  j["config"] = openblas_get_config();
  j["corename"] = openblas_get_corename();
  j["num_threads"] = openblas_get_num_threads();
  static const char* kParallel[] = {"sequential", "pthreads", "openmp"};
  const int p = openblas_get_parallel();
  j["parallel"] = (p >= 0 && p <= 2) ? kParallel[p] : "unknown";
  return j;
}

nlohmann::json probe_vulkan() {
  nlohmann::json j;
#if defined(KAKEYA_HAVE_VULKAN)
  auto devices = list_vulkan_devices();
  if (!devices.ok()) {
    j["available"] = false;
    j["reason"] = devices.error().message;
    return j;
  }
  nlohmann::json list = nlohmann::json::array();
  for (const DeviceCaps& d : devices.value()) list.push_back(to_json(d));
  j["available"] = true;
  j["default_device"] = default_device_index(devices.value());
  j["devices"] = list;
#else
  j["available"] = false;
  j["reason"] = "this build has no Vulkan backend (-DKAKEYA_VULKAN=OFF, or libvulkan/glslc missing)";
#endif
  return j;
}

nlohmann::json probe_build() {
  utsname u{};
  uname(&u);
  return {{"os", {{"sysname", u.sysname}, {"release", u.release}, {"machine", u.machine}}},
          {"engine_version", engine_version()},
          {"build", build_info()}};
}

nlohmann::json probe_backends() {
  nlohmann::json out = nlohmann::json::array();
  for (const std::string& name : known_backends()) {
    auto b = open_backend(name);
    if (b.ok()) {
      out.push_back({{"name", name}, {"available", true}, {"info", to_json(b.value()->info())}});
    } else {
      out.push_back({{"name", name}, {"available", false}, {"reason", b.error().str()}});
    }
  }
  return out;
}

nlohmann::json env_probe_report(const std::string& backend_requested, const Backend& backend) {
  nlohmann::json r;
  r["kind"] = "env-probe";
  r["schema_version"] = 1;
  r["cpu"] = probe_cpu();
  r["memory"] = probe_memory();
  r["openblas"] = probe_openblas();
  r["vulkan"] = probe_vulkan();
  const nlohmann::json b = probe_build();
  r["os"] = b["os"];
  r["build"] = b["build"];
  r["backends"] = probe_backends();
  r["engine"] = engine_info(backend_requested, backend);
  r["created_at"] = utc_now_rfc3339();
  return r;
}

}  // namespace kakeya::engine
