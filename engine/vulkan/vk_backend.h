#pragma once
// The Vulkan backend (backend.h) on one device (vk_device.h): compute shaders compiled to SPIR-V
// at build time (engine/vulkan/shaders, vk_pipelines.h), memory from a sub-allocator
// (vk_memory.h).
//
// Execution: ops are RECORDED into one command buffer, each dispatch followed by a memory
// barrier, and submitted once at sync() (one submission per forward pass, no host round trip per
// layer). Host values an op needs (token ids, positions, RoPE angles, KV views) are copied at
// enqueue time into a host-visible argument arena the shaders read by device address;
// readbacks are copied into a host-visible readback arena and handed to the caller's memory when
// sync() returns. A buffer released while recorded ops use it is freed after the next sync().
//
// Weights are uploaded once, in their GGUF block layout (every storage type: ggml_storage_types()),
// and dequantized inside the shaders. Norm weights are uploaded as F32.
//
// Arithmetic (what makes it agree with the CPU backend):
//   * matmul: activations converted first exactly as ggml-cpu's vec_dot_type does (F16/BF16
//     rounding, Q8_0 blocks for Q8_0/Q4_0, Q8_K blocks for Q4_K/Q6_K; quantize_act.comp), then
//     Σ w·a in f32 over dequantized weights: the products ggml forms, summed in another order
//     (logits within ~1e-6 of the CPU's decode path). Below kExactBlockTokens tokens the mat-vec
//     shader computes each output exactly as for one token, so verify blocks give the logits of
//     one-token passes bit for bit ("verify agrees with decode"); longer batches take the tiled
//     shader (vk_matmul_path.h), the same products summed in another order.
//   * RoPE rotates by the cos/sin the host computes with rope_cache (engine/rope.h: every layout,
//     frequency factors, YaRN), the CPU's own values, so RoPE is bit-identical to the CPU;
//     embed and KV encoding are exact (correctly rounded division, no fused multiply-adds);
//     RMSNorm sums squares and attention sums probabilities in f32 (the CPU: double).
//   * attention: online softmax in chunks of the workgroup size (any context length).
//
// Not yet (issue 16): a cooperative-matrix shader (vk_matmul_path.h says why), fused ops,
// device-side greedy acceptance, a flash-attention kernel for long prefill.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/backend.h"
#include "engine/vulkan/vk_device.h"
#include "engine/vulkan/vk_memory.h"
#include "engine/vulkan/vk_pipelines.h"

namespace kakeya::engine {

class VulkanBackend;

class VulkanBuffer final : public BackendBuffer {
 public:
  VulkanBuffer(VulkanBackend& owner, VkAllocation a, size_t bytes) : owner_(owner), a_(a), bytes_(bytes) {}
  ~VulkanBuffer() override;
  size_t bytes() const override { return bytes_; }
  const VkAllocation& allocation() const { return a_; }

 private:
  VulkanBackend& owner_;
  VkAllocation a_;
  size_t bytes_;
};

// KV storage (shaders/kv.glsl): positions [capacity] i32, K rows, V rows in one allocation.
class VulkanKvBuffer final : public KvBuffer {
 public:
  VulkanKvBuffer(VulkanBackend& owner, VkAllocation a, const KvRowFormat& format, size_t capacity);
  ~VulkanKvBuffer() override;
  // The bytes this storage was allocated with: capacity · (4 + 2 · row bytes), as the CPU's.
  size_t bytes() const override { return bytes_; }
  const VkAllocation& allocation() const { return a_; }
  size_t k_offset() const { return capacity() * sizeof(int32_t); }
  size_t v_offset() const { return k_offset() + capacity() * format().row_bytes(); }

 private:
  VulkanBackend& owner_;
  VkAllocation a_;
  size_t bytes_;
};

class VulkanBackend final : public Backend {
 public:
  VulkanBackend(std::unique_ptr<VulkanDevice> device, const BackendOptions& options);
  ~VulkanBackend() override;

  const BackendInfo& info() const override { return info_; }
  Result<std::unique_ptr<BackendBuffer>> alloc(size_t bytes) override;
  Result<std::unique_ptr<KvBuffer>> alloc_kv(const KvRowFormat& format, size_t capacity) override;
  size_t allocated_bytes() const override { return memory_.stats().held; }
  nlohmann::json memory_report() const override { return to_json(memory_.stats()); }
  Status check_upload(const LlamaModel& model) override;
  Result<UploadedWeight> upload_weight(const WeightMatrix& w, WeightUse use, const GgufFile* source) override;
  nlohmann::json describe_weights(const ModelWeights& weights) const override;

  void write(const Tensor& dst, std::span<const float> src) override;
  void embed(const Tensor& table, std::span<const int32_t> tokens, const Tensor& out) override;
  void rms_norm(const Tensor& x, const Tensor& weight, float eps, const Tensor& out) override;
  void matmul(std::span<const MatmulOut> outs, const Tensor& x) override;
  void rope(const Tensor& x, const RopeArgs& args, std::span<const int32_t> positions) override;
  void swiglu(const Tensor& gate, const Tensor& up) override;
  void add(const Tensor& x, const Tensor& y) override;
  void add_bias(const Tensor& x, const Tensor& bias) override;
  void attention(const Tensor& q, const AttentionArgs& args, const Tensor& out) override;
  void kv_store(KvBuffer& dst, size_t slot0, const Tensor& k, const Tensor& v, std::span<const int32_t> positions,
                std::span<const size_t> heads, size_t head_dim) override;
  void kv_copy(const KvBuffer& src, size_t src_slot, KvBuffer& dst, size_t dst_slot, size_t n) override;
  void read(const Tensor& src, std::span<float> dst) override;
  void argmax_rows(const Tensor& src, std::span<int32_t> ids) override;
  void kv_read(const KvBuffer& src, size_t slot0, size_t n, std::span<float> k, std::span<float> v,
               std::span<int32_t> positions) override;
  void sync() override;

  const DeviceCaps& caps() const { return device_->caps(); }
  // Called by buffers when they are destroyed: freed now, or after the next sync() when
  // recorded ops may still use the memory.
  void release(const VkAllocation& a);

 private:
  struct Arena;
  struct Readback;
  // Host-visible bytes for this submission: returns the allocation range (block + offset).
  VkAllocation arena_alloc(Arena& arena, size_t bytes);
  VkAllocation upload(const void* data, size_t bytes);
  VkDeviceAddress upload_i32(std::span<const int32_t> v);
  VkCommandBuffer recording();
  void barrier();
  void dispatch(const char* shader, uint32_t variant, const std::vector<uint8_t>& push, uint32_t gx,
                uint32_t gy = 1, uint32_t gz = 1, uint32_t wg = 64);
  // A 1-D dispatch over `items` invocations (2-D grid past 65535 workgroups).
  void dispatch_items(const char* shader, uint32_t variant, const std::vector<uint8_t>& push, size_t items);
  void copy(VkBuffer src, size_t src_off, VkBuffer dst, size_t dst_off, size_t bytes);
  // A device scratch buffer of at least `bytes` (the activation conversion, KV moves).
  const VkAllocation& scratch(VkAllocation& slot, size_t bytes);
  static VkDeviceAddress address(const Tensor& t);
  static VkBuffer vk_buffer(const Tensor& t);
  // Uploads host bytes into a device allocation (staging, or a direct copy when mapped).
  void upload_bytes(const VkAllocation& dst, const uint8_t* data, size_t bytes);

  std::unique_ptr<VulkanDevice> device_;
  VulkanAllocator memory_;
  VulkanPipelines pipelines_;
  BackendInfo info_;
  VkCommandBuffer cmd_ = VK_NULL_HANDLE;
  VkFence fence_ = VK_NULL_HANDLE;
  bool recording_ = false;
  std::unique_ptr<Arena> args_, readback_;
  std::vector<Readback> readbacks_;
  std::vector<VkAllocation> pending_free_;
  VkAllocation act_scratch_, kv_scratch_;
  // The RoPE angle table uploaded last in this submission, reused while positions repeat.
  std::vector<int32_t> rope_positions_;
  RopeParams rope_params_;
  const std::vector<float>* rope_factors_ = nullptr;
  VkDeviceAddress rope_table_ = 0;
  // Host copies of the vector weights (norms, biases, RoPE frequency factors) by device address.
  std::map<VkDeviceAddress, std::vector<float>> host_vectors_;
};

// The factory behind open_backend("vulkan[:N]"): device `index` (-1 = the default device).
// Errors: VulkanDevice::open's; "bad_param" for threads < 1.
Result<std::unique_ptr<Backend>> open_vulkan_backend(int index, const BackendOptions& options);

}  // namespace kakeya::engine
