#pragma once
// Optional per-op timing of the Vulkan backend with timestamp queries (VulkanBackend::
// set_profiling). Off by default: the backend then holds no profiler and records no query, so
// the cost is one null-pointer test per op. On: every op the backend records is bracketed by two
// timestamps (bottom of pipe: after the work before it, and after its own dispatches and
// copies, which the backend separates by barriers); after each submission the pairs are read
// back and summed per op kind ("matmul", "attention", ...) in milliseconds.
//
// Source: the Vulkan spec's timestamp queries (vkCmdWriteTimestamp; ticks × timestampPeriod =
// nanoseconds). A queue whose family reports timestampValidBits == 0 cannot be profiled.
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "bridge/result.h"
#include "engine/vulkan/vk_device.h"

namespace kakeya::engine {

// Device time of one op kind, summed over the ops recorded while profiling.
struct OpTime {
  double ms = 0;
  uint64_t count = 0;
};

class VulkanProfiler {
 public:
  // Errors: "backend_unavailable" when the compute queue has no timestamps (naming the
  // device), "internal" when the query pool cannot be made (with the VkResult).
  static Result<std::unique_ptr<VulkanProfiler>> create(const VulkanDevice& device);
  ~VulkanProfiler();
  VulkanProfiler(const VulkanProfiler&) = delete;
  VulkanProfiler& operator=(const VulkanProfiler&) = delete;

  // At the start of a command buffer: resets the queries.
  void begin_submission(VkCommandBuffer cb);
  // Brackets one op of kind `op` (a string literal). Ops past the pool's capacity in one
  // submission are counted in dropped() and not timed.
  void op_begin(VkCommandBuffer cb, const char* op);
  void op_end(VkCommandBuffer cb);
  // After the submission's fence: reads the timestamps and adds them to the totals.
  void end_submission();

  const std::map<std::string, OpTime>& totals() const { return totals_; }
  uint64_t dropped() const { return dropped_; }
  void clear() {
    totals_.clear();
    dropped_ = 0;
  }

 private:
  VulkanProfiler(const VulkanDevice& device, VkQueryPool pool, double ns_per_tick, uint64_t mask);

  static constexpr uint32_t kCapacity = 8192;  // queries per submission (two per op)
  const VulkanDevice& dev_;
  VkQueryPool pool_;
  double ns_per_tick_;
  uint64_t mask_;  // the valid bits of a timestamp
  uint32_t used_ = 0;
  bool open_ = false;  // op_begin wrote a query that op_end closes
  std::vector<const char*> ops_;  // the kind of each timed pair of this submission
  std::map<std::string, OpTime> totals_;
  uint64_t dropped_ = 0;
};

}  // namespace kakeya::engine
