// libFuzzer target: the runner config reader (runner/config.h over bridge/yaml_strict.h) on
// arbitrary bytes. Any crash, sanitizer report or exception is a bug: every malformed config must
// become an Error naming the file. A config that loads keeps the invariants the runner relies on.

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "runner/config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto cfg = kakeya::runner::parse_runner_config(text, "/etc/kakeya/runner.yaml");
  if (!cfg.ok()) {
    if (!cfg.error().message.starts_with("/etc/kakeya/runner.yaml")) __builtin_trap();
    return 0;
  }
  const auto& c = *cfg;
  if (c.remote_url.empty() || c.runner_id.empty() || c.branch_patterns.empty()) __builtin_trap();
  if (!c.work_dir.is_absolute() || !c.catalog_path.is_absolute()) __builtin_trap();
  if (!(c.heartbeat_s < c.lease_s) || c.max_jobs < 1 || c.max_jobs > 64) __builtin_trap();
  if (c.log_cap_bytes < 1024 || c.log_cap_bytes > (std::size_t{1} << 30)) __builtin_trap();
  for (const auto& dir : c.tool_dirs) {
    if (!dir.is_absolute()) __builtin_trap();
  }
  return 0;
}
