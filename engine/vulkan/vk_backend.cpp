#include "engine/vulkan/vk_backend.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "engine/cpu/quant.h"
#include "engine/kv_quant.h"
#include "engine/rope.h"
#include "engine/vulkan/vk_matmul_path.h"

namespace kakeya::engine {
namespace {

constexpr size_t kArenaBlockBytes = size_t{1} << 20;
constexpr size_t kUploadChunkBytes = size_t{16} << 20;
constexpr uint32_t kMaxGroups = 65535;
constexpr uint32_t kMatvecWg = 64;  // invocations per mat-vec workgroup (shared by WG / lanes rows)
// Invocations per attention workgroup (one per query head and token): 256 splits P·V over
// 256 / head_dim slot groups, so a decode step's few workgroups each walk a quarter of the
// slots that 64 would (the step is latency-bound on a GPU: one query row, every cached row).
constexpr uint32_t kAttentionWg = 256;

// Push constants in the GLSL std430 layout: buffer references 8-byte aligned, scalars 4.
class Push {
 public:
  Push& addr(VkDeviceAddress a) {
    b_.resize((b_.size() + 7) / 8 * 8);
    return put(&a, 8);
  }
  Push& u32(size_t v) {
    const uint32_t x = static_cast<uint32_t>(v);
    return put(&x, 4);
  }
  Push& i32(int32_t v) { return put(&v, 4); }
  Push& f32(float v) { return put(&v, 4); }
  const std::vector<uint8_t>& bytes() const { return b_; }

 private:
  Push& put(const void* p, size_t n) {
    const auto* c = static_cast<const uint8_t*>(p);
    b_.insert(b_.end(), c, c + n);
    return *this;
  }
  std::vector<uint8_t> b_;
};

// One KV head as attention.comp reads it (struct KvView there: 48 bytes, std430).
struct GpuKvView {
  uint64_t base = 0;
  uint32_t k_off = 0, v_off = 0, index = 0, n_slots = 0;
  int32_t sink = 0, window = 0;
  uint32_t bits = 32, values = 0, group = 64, row_bytes = 0;
};
static_assert(sizeof(GpuKvView) == 48, "attention.comp's KvView layout");

// The activation conversion of ggml-cpu's vec_dot_type for a weight type (quantize_act.comp):
// 1 F16, 2 BF16, 3 Q8_0, 4 Q8_K, 5 Q8_1; 0 none (F32).
uint32_t act_variant(GgmlType t) {
  switch (t) {
    case GgmlType::F16: return 1;
    case GgmlType::BF16: return 2;
    case GgmlType::Q8_0:
    case GgmlType::Q4_0:
    case GgmlType::Q5_0:
    case GgmlType::IQ4_NL: return 3;
    case GgmlType::Q2_K:
    case GgmlType::Q3_K:
    case GgmlType::Q4_K:
    case GgmlType::Q5_K:
    case GgmlType::Q6_K:
    case GgmlType::IQ4_XS: return 4;
    case GgmlType::Q4_1:
    case GgmlType::Q5_1: return 5;
    default: return 0;
  }
}

// The weight types the shaders dequantize (dequant.glsl): every storage type.
bool shader_type(GgmlType t) {
  const auto types = ggml_storage_types();
  return std::find(types.begin(), types.end(), t) != types.end();
}

[[noreturn]] void fatal(const std::string& what) {
  std::fprintf(stderr, "kakeya vulkan backend: %s\n", what.c_str());
  std::abort();
}

size_t weight_upload_bytes(const WeightMatrix& w, WeightUse use) {
  if (use == WeightUse::kVector) return static_cast<size_t>(w.n_in * w.n_out) * sizeof(float);
  return static_cast<size_t>(w.n_out) * w.row_bytes;
}

}  // namespace

struct VulkanBackend::Arena {
  MemoryKind kind = MemoryKind::kUpload;
  std::vector<VkAllocation> blocks;
  size_t used = 0;  // bytes of blocks.back() handed out
  size_t next_block = kArenaBlockBytes;
};

struct VulkanBackend::Readback {
  const uint8_t* src = nullptr;
  void* dst = nullptr;
  size_t bytes = 0;
  // kv_read: decode `n` rows of `format` from src into k / v (positions copied as bytes above).
  bool kv = false;
  KvRowFormat format;
  size_t n = 0;
  float* out = nullptr;
};

class VulkanBackend::OpScope {
 public:
  OpScope(VulkanBackend& b, const char* op) : b_(b) {
    if (b_.profiler_) b_.profiler_->op_begin(b_.recording(), op);
  }
  ~OpScope() {
    if (b_.profiler_) b_.profiler_->op_end(b_.recording());
  }
  OpScope(const OpScope&) = delete;
  OpScope& operator=(const OpScope&) = delete;

 private:
  VulkanBackend& b_;
};

// ---- buffers ----

VulkanBuffer::~VulkanBuffer() { owner_.release(a_); }

VulkanKvBuffer::VulkanKvBuffer(VulkanBackend& owner, VkAllocation a, const KvRowFormat& format, size_t capacity)
    : KvBuffer(format, capacity), owner_(owner), a_(a),
      bytes_(capacity * sizeof(int32_t) + 2 * capacity * format.row_bytes()) {}

VulkanKvBuffer::~VulkanKvBuffer() { owner_.release(a_); }

// ---- the backend ----

Result<std::unique_ptr<Backend>> open_vulkan_backend(int index, const BackendOptions& options) {
  if (options.threads < 1) {
    return make_error("bad_param", "vulkan backend: threads " + std::to_string(options.threads) + " < 1");
  }
  KAKEYA_ASSIGN_OR_RETURN(std::unique_ptr<VulkanDevice> device, VulkanDevice::open(index));
  return std::unique_ptr<Backend>(new VulkanBackend(std::move(device), options));
}

VulkanBackend::VulkanBackend(std::unique_ptr<VulkanDevice> device, const BackendOptions& options)
    : device_(std::move(device)),
      memory_(*device_, options.max_device_bytes),
      pipelines_(*device_),
      args_(std::make_unique<Arena>()),
      readback_(std::make_unique<Arena>()) {
  const DeviceCaps& c = device_->caps();
  info_.name = "vulkan";
  info_.device = c.name;
  info_.driver = c.driver;
  info_.kernel_set = pipelines_.subgroups() ? "spirv:subgroup-reduce" : "spirv:shared-memory-reduce";
  info_.threads = 1;
  info_.options = {{"device_index", c.index},
                   {"device_type", c.type},
                   {"api_version", c.api_version},
                   {"subgroup_size", c.subgroup_size},
                   {"matmul", std::string("matvec below ") + std::to_string(kExactBlockTokens) + " tokens, " +
                                  matmul_path_name(choose_matmul_path(c, kExactBlockTokens)) + " from there"},
                   {"max_device_bytes", memory_.stats().limit}};
  readback_->kind = MemoryKind::kReadback;
  VkCommandBufferAllocateInfo ai{};
  ai.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO;
  ai.commandPool = device_->command_pool();
  ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  ai.commandBufferCount = 1;
  vkAllocateCommandBuffers(device_->device(), &ai, &cmd_);
  VkFenceCreateInfo fi{};
  fi.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO;
  vkCreateFence(device_->device(), &fi, nullptr, &fence_);
}

VulkanBackend::~VulkanBackend() {
  sync();
  for (Arena* a : {args_.get(), readback_.get()})
    for (const VkAllocation& b : a->blocks) memory_.free(b);
  memory_.free(act_scratch_);
  memory_.free(kv_scratch_);
  memory_.free(accept_scratch_);
  vkDestroyFence(device_->device(), fence_, nullptr);
  vkFreeCommandBuffers(device_->device(), device_->command_pool(), 1, &cmd_);
}

void VulkanBackend::release(const VkAllocation& a) {
  host_vectors_.erase(a.address());
  if (recording_) {
    pending_free_.push_back(a);
  } else {
    memory_.free(a);
  }
}

VkDeviceAddress VulkanBackend::address(const Tensor& t) {
  return static_cast<const VulkanBuffer*>(t.buffer)->allocation().address() + t.offset;
}

VkBuffer VulkanBackend::vk_buffer(const Tensor& t) {
  return static_cast<const VulkanBuffer*>(t.buffer)->allocation().buffer();
}

VkAllocation VulkanBackend::arena_alloc(Arena& arena, size_t bytes) {
  bytes = round_up_to(std::max<size_t>(bytes, 4), 16);
  if (arena.blocks.empty() || arena.used + bytes > arena.blocks.back().size) {
    const size_t size = std::max(bytes, arena.next_block);
    auto block = memory_.allocate(size, arena.kind, MemoryUse::kStaging);
    if (!block.ok()) fatal("argument/readback memory: " + block.error().str());
    arena.blocks.push_back(block.value());
    arena.used = 0;
  }
  VkAllocation r = arena.blocks.back();
  r.offset += arena.used;
  r.size = bytes;
  arena.used += bytes;
  return r;
}

VkAllocation VulkanBackend::upload(const void* data, size_t bytes) {
  VkAllocation a = arena_alloc(*args_, bytes);
  std::memcpy(a.mapped(), data, bytes);
  return a;
}

VkDeviceAddress VulkanBackend::upload_i32(std::span<const int32_t> v) {
  return upload(v.data(), v.size() * sizeof(int32_t)).address();
}

VkCommandBuffer VulkanBackend::recording() {
  if (!recording_) {
    VkCommandBufferBeginInfo bi{};
    bi.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
    bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
    vkBeginCommandBuffer(cmd_, &bi);
    recording_ = true;
    if (profiler_) profiler_->begin_submission(cmd_);
  }
  return cmd_;
}

void VulkanBackend::barrier() {
  VkMemoryBarrier mb{};
  mb.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER;
  mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  mb.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT |
                     VK_ACCESS_TRANSFER_WRITE_BIT;
  const VkPipelineStageFlags stages = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;
  vkCmdPipelineBarrier(recording(), stages, stages, 0, 1, &mb, 0, nullptr, 0, nullptr);
}

void VulkanBackend::dispatch(const char* shader, uint32_t variant, const std::vector<uint8_t>& push, uint32_t gx,
                             uint32_t gy, uint32_t gz, uint32_t wg) {
  if (gx == 0 || gy == 0 || gz == 0) return;
  auto p = pipelines_.pipeline(shader, wg, variant);
  if (!p.ok()) fatal(p.error().str());
  VkCommandBuffer cb = recording();
  vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, p.value());
  vkCmdPushConstants(cb, pipelines_.layout(), VK_SHADER_STAGE_COMPUTE_BIT, 0, static_cast<uint32_t>(push.size()),
                     push.data());
  vkCmdDispatch(cb, gx, gy, gz);
  barrier();
}

void VulkanBackend::dispatch_items(const char* shader, uint32_t variant, const std::vector<uint8_t>& push,
                                   size_t items) {
  const size_t groups = (items + 63) / 64;
  const uint32_t gx = static_cast<uint32_t>(std::min<size_t>(groups, kMaxGroups));
  const uint32_t gy = static_cast<uint32_t>((groups + gx - 1) / std::max<uint32_t>(gx, 1));
  dispatch(shader, variant, push, gx, gy);
}

void VulkanBackend::copy(VkBuffer src, size_t src_off, VkBuffer dst, size_t dst_off, size_t bytes) {
  if (bytes == 0) return;
  const VkBufferCopy region{src_off, dst_off, bytes};
  vkCmdCopyBuffer(recording(), src, dst, 1, &region);
}

const VkAllocation& VulkanBackend::scratch(VkAllocation& slot, size_t bytes) {
  if (slot.block != nullptr && slot.size >= bytes) return slot;
  if (slot.block != nullptr) release(slot);
  auto a = memory_.allocate(std::max(bytes, slot.size * 2), MemoryKind::kDevice, MemoryUse::kScratch);
  if (!a.ok()) fatal("scratch memory: " + a.error().str());
  slot = a.value();
  return slot;
}

void VulkanBackend::sync() {
  if (recording_) {
    VkMemoryBarrier mb{};
    mb.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER;
    mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
    mb.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
    vkCmdPipelineBarrier(cmd_, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                         VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &mb, 0, nullptr, 0, nullptr);
    vkEndCommandBuffer(cmd_);
    VkSubmitInfo si{};
    si.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO;
    si.commandBufferCount = 1;
    si.pCommandBuffers = &cmd_;
    VkResult rc = vkQueueSubmit(device_->queue(), 1, &si, fence_);
    if (rc == VK_SUCCESS) rc = vkWaitForFences(device_->device(), 1, &fence_, VK_TRUE, UINT64_MAX);
    if (rc != VK_SUCCESS) fatal("queue submission failed with " + vk_result_name(rc));
    vkResetFences(device_->device(), 1, &fence_);
    if (profiler_) profiler_->end_submission();
    vkResetCommandBuffer(cmd_, 0);
    recording_ = false;
  }
  for (const Readback& r : readbacks_) {
    if (!r.kv) {
      std::memcpy(r.dst, r.src, r.bytes);
      continue;
    }
    const size_t row_bytes = r.format.row_bytes();
    if (r.format.bits == 32) {
      std::memcpy(r.out, r.src, r.n * row_bytes);
      continue;
    }
    const AffineRowCodec codec(r.format.values, r.format.group, r.format.bits);
    for (size_t i = 0; i < r.n; ++i) codec.decode(r.src + i * row_bytes, r.out + i * r.format.values);
  }
  readbacks_.clear();
  for (const VkAllocation& a : pending_free_) memory_.free(a);
  pending_free_.clear();
  for (Arena* a : {args_.get(), readback_.get()}) {
    if (a->blocks.size() > 1) {  // grow to one block holding what this submission needed
      size_t total = 0;
      for (const VkAllocation& b : a->blocks) {
        total += b.size;
        memory_.free(b);
      }
      a->blocks.clear();
      a->next_block = total;
    }
    a->used = 0;
  }
  rope_table_ = 0;
}

// ---- memory and weights ----

Result<std::unique_ptr<BackendBuffer>> VulkanBackend::alloc(size_t bytes) {
  KAKEYA_ASSIGN_OR_RETURN(VkAllocation a, memory_.allocate(bytes, MemoryKind::kDevice, MemoryUse::kScratch));
  return std::unique_ptr<BackendBuffer>(new VulkanBuffer(*this, a, bytes));
}

Result<std::unique_ptr<KvBuffer>> VulkanBackend::alloc_kv(const KvRowFormat& format, size_t capacity) {
  if (format.bits != 32 && format.bits != 8 && format.bits != 4) {
    return make_error("unsupported_type", "vulkan backend: KV storage of " + std::to_string(format.bits) +
                                              " bits (32, 8 or 4)");
  }
  const size_t bytes = capacity * (sizeof(int32_t) + 2 * format.row_bytes());
  KAKEYA_ASSIGN_OR_RETURN(VkAllocation a, memory_.allocate(bytes, MemoryKind::kDevice, MemoryUse::kKv));
  return std::unique_ptr<KvBuffer>(new VulkanKvBuffer(*this, a, format, capacity));
}

Status VulkanBackend::check_upload(const LlamaModel& model) {
  const LlamaHparams& hp = model.hparams();
  if (hp.head_dim > 256) {
    return make_error("bad_shape", "vulkan backend: head_dim " + std::to_string(hp.head_dim) +
                                         " exceeds the attention shader's 256");
  }
  const LlamaWeights& W = model.weights();
  size_t total = weight_upload_bytes(W.token_embd, WeightUse::kRows) +
                 weight_upload_bytes(W.output_norm, WeightUse::kVector) +
                 weight_upload_bytes(W.output, WeightUse::kMatmul);
  for (const LlamaLayerWeights& L : W.layers) {
    for (const WeightMatrix* m : {&L.attn_norm, &L.ffn_norm}) total += weight_upload_bytes(*m, WeightUse::kVector);
    for (const WeightMatrix* m : {&L.wq, &L.wk, &L.wv, &L.wo, &L.w_gate, &L.w_up, &L.w_down})
      total += weight_upload_bytes(*m, WeightUse::kMatmul);
  }
  if (!memory_.fits(total)) {
    const MemoryStats& s = memory_.stats();
    return make_error("out_of_memory", "vulkan:" + std::to_string(caps().index) + " (" + caps().name +
                                           "): the model's weights need " + std::to_string(total) +
                                           " bytes of device memory; " + std::to_string(s.limit - std::min(s.limit, s.held)) +
                                           " of the " + std::to_string(s.limit) + "-byte limit are free (nothing uploaded)");
  }
  return ok_status();
}

void VulkanBackend::upload_bytes(const VkAllocation& dst, const uint8_t* data, size_t bytes) {
  if (dst.mapped() != nullptr) {  // host-visible device memory (integrated GPUs, lavapipe)
    std::memcpy(dst.mapped(), data, bytes);
    return;
  }
  for (size_t off = 0; off < bytes; off += kUploadChunkBytes) {
    const size_t n = std::min(kUploadChunkBytes, bytes - off);
    const VkAllocation staged = upload(data + off, n);
    copy(staged.buffer(), staged.offset, dst.buffer(), dst.offset + off, n);
    sync();
  }
}

Result<UploadedWeight> VulkanBackend::upload_weight(const WeightMatrix& w, WeightUse use, const GgufFile*) {
  if (use != WeightUse::kVector && !shader_type(w.type)) {
    return make_error("unsupported_type", "tensor " + w.name + ": type " + ggml_type_name(w.type) +
                                              " has no shader in the vulkan backend");
  }
  sync();  // memory written directly below must not be in use by recorded ops
  const size_t bytes = weight_upload_bytes(w, use);
  KAKEYA_ASSIGN_OR_RETURN(VkAllocation a, memory_.allocate(bytes, MemoryKind::kDevice, MemoryUse::kWeights));
  UploadedWeight u;
  u.buffer = std::make_unique<VulkanBuffer>(*this, a, bytes);
  if (use == WeightUse::kVector) {
    std::vector<float> f(static_cast<size_t>(w.n_in * w.n_out));
    for (int64_t r = 0; r < w.n_out; ++r) dequantize_row(w.type, w.row(r), f.data() + r * w.n_in, w.n_in);
    upload_bytes(a, reinterpret_cast<const uint8_t*>(f.data()), bytes);
    u.tensor = Tensor{u.buffer.get(), 0, GgmlType::F32, w.n_in, w.n_out};
    host_vectors_[a.address()] = std::move(f);  // small; RoPE's frequency factors are read on the host
  } else {
    upload_bytes(a, w.data, bytes);
    u.tensor = Tensor{u.buffer.get(), 0, w.type, w.n_in, w.n_out};
  }
  return u;
}

nlohmann::json VulkanBackend::describe_weights(const ModelWeights& weights) const {
  return {{"layout", "gguf-blocks"}, {"bytes", weights.bytes()}, {"device", caps().name}};
}

// ---- ops ----

void VulkanBackend::write(const Tensor& dst, std::span<const float> src) {
  const OpScope scope(*this, "write");
  const size_t bytes = std::min(src.size() * sizeof(float), dst.bytes());
  const VkAllocation staged = upload(src.data(), bytes);
  copy(staged.buffer(), staged.offset, vk_buffer(dst), static_cast<const VulkanBuffer*>(dst.buffer)->allocation().offset + dst.offset, bytes);
  barrier();
}

void VulkanBackend::embed(const Tensor& table, std::span<const int32_t> tokens, const Tensor& out) {
  const OpScope scope(*this, "embed");
  Push p;
  p.addr(address(table)).addr(upload_i32(tokens)).addr(address(out)).u32(table.cols).u32(table.row_bytes());
  dispatch("embed", static_cast<uint32_t>(table.type), p.bytes(), static_cast<uint32_t>(tokens.size()));
}

void VulkanBackend::rms_norm(const Tensor& x, const Tensor& weight, float eps, const Tensor& out) {
  const OpScope scope(*this, "rms_norm");
  Push p;
  p.addr(address(x)).addr(address(weight)).addr(address(out)).u32(x.cols).f32(eps);
  dispatch("rms_norm", 0, p.bytes(), static_cast<uint32_t>(x.rows));
}

void VulkanBackend::matmul(std::span<const MatmulOut> outs, const Tensor& x) {
  const OpScope scope(*this, "matmul");
  const size_t n = static_cast<size_t>(x.rows);
  const size_t values = n * static_cast<size_t>(x.cols);
  uint32_t converted = 0;  // the conversion the scratch holds (0: none yet)
  for (const MatmulOut& o : outs) {
    const Tensor& w = *o.w;
    const uint32_t mode = act_variant(w.type);
    VkDeviceAddress xa = address(x), sums = 0;
    if (mode != 0) {
      // [values] converted activations, then (Q8_1) one sum per block of 32.
      const VkAllocation& s = scratch(act_scratch_, (values + values / 32) * sizeof(float));
      sums = s.address() + values * sizeof(float);
      if (converted != mode) {
        copy(vk_buffer(x), static_cast<const VulkanBuffer*>(x.buffer)->allocation().offset + x.offset, s.buffer(),
             s.offset, values * sizeof(float));
        barrier();
        const size_t count = mode <= 2 ? values : values / (mode == 4 ? 256 : 32);
        Push q;
        q.addr(s.address()).addr(sums).u32(count);
        dispatch_items("quantize_act", mode, q.bytes(), count);
        converted = mode;
      }
      xa = s.address();
    }
    const MatmulPath path = choose_matmul_path(caps(), n);
    Push p;
    p.addr(address(w)).addr(xa).addr(address(o.y)).addr(sums).u32(w.cols).u32(w.rows).u32(w.row_bytes()).u32(o.y.cols);
    if (path != MatmulPath::kMatvec) {
      p.u32(n);
      dispatch("matmul_tiled", static_cast<uint32_t>(w.type), p.bytes(), static_cast<uint32_t>((w.rows + 63) / 64),
               static_cast<uint32_t>((n + 63) / 64), 1, 256);
      continue;
    }
    // Lanes per row: the power of two nearest the row's sub-blocks of 32, at most kMatvecWg.
    const size_t subs = (static_cast<size_t>(w.cols) + 31) / 32;
    uint32_t lanes = 1;
    while (lanes < kMatvecWg && lanes * 2 <= subs) lanes *= 2;
    const uint32_t groups = static_cast<uint32_t>((static_cast<size_t>(w.rows) * lanes + kMatvecWg - 1) / kMatvecWg);
    const uint32_t gx = std::min(groups, kMaxGroups);
    p.u32(lanes).u32(n);
    dispatch("matvec", static_cast<uint32_t>(w.type), p.bytes(), gx, static_cast<uint32_t>((n + 7) / 8),
             (groups + gx - 1) / gx, kMatvecWg);
  }
}

void VulkanBackend::rope(const Tensor& x, const RopeArgs& args, std::span<const int32_t> positions) {
  const OpScope scope(*this, "rope");
  const RopeParams& rp = args.params;
  const std::vector<float>* ff = nullptr;
  if (args.freq_factors != nullptr) {
    auto it = host_vectors_.find(address(*args.freq_factors));
    if (it == host_vectors_.end()) fatal("rope: frequency factors that were not uploaded as a vector weight");
    ff = &it->second;
  }
  const bool same = rope_table_ != 0 && rope_positions_ == std::vector<int32_t>(positions.begin(), positions.end()) &&
                    std::memcmp(&rp, &rope_params_, sizeof rp) == 0 && ff == rope_factors_;
  if (!same) {
    const size_t nd = static_cast<size_t>(rp.n_dims);
    std::vector<float> table(positions.size() * nd);
    const float theta_scale = rope_theta_scale(rp);
    const std::array<float, 2> corr = rope_yarn_corr_dims(rp);
    for (size_t t = 0; t < positions.size(); ++t)
      rope_cache(rp, ff ? ff->data() : nullptr, theta_scale, corr, positions[t], table.data() + t * nd);
    rope_table_ = upload(table.data(), table.size() * sizeof(float)).address();
    rope_positions_.assign(positions.begin(), positions.end());
    rope_params_ = rp;
    rope_factors_ = ff;
  }
  Push p;
  p.addr(address(x)).addr(rope_table_).u32(args.n_heads).u32(args.head_dim).u32(rp.n_dims).u32(x.cols);
  p.u32(rp.layout == RopeLayout::kNeox ? 1 : 0);
  dispatch("rope", 0, p.bytes(), static_cast<uint32_t>(positions.size()));
}

void VulkanBackend::add_bias(const Tensor& x, const Tensor& bias) {
  const OpScope scope(*this, "add_bias");
  const size_t n = static_cast<size_t>(x.rows * x.cols);
  Push p;
  p.addr(address(x)).addr(address(bias)).u32(n).u32(x.cols);
  dispatch_items("elementwise", 2, p.bytes(), n);
}

void VulkanBackend::swiglu(const Tensor& gate, const Tensor& up) {
  const OpScope scope(*this, "swiglu");
  const size_t n = static_cast<size_t>(gate.rows * gate.cols);
  Push p;
  p.addr(address(gate)).addr(address(up)).u32(n).u32(n);
  dispatch_items("elementwise", 1, p.bytes(), n);
}

void VulkanBackend::add(const Tensor& x, const Tensor& y) {
  const OpScope scope(*this, "add");
  const size_t n = static_cast<size_t>(x.rows * x.cols);
  Push p;
  p.addr(address(x)).addr(address(y)).u32(n).u32(n);
  dispatch_items("elementwise", 0, p.bytes(), n);
}

void VulkanBackend::attention(const Tensor& q, const AttentionArgs& args, const Tensor& out) {
  const OpScope scope(*this, "attention");
  std::vector<GpuKvView> views(args.kv.size());
  for (size_t g = 0; g < args.kv.size(); ++g) {
    const KvHeadView& h = args.kv[g];
    GpuKvView& v = views[g];
    v.sink = h.sink;
    v.window = h.window;
    if (h.storage == nullptr) continue;
    const auto* s = static_cast<const VulkanKvBuffer*>(h.storage);
    const KvRowFormat& f = s->format();
    v.base = s->allocation().address();
    v.k_off = static_cast<uint32_t>(s->k_offset());
    v.v_off = static_cast<uint32_t>(s->v_offset());
    v.index = static_cast<uint32_t>(h.index);
    v.n_slots = static_cast<uint32_t>(h.n_slots);
    v.bits = static_cast<uint32_t>(f.bits);
    v.values = static_cast<uint32_t>(f.values);
    v.group = static_cast<uint32_t>(f.group);
    v.row_bytes = static_cast<uint32_t>(f.row_bytes());
  }
  const VkDeviceAddress views_addr = upload(views.data(), views.size() * sizeof(GpuKvView)).address();
  const float scale = 1.0f / std::sqrt(static_cast<float>(args.head_dim));
  Push p;
  p.addr(address(q)).addr(address(out)).addr(views_addr).addr(upload_i32(args.positions));
  p.u32(args.head_dim).u32(args.n_head / args.n_head_kv).u32(q.cols).f32(scale);
  dispatch("attention", 0, p.bytes(), static_cast<uint32_t>(args.n_head), static_cast<uint32_t>(args.positions.size()),
           1, kAttentionWg);
}

void VulkanBackend::kv_store(KvBuffer& dst, size_t slot0, const Tensor& k, const Tensor& v,
                             std::span<const int32_t> positions, std::span<const size_t> heads, size_t head_dim) {
  const OpScope scope(*this, "kv_store");
  auto& d = static_cast<VulkanKvBuffer&>(dst);
  const KvRowFormat& f = d.format();
  std::vector<int32_t> head_ids(heads.begin(), heads.end());
  const size_t per = f.bits == 32 ? f.values : (f.values + f.group - 1) / f.group;
  const size_t n = positions.size();
  Push p;
  p.addr(d.allocation().address()).addr(address(k)).addr(address(v)).addr(upload_i32(positions)).addr(upload_i32(head_ids));
  p.u32(d.k_offset()).u32(d.v_offset()).u32(slot0).u32(n).u32(k.cols).u32(head_dim);
  p.u32(f.values).u32(static_cast<size_t>(f.bits)).u32(f.group).u32(f.row_bytes());
  dispatch_items("kv_store", 0, p.bytes(), n * 2 * per);
}

void VulkanBackend::kv_copy(const KvBuffer& src, size_t src_slot, KvBuffer& dst, size_t dst_slot, size_t n) {
  if (n == 0) return;
  const OpScope scope(*this, "kv_copy");
  const auto& s = static_cast<const VulkanKvBuffer&>(src);
  auto& d = static_cast<VulkanKvBuffer&>(dst);
  const size_t rb = s.format().row_bytes();
  struct Part {
    size_t src, dst, bytes;
  };
  const Part parts[3] = {{src_slot * 4, dst_slot * 4, n * 4},
                         {s.k_offset() + src_slot * rb, d.k_offset() + dst_slot * rb, n * rb},
                         {s.v_offset() + src_slot * rb, d.v_offset() + dst_slot * rb, n * rb}};
  const VkAllocation& sa = s.allocation();
  const VkAllocation& da = d.allocation();
  if (&src != &dst) {
    for (const Part& part : parts) copy(sa.buffer(), sa.offset + part.src, da.buffer(), da.offset + part.dst, part.bytes);
    barrier();
    return;
  }
  // Compaction within one storage: the ranges may overlap, so through scratch.
  const VkAllocation& tmp = scratch(kv_scratch_, n * (4 + 2 * rb));
  size_t off = 0;
  for (const Part& part : parts) {
    copy(sa.buffer(), sa.offset + part.src, tmp.buffer(), tmp.offset + off, part.bytes);
    off += part.bytes;
  }
  barrier();
  off = 0;
  for (const Part& part : parts) {
    copy(tmp.buffer(), tmp.offset + off, da.buffer(), da.offset + part.dst, part.bytes);
    off += part.bytes;
  }
  barrier();
}

void VulkanBackend::read(const Tensor& src, std::span<float> dst) {
  const OpScope scope(*this, "read");
  const size_t bytes = std::min(dst.size() * sizeof(float), src.bytes());
  const VkAllocation r = arena_alloc(*readback_, bytes);
  copy(vk_buffer(src), static_cast<const VulkanBuffer*>(src.buffer)->allocation().offset + src.offset, r.buffer(),
       r.offset, bytes);
  barrier();
  Readback rb;
  rb.src = r.mapped();
  rb.dst = dst.data();
  rb.bytes = bytes;
  readbacks_.push_back(rb);
}

void VulkanBackend::argmax_rows(const Tensor& src, std::span<int32_t> ids) {
  const OpScope scope(*this, "argmax");
  const VkAllocation r = arena_alloc(*readback_, ids.size() * sizeof(int32_t));
  Push p;
  p.addr(address(src)).addr(r.address()).u32(src.cols);
  dispatch("argmax", 0, p.bytes(), static_cast<uint32_t>(ids.size()));
  Readback rb;
  rb.src = r.mapped();
  rb.dst = ids.data();
  rb.bytes = ids.size() * sizeof(int32_t);
  readbacks_.push_back(rb);
}

void VulkanBackend::accept_greedy(const Tensor& logits, std::span<const int32_t> drafts, std::span<int32_t> out) {
  const OpScope scope(*this, "accept_greedy");
  const size_t k = drafts.size();
  const VkAllocation& ids = scratch(accept_scratch_, (k + 1) * sizeof(int32_t));
  Push a;
  a.addr(address(logits)).addr(ids.address()).u32(logits.cols);
  dispatch("argmax", 0, a.bytes(), static_cast<uint32_t>(k + 1));
  const VkAllocation r = arena_alloc(*readback_, out.size() * sizeof(int32_t));
  Push p;
  p.addr(ids.address()).addr(drafts.empty() ? 0 : upload_i32(drafts)).addr(r.address()).u32(k);
  dispatch("accept_greedy", 0, p.bytes(), 1);
  Readback rb;
  rb.src = r.mapped();
  rb.dst = out.data();
  rb.bytes = out.size() * sizeof(int32_t);
  readbacks_.push_back(rb);
}

void VulkanBackend::kv_read(const KvBuffer& src, size_t slot0, size_t n, std::span<float> k, std::span<float> v,
                            std::span<int32_t> positions) {
  const OpScope scope(*this, "kv_read");
  const auto& s = static_cast<const VulkanKvBuffer&>(src);
  const KvRowFormat& f = s.format();
  const size_t rb = f.row_bytes();
  const VkAllocation& sa = s.allocation();
  if (!positions.empty()) {
    const VkAllocation r = arena_alloc(*readback_, n * 4);
    copy(sa.buffer(), sa.offset + slot0 * 4, r.buffer(), r.offset, n * 4);
    Readback p;
    p.src = r.mapped();
    p.dst = positions.data();
    p.bytes = n * 4;
    readbacks_.push_back(p);
  }
  for (auto [out, off] : {std::pair{k, s.k_offset()}, std::pair{v, s.v_offset()}}) {
    if (out.empty()) continue;
    const VkAllocation r = arena_alloc(*readback_, n * rb);
    copy(sa.buffer(), sa.offset + off + slot0 * rb, r.buffer(), r.offset, n * rb);
    Readback d;
    d.src = r.mapped();
    d.kv = true;
    d.format = f;
    d.n = n;
    d.out = out.data();
    readbacks_.push_back(d);
  }
  barrier();
}

// ---- profiling and probes ----

Status VulkanBackend::set_profiling(bool on) {
  sync();
  if (!on) {
    profiler_.reset();
    return ok_status();
  }
  if (profiler_) return ok_status();
  KAKEYA_ASSIGN_OR_RETURN(profiler_, VulkanProfiler::create(*device_));
  return ok_status();
}

std::map<std::string, OpTime> VulkanBackend::op_profile() const {
  return profiler_ ? profiler_->totals() : std::map<std::string, OpTime>{};
}

void VulkanBackend::clear_profile() {
  if (profiler_) profiler_->clear();
}

void VulkanBackend::stream_read(const Tensor& src) {
  const OpScope scope(*this, "stream_read");
  const size_t vectors = src.bytes() / 16;
  constexpr uint32_t kWg = 256;
  // Enough workgroups to fill any device (each invocation then loops over the rest).
  const uint32_t groups = static_cast<uint32_t>(std::min<size_t>((vectors + kWg - 1) / kWg, 4096));
  Push p;
  p.addr(address(src)).u32(vectors);
  dispatch("stream_read", 0, p.bytes(), groups, 1, 1, kWg);
}

}  // namespace kakeya::engine
