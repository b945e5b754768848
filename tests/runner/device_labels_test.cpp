// The runner's hardware labels: `vulkan` only when the engine finds a usable device, never from
// the config alone. Runs the real kakeya-engine of this build.
#include "runner/device_labels.h"

#include <gtest/gtest.h>

#include <cstdlib>

#include "tests/harness/paths.h"

namespace kakeya::runner {
namespace {

RunnerConfig config_with_engine() {
  RunnerConfig c;
  c.tool_dirs = {testing::binary_dir()};
  c.labels = {"gpu-host", "vulkan"};
  return c;
}

TEST(DeviceLabels, ConfiguredVulkanIsReplacedByWhatWasDetected) {
  RunnerConfig c = config_with_engine();
  apply_device_labels(c, {});
  EXPECT_EQ(c.labels, std::vector<std::string>{"gpu-host"});
  apply_device_labels(c, {"vulkan"});
  EXPECT_EQ(c.labels, (std::vector<std::string>{"gpu-host", "vulkan"}));
}

TEST(DeviceLabels, NoDriverMeansNoLabel) {
  const char* old = std::getenv("VK_ICD_FILENAMES");
  const std::string saved = old ? old : "";
  setenv("VK_ICD_FILENAMES", "/nonexistent/kakeya_icd.json", 1);
  std::string why;
  const auto labels = detect_device_labels(config_with_engine(), &why);
  if (old) {
    setenv("VK_ICD_FILENAMES", saved.c_str(), 1);
  } else {
    unsetenv("VK_ICD_FILENAMES");
  }
  EXPECT_TRUE(labels.empty()) << why;
  EXPECT_NE(why.find("no usable Vulkan device"), std::string::npos) << why;
}

TEST(DeviceLabels, MissingEngineMeansNoLabel) {
  RunnerConfig c;
  c.tool_dirs = {"/nonexistent-dir"};
  std::string why;
  // The runner's own directory (the test binary's) holds no kakeya-engine either.
  EXPECT_TRUE(detect_device_labels(c, &why).empty());
  EXPECT_NE(why.find("kakeya-engine"), std::string::npos) << why;
}

TEST(DeviceLabels, AUsableDeviceGivesTheLabel) {
  std::string why;
  const auto labels = detect_device_labels(config_with_engine(), &why);
#if defined(KAKEYA_HAVE_VULKAN)
  // CI and developer machines have Mesa's lavapipe; a machine without any Vulkan driver skips.
  if (labels.empty() && why.find("no usable Vulkan device") != std::string::npos) GTEST_SKIP() << why;
  EXPECT_EQ(labels, std::vector<std::string>{"vulkan"}) << why;
#else
  EXPECT_TRUE(labels.empty()) << why;
#endif
}

}  // namespace
}  // namespace kakeya::runner
