#include "engine/vulkan/vk_profile.h"

#include <vector>

namespace kakeya::engine {

Result<std::unique_ptr<VulkanProfiler>> VulkanProfiler::create(const VulkanDevice& device) {
  uint32_t n = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(device.physical(), &n, nullptr);
  std::vector<VkQueueFamilyProperties> families(n);
  vkGetPhysicalDeviceQueueFamilyProperties(device.physical(), &n, families.data());
  const uint32_t bits = device.queue_family() < n ? families[device.queue_family()].timestampValidBits : 0;
  VkPhysicalDeviceProperties props{};
  vkGetPhysicalDeviceProperties(device.physical(), &props);
  if (bits == 0 || props.limits.timestampPeriod <= 0) {
    return make_error("backend_unavailable", "vulkan:" + std::to_string(device.caps().index) + " (" + device.caps().name +
                                         "): its compute queue has no timestamps (timestampValidBits 0)");
  }
  VkQueryPoolCreateInfo ci{};
  ci.sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO;
  ci.queryType = VK_QUERY_TYPE_TIMESTAMP;
  ci.queryCount = kCapacity;
  VkQueryPool pool = VK_NULL_HANDLE;
  const VkResult rc = vkCreateQueryPool(device.device(), &ci, nullptr, &pool);
  if (rc != VK_SUCCESS) return make_error("internal", "vulkan: timestamp query pool: " + vk_result_name(rc));
  const uint64_t mask = bits >= 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1;
  return std::unique_ptr<VulkanProfiler>(new VulkanProfiler(device, pool, props.limits.timestampPeriod, mask));
}

VulkanProfiler::VulkanProfiler(const VulkanDevice& device, VkQueryPool pool, double ns_per_tick, uint64_t mask)
    : dev_(device), pool_(pool), ns_per_tick_(ns_per_tick), mask_(mask) {}

VulkanProfiler::~VulkanProfiler() { vkDestroyQueryPool(dev_.device(), pool_, nullptr); }

void VulkanProfiler::begin_submission(VkCommandBuffer cb) {
  vkCmdResetQueryPool(cb, pool_, 0, kCapacity);
  used_ = 0;
  ops_.clear();
}

void VulkanProfiler::op_begin(VkCommandBuffer cb, const char* op) {
  if (used_ + 2 > kCapacity) {
    ++dropped_;
    return;
  }
  vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, pool_, used_++);
  ops_.push_back(op);
  open_ = true;
}

void VulkanProfiler::op_end(VkCommandBuffer cb) {
  if (!open_) return;
  vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, pool_, used_++);
  open_ = false;
}

void VulkanProfiler::end_submission() {
  if (used_ == 0) return;
  std::vector<uint64_t> ticks(used_);
  const VkResult rc = vkGetQueryPoolResults(dev_.device(), pool_, 0, used_, ticks.size() * sizeof(uint64_t),
                                            ticks.data(), sizeof(uint64_t),
                                            VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT);
  if (rc == VK_SUCCESS) {
    for (size_t i = 0; i < ops_.size(); ++i) {
      const uint64_t t = ((ticks[2 * i + 1] & mask_) - (ticks[2 * i] & mask_)) & mask_;
      OpTime& o = totals_[ops_[i]];
      o.ms += static_cast<double>(t) * ns_per_tick_ * 1e-6;
      ++o.count;
    }
  } else {
    dropped_ += ops_.size();
  }
  used_ = 0;
  ops_.clear();
}

}  // namespace kakeya::engine
