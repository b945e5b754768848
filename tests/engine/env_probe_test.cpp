#include <gtest/gtest.h>

#include <thread>

#include "engine/presets/env_probe.h"

namespace kakeya::engine {

TEST(EnvProbe, ReportsRealMachine) {
  const auto r = env_probe_report();
  EXPECT_EQ(r["kind"], "env-probe");
  EXPECT_EQ(r["schema_version"], 1);
  // The CPU count must agree with what the OS reports to this process.
  EXPECT_EQ(r["cpu"]["logical_cpus_online"].get<long>(),
            static_cast<long>(std::thread::hardware_concurrency()));
  EXPECT_GT(r["memory"]["total_bytes"].get<long long>(), 0);
  EXPECT_TRUE(r["openblas"]["present"].get<bool>());
  EXPECT_FALSE(r["openblas"]["config"].get<std::string>().empty());
  ASSERT_TRUE(r["vulkan"].contains("available"));
  if (!r["vulkan"]["available"].get<bool>()) {
    EXPECT_FALSE(r["vulkan"]["reason"].get<std::string>().empty());
  } else {
    EXPECT_FALSE(r["vulkan"]["devices"].empty());
  }
  EXPECT_FALSE(r["engine"]["version"].get<std::string>().empty());
}

}  // namespace kakeya::engine
