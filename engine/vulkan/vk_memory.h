#pragma once
// Device memory of the Vulkan backend: a simple sub-allocator over VkDeviceMemory blocks, each
// bound to one VkBuffer whose device address the shaders use (vk_device.h: buffer device
// addresses, no descriptor sets).
//
// Requests of at least kDedicatedBytes (64 KiB: every weight matrix, KV layer and scratch
// buffer of a real model) get a block of their own, sized exactly; smaller ones (norm weights,
// biases, op arguments) are placed first-fit in shared blocks of 1/16 of the live bytes (64 KiB
// to 16 MiB), so the memory held stays within the bound of 1.1x the bytes requested
// even for the few-MiB test models (the engine tests measure it on niah-tiny). A 7B model holds
// a few hundred blocks, far below Vulkan's maxMemoryAllocationCount (4096 on common drivers). Freed ranges coalesce; an empty block is released at once.
//
// Kinds: kDevice (device-local: weights, KV, activations), kUpload (host-visible, coherent: op
// arguments and host writes), kReadback (host-visible, cached when the device offers it).
// Every allocation is tagged with its use; the stats (MemoryStats) are what reports print beside
// the host RSS. A limit (BackendOptions::max_device_bytes, or the largest device-local heap)
// bounds the device-local bytes held; going past it is "out_of_memory" naming the sizes.
//
// REQUIRES: external synchronization; the allocator outlives its allocations.
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include <nlohmann/json.hpp>

#include "bridge/result.h"
#include "engine/vulkan/vk_device.h"

namespace kakeya::engine {

enum class MemoryKind { kDevice, kUpload, kReadback };
enum class MemoryUse { kWeights, kKv, kScratch, kStaging };
inline constexpr int kMemoryUses = 4;

// v rounded up to a multiple of a (a > 0), in the same unit.
inline size_t round_up_to(size_t v, size_t a) { return (v + a - 1) / a * a; }
const char* memory_use_name(MemoryUse use);  // "weights", "kv", "scratch", "staging"

struct VkBlock;

// A range of one block. Empty (block == nullptr) when default-constructed.
struct VkAllocation {
  VkBlock* block = nullptr;
  size_t offset = 0;
  size_t size = 0;
  MemoryUse use = MemoryUse::kScratch;
  VkBuffer buffer() const;
  VkDeviceAddress address() const;  // of the first byte
  uint8_t* mapped() const;          // host pointer to the first byte, or nullptr (not host-visible)
};

// Bytes requested (live and peak) per use, and the block bytes held (live and peak).
struct MemoryStats {
  size_t live[kMemoryUses] = {};
  size_t peak[kMemoryUses] = {};
  size_t requested = 0, peak_requested = 0;   // device-local, every use
  size_t held = 0, peak_held = 0;             // device-local block bytes
  size_t host_visible_held = 0;               // kUpload + kReadback block bytes
  size_t limit = 0;                           // device-local bytes allowed
};
nlohmann::json to_json(const MemoryStats& s);

class VulkanAllocator {
 public:
  static constexpr size_t kDedicatedBytes = size_t{64} << 10;
  static constexpr size_t kAlignment = 256;

  // limit_bytes 0: the device's largest device-local heap.
  VulkanAllocator(const VulkanDevice& device, uint64_t limit_bytes);
  ~VulkanAllocator();
  VulkanAllocator(const VulkanAllocator&) = delete;
  VulkanAllocator& operator=(const VulkanAllocator&) = delete;

  // Errors: "out_of_memory" (past the limit, or the driver refused, naming the sizes).
  Result<VkAllocation> allocate(size_t bytes, MemoryKind kind, MemoryUse use);
  void free(const VkAllocation& a);
  const MemoryStats& stats() const { return stats_; }
  // Whether `bytes` more device-local bytes fit under the limit right now.
  bool fits(size_t bytes) const { return stats_.held + bytes <= stats_.limit; }

 private:
  Result<VkBlock*> new_block(size_t bytes, MemoryKind kind);
  void release_block(VkBlock* b);
  uint32_t memory_type(MemoryKind kind, uint32_t allowed) const;

  const VulkanDevice& dev_;
  std::vector<std::unique_ptr<VkBlock>> blocks_;
  MemoryStats stats_;
};

}  // namespace kakeya::engine
