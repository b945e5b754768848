#include "engine/vulkan/vk_pipelines.h"

namespace kakeya::engine {

VulkanPipelines::VulkanPipelines(const VulkanDevice& device) : dev_(device) {
  subgroups_ = device.caps().subgroup_arithmetic;
  VkPushConstantRange range{VK_SHADER_STAGE_COMPUTE_BIT, 0, kPushBytes};
  VkPipelineLayoutCreateInfo li{};
  li.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO;
  li.pushConstantRangeCount = 1;
  li.pPushConstantRanges = &range;
  vkCreatePipelineLayout(dev_.device(), &li, nullptr, &layout_);
}

VulkanPipelines::~VulkanPipelines() {
  for (auto& [k, p] : pipelines_) vkDestroyPipeline(dev_.device(), p, nullptr);
  for (auto& [k, m] : modules_) vkDestroyShaderModule(dev_.device(), m, nullptr);
  if (layout_ != VK_NULL_HANDLE) vkDestroyPipelineLayout(dev_.device(), layout_, nullptr);
}

Result<VkPipeline> VulkanPipelines::pipeline(const std::string& name, uint32_t wg, uint32_t variant) {
  const auto key = std::make_tuple(name, wg, variant);
  if (auto it = pipelines_.find(key); it != pipelines_.end()) return it->second;
  // The subgroup variant when the device has subgroup arithmetic and the shader has one.
  const SpirvModule* mod = nullptr;
  for (const SpirvModule& m : embedded_spirv()) {
    if (subgroups_ && name + "_sg" == m.name) mod = &m;
    if (mod == nullptr && name == m.name) mod = &m;
  }
  if (mod == nullptr) return make_error("internal", "vulkan: no embedded shader named " + name);
  VkShaderModule& sm = modules_[mod->name];
  if (sm == VK_NULL_HANDLE) {
    VkShaderModuleCreateInfo ci{};
    ci.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO;
    ci.codeSize = mod->bytes;
    ci.pCode = mod->words;
    const VkResult rc = vkCreateShaderModule(dev_.device(), &ci, nullptr, &sm);
    if (rc != VK_SUCCESS) {
      modules_.erase(mod->name);
      return make_error("internal", std::string("vulkan: shader ") + mod->name + ": " + vk_result_name(rc));
    }
  }
  const uint32_t values[2] = {wg, variant};
  const VkSpecializationMapEntry entries[2] = {{0, 0, 4}, {1, 4, 4}};
  VkSpecializationInfo spec{2, entries, sizeof values, values};
  VkComputePipelineCreateInfo ci{};
  ci.sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO;
  ci.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
  ci.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  ci.stage.module = sm;
  ci.stage.pName = "main";
  ci.stage.pSpecializationInfo = &spec;
  ci.layout = layout_;
  VkPipeline p = VK_NULL_HANDLE;
  const VkResult rc = vkCreateComputePipelines(dev_.device(), VK_NULL_HANDLE, 1, &ci, nullptr, &p);
  if (rc != VK_SUCCESS) {
    return make_error("internal", "vulkan: pipeline " + name + " (variant " + std::to_string(variant) +
                                      "): " + vk_result_name(rc));
  }
  pipelines_[key] = p;
  return p;
}

}  // namespace kakeya::engine
