#include <gtest/gtest.h>

#include <string>
#include <thread>

#include "engine/presets/env_probe.h"
#include "tests/engine/backends.h"

namespace kakeya::engine {

TEST(EnvProbe, ReportsRealMachine) {
  const auto r = env_probe_report("cpu", test::cpu(1));
  EXPECT_EQ(r["kind"], "env-probe");
  EXPECT_EQ(r["schema_version"], 1);
  // The CPU count must agree with what the OS reports to this process.
  EXPECT_EQ(r["cpu"]["logical_cpus_online"].get<long>(),
            static_cast<long>(std::thread::hardware_concurrency()));
  EXPECT_GT(r["memory"]["total_bytes"].get<long long>(), 0);
#if defined(__x86_64__)
  // The x86 family and model, as the first processor's lines of /proc/cpuinfo give them.
  const auto family = test::cpuinfo_field("cpu family");
  const auto model = test::cpuinfo_field("model");
  ASSERT_TRUE(family.has_value() && model.has_value());
  EXPECT_EQ(r["cpu"]["family"], *family);
  EXPECT_EQ(r["cpu"]["model"], *model);
#endif
  EXPECT_TRUE(r["openblas"]["present"].get<bool>());
  EXPECT_FALSE(r["openblas"]["config"].get<std::string>().empty());
  ASSERT_TRUE(r["vulkan"].contains("available"));
  if (!r["vulkan"]["available"].get<bool>()) {
    EXPECT_FALSE(r["vulkan"]["reason"].get<std::string>().empty());
  } else {
    EXPECT_FALSE(r["vulkan"]["devices"].empty());
  }
  EXPECT_FALSE(r["engine"]["version"].get<std::string>().empty());
  // What the engine would run on, from the backend object: its kernel set is the CPU's.
  EXPECT_EQ(r["engine"]["backend"], "cpu");
  EXPECT_EQ(r["engine"]["backend_requested"], "cpu");
  EXPECT_EQ(r["engine"]["threads"], 1);
  ASSERT_GE(r["backends"].size(), 2u);
  EXPECT_EQ(r["backends"][0]["name"], "cpu");
  EXPECT_TRUE(r["backends"][0]["available"].get<bool>());
  EXPECT_FALSE(r["backends"][0]["info"]["kernel_set"].get<std::string>().empty());
  for (const auto& b : r["backends"]) {
    if (!b["available"].get<bool>()) {
      EXPECT_FALSE(b["reason"].get<std::string>().empty()) << b["name"];
    }
  }
}

}  // namespace kakeya::engine
