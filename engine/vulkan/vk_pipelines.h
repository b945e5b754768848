#pragma once
// Compute pipelines of the Vulkan backend, built from the SPIR-V the build embedded
// (engine/vulkan/shaders/*.comp compiled by glslc; vk_shaders.h). Every shader takes its
// arguments as push constants (at most kPushBytes: tensor device addresses and sizes) and has
// two specialization constants: id 0 the workgroup size, id 1 a variant (a weight type, a KV
// format) so that each variant is compiled by the driver with the other branches removed.
// Shaders that reduce over a workgroup exist twice, `<name>` (shared memory) and `<name>_sg`
// (subgroup arithmetic); pipeline() takes the subgroup one when the device has it.
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <tuple>

#include "bridge/result.h"
#include "engine/vulkan/vk_device.h"

namespace kakeya::engine {

struct SpirvModule {
  const char* name;  // file name without .comp (and _sg for the subgroup variant)
  const uint32_t* words;
  size_t bytes;
};
// Every module the build embedded (generated source).
std::span<const SpirvModule> embedded_spirv();

class VulkanPipelines {
 public:
  static constexpr uint32_t kPushBytes = 128;
  explicit VulkanPipelines(const VulkanDevice& device);
  ~VulkanPipelines();
  VulkanPipelines(const VulkanPipelines&) = delete;
  VulkanPipelines& operator=(const VulkanPipelines&) = delete;

  // The pipeline of shader `name` with workgroup size `wg` and variant `variant`, built on first
  // use. Errors: "internal" (no such module, or the driver refused it, with the VkResult).
  Result<VkPipeline> pipeline(const std::string& name, uint32_t wg, uint32_t variant);
  VkPipelineLayout layout() const { return layout_; }
  // Whether reductions use subgroup arithmetic on this device.
  bool subgroups() const { return subgroups_; }

 private:
  const VulkanDevice& dev_;
  VkPipelineLayout layout_ = VK_NULL_HANDLE;
  bool subgroups_ = false;
  std::map<std::string, VkShaderModule> modules_;
  std::map<std::tuple<std::string, uint32_t, uint32_t>, VkPipeline> pipelines_;
};

}  // namespace kakeya::engine
