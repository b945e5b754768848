#include "engine/vulkan/vk_memory.h"

#include <algorithm>
#include <string>

namespace kakeya::engine {

struct VkBlock {
  VkDeviceMemory memory = VK_NULL_HANDLE;
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceAddress address = 0;
  uint8_t* mapped = nullptr;
  size_t size = 0;
  MemoryKind kind = MemoryKind::kDevice;
  bool dedicated = false;
  size_t used = 0;
  std::map<size_t, size_t> free;  // offset -> bytes
};

VkBuffer VkAllocation::buffer() const { return block->buffer; }
VkDeviceAddress VkAllocation::address() const { return block->address + offset; }
uint8_t* VkAllocation::mapped() const { return block->mapped ? block->mapped + offset : nullptr; }

const char* memory_use_name(MemoryUse use) {
  switch (use) {
    case MemoryUse::kWeights: return "weights";
    case MemoryUse::kKv: return "kv";
    case MemoryUse::kScratch: return "scratch";
    case MemoryUse::kStaging: return "staging";
  }
  return "unknown";
}

nlohmann::json to_json(const MemoryStats& s) {
  nlohmann::json live, peak;
  for (int u = 0; u < kMemoryUses; ++u) {
    live[memory_use_name(static_cast<MemoryUse>(u))] = s.live[u];
    peak[memory_use_name(static_cast<MemoryUse>(u))] = s.peak[u];
  }
  return {{"source", "vulkan allocator"},
          {"requested_bytes", s.requested},
          {"peak_requested_bytes", s.peak_requested},
          {"held_bytes", s.held},
          {"peak_held_bytes", s.peak_held},
          {"host_visible_held_bytes", s.host_visible_held},
          {"limit_bytes", s.limit},
          {"live_by_use", live},
          {"peak_by_use", peak}};
}

VulkanAllocator::VulkanAllocator(const VulkanDevice& device, uint64_t limit_bytes) : dev_(device) {
  stats_.limit = limit_bytes > 0 ? limit_bytes : device.caps().device_local_bytes;
}

VulkanAllocator::~VulkanAllocator() {
  for (auto& b : blocks_) {
    if (b->mapped) vkUnmapMemory(dev_.device(), b->memory);
    vkDestroyBuffer(dev_.device(), b->buffer, nullptr);
    vkFreeMemory(dev_.device(), b->memory, nullptr);
  }
}

uint32_t VulkanAllocator::memory_type(MemoryKind kind, uint32_t allowed) const {
  const auto& mp = dev_.memory_properties();
  auto find = [&](VkMemoryPropertyFlags want) -> uint32_t {
    for (uint32_t i = 0; i < mp.memoryTypeCount; ++i)
      if ((allowed & (1u << i)) && (mp.memoryTypes[i].propertyFlags & want) == want) return i;
    return UINT32_MAX;
  };
  const VkMemoryPropertyFlags host = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  uint32_t t = UINT32_MAX;
  switch (kind) {
    case MemoryKind::kDevice: t = find(VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT); break;
    case MemoryKind::kUpload: t = find(host); break;
    case MemoryKind::kReadback:
      t = find(host | VK_MEMORY_PROPERTY_HOST_CACHED_BIT);
      if (t == UINT32_MAX) t = find(host);
      break;
  }
  return t;
}

Result<VkBlock*> VulkanAllocator::new_block(size_t bytes, MemoryKind kind) {
  const bool device = kind == MemoryKind::kDevice;
  if (device && !fits(bytes)) {
    return make_error("out_of_memory", "vulkan: " + std::to_string(bytes) + " more bytes of device memory would exceed "
                                       "the limit of " + std::to_string(stats_.limit) + " bytes (" +
                                       std::to_string(stats_.held) + " held, device " + dev_.caps().name + ")");
  }
  auto b = std::make_unique<VkBlock>();
  b->size = bytes;
  b->kind = kind;
  VkBufferCreateInfo bi{};
  bi.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO;
  bi.size = bytes;
  bi.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT |
             VK_BUFFER_USAGE_SHADER_DEVICE_ADDRESS_BIT;
  bi.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  VkResult rc = vkCreateBuffer(dev_.device(), &bi, nullptr, &b->buffer);
  if (rc != VK_SUCCESS) {
    return make_error("out_of_memory", "vulkan: vkCreateBuffer of " + std::to_string(bytes) + " bytes failed with " +
                                           vk_result_name(rc));
  }
  VkMemoryRequirements req{};
  vkGetBufferMemoryRequirements(dev_.device(), b->buffer, &req);
  const uint32_t type = memory_type(kind, req.memoryTypeBits);
  VkMemoryAllocateFlagsInfo flags{};
  flags.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_FLAGS_INFO;
  flags.flags = VK_MEMORY_ALLOCATE_DEVICE_ADDRESS_BIT;
  VkMemoryAllocateInfo ai{};
  ai.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO;
  ai.pNext = &flags;
  ai.allocationSize = req.size;
  ai.memoryTypeIndex = type;
  rc = type == UINT32_MAX ? VK_ERROR_FEATURE_NOT_PRESENT : vkAllocateMemory(dev_.device(), &ai, nullptr, &b->memory);
  if (rc != VK_SUCCESS) {
    vkDestroyBuffer(dev_.device(), b->buffer, nullptr);
    return make_error("out_of_memory", "vulkan: allocating " + std::to_string(req.size) + " bytes of " +
                                           (device ? "device" : "host-visible") + " memory failed with " +
                                           vk_result_name(rc) + " (" + std::to_string(stats_.held) +
                                           " device bytes held)");
  }
  vkBindBufferMemory(dev_.device(), b->buffer, b->memory, 0);
  VkBufferDeviceAddressInfo ad{};
  ad.sType = VK_STRUCTURE_TYPE_BUFFER_DEVICE_ADDRESS_INFO;
  ad.buffer = b->buffer;
  b->address = vkGetBufferDeviceAddress(dev_.device(), &ad);
  const auto flags_of = dev_.memory_properties().memoryTypes[type].propertyFlags;
  if (flags_of & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT) {
    void* p = nullptr;
    if (vkMapMemory(dev_.device(), b->memory, 0, VK_WHOLE_SIZE, 0, &p) == VK_SUCCESS) b->mapped = static_cast<uint8_t*>(p);
  }
  b->free[0] = bytes;
  if (device) {
    stats_.held += bytes;
    stats_.peak_held = std::max(stats_.peak_held, stats_.held);
  } else {
    stats_.host_visible_held += bytes;
  }
  blocks_.push_back(std::move(b));
  return blocks_.back().get();
}

void VulkanAllocator::release_block(VkBlock* b) {
  if (b->kind == MemoryKind::kDevice) {
    stats_.held -= b->size;
  } else {
    stats_.host_visible_held -= b->size;
  }
  if (b->mapped) vkUnmapMemory(dev_.device(), b->memory);
  vkDestroyBuffer(dev_.device(), b->buffer, nullptr);
  vkFreeMemory(dev_.device(), b->memory, nullptr);
  std::erase_if(blocks_, [b](const std::unique_ptr<VkBlock>& p) { return p.get() == b; });
}

Result<VkAllocation> VulkanAllocator::allocate(size_t bytes, MemoryKind kind, MemoryUse use) {
  const size_t size = round_up_to(std::max<size_t>(bytes, 4), kAlignment);
  VkBlock* block = nullptr;
  size_t offset = 0;
  if (size < kDedicatedBytes) {
    for (auto& b : blocks_) {
      if (b->dedicated || b->kind != kind) continue;
      for (auto& [off, len] : b->free) {
        if (len >= size) {
          block = b.get();
          offset = off;
          break;
        }
      }
      if (block) break;
    }
  }
  if (block == nullptr) {
    size_t block_bytes = size;
    if (size < kDedicatedBytes) {
      const size_t live = kind == MemoryKind::kDevice ? stats_.requested : 0;
      block_bytes = std::max(size, round_up_to(std::clamp<size_t>(live / 16, size_t{64} << 10, size_t{16} << 20), kAlignment));
    }
    KAKEYA_ASSIGN_OR_RETURN(block, new_block(block_bytes, kind));
    block->dedicated = size >= kDedicatedBytes;
    offset = 0;
  }
  // Take [offset, offset + size) out of the free range that starts at offset.
  const size_t len = block->free[offset];
  block->free.erase(offset);
  if (len > size) block->free[offset + size] = len - size;
  block->used += size;
  if (kind == MemoryKind::kDevice) {
    stats_.requested += size;
    stats_.peak_requested = std::max(stats_.peak_requested, stats_.requested);
  }
  const int u = static_cast<int>(use);
  stats_.live[u] += size;
  stats_.peak[u] = std::max(stats_.peak[u], stats_.live[u]);
  return VkAllocation{block, offset, size, use};
}

void VulkanAllocator::free(const VkAllocation& a) {
  if (a.block == nullptr) return;
  VkBlock* b = a.block;
  stats_.live[static_cast<int>(a.use)] -= a.size;
  if (b->kind == MemoryKind::kDevice) stats_.requested -= a.size;
  b->used -= a.size;
  if (b->used == 0) {
    release_block(b);
    return;
  }
  auto it = b->free.emplace(a.offset, a.size).first;
  auto next = std::next(it);
  if (next != b->free.end() && it->first + it->second == next->first) {
    it->second += next->second;
    b->free.erase(next);
  }
  if (it != b->free.begin()) {
    auto prev = std::prev(it);
    if (prev->first + prev->second == it->first) {
      prev->second += it->second;
      b->free.erase(it);
    }
  }
}

}  // namespace kakeya::engine
