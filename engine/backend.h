#pragma once
// The seam between the Llama forward pass (llama.h) and the device that runs it: a small op-level
// interface in the manner of ggml's backends. The forward pass is written once over it; the model
// code never knows which backend runs. open_backend("cpu" | "vulkan[:N]") picks one.
//
// Execution model. Ops are ENQUEUED on a backend in program order. The CPU backend
// (cpu/cpu_backend.h) runs each op when it is enqueued; a GPU backend records them (one command
// buffer per forward pass) and executes them at sync(). Hence:
//   * No op returns device data to the host except the readback ops (read, argmax_rows, kv_read);
//     the host memory they write holds the data after the next sync() (at once on the CPU).
//   * Host values an op needs (token ids, positions, slot counts, visibility bounds, which rows
//     to move) are op ARGUMENTS, copied when the op is enqueued; host spans may be reused as soon
//     as the call returns. No host decision inside a forward pass depends on device data.
//   * A buffer may be released while ops that use it are still enqueued: the backend keeps its
//     memory until they ran.
//
// Tensors are backend-owned buffers seen through views with a type and a shape (Tensor). Weights
// are uploaded once per model and shared by every context on that model (weights(): speculative
// layer-skip and draft contexts share them); a backend may change a weight's memory layout at
// upload (the CPU backend's packed Q4_0/Q8_0 rows), so only the backend reads weight bytes.
//
// Errors are values at the points where something can be refused: opening a backend, uploading a
// model (a tensor type the backend cannot run is an error naming the tensor and the type, never a
// fallback), allocating memory ("out_of_memory" with the size). Ops do not fail: their arguments
// are the caller's REQUIREMENTS.
//
// Requirement every backend meets ("verify agrees with decode", relied on by speculative.h): in
// its default options, a forward pass over a block of fewer than kExactBlockTokens tokens gives,
// row for row, the logits of one-token passes at the same positions, bit for bit. Each backend
// states how (the CPU backend: cpu/cpu_backend.h).
//
// REQUIRES: external synchronization — a backend and every context on it are used by one thread
// at a time. The backend must outlive its buffers, uploads and contexts.
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bridge/result.h"
#include "engine/ggml_types.h"
#include "engine/model.h"
#include "engine/rope.h"

namespace kakeya::engine {

// Blocks shorter than this are computed exactly like one-token decode by every backend (above).
inline constexpr size_t kExactBlockTokens = 32;

// What ran, filled by the backend object itself (never a literal): every report's engine.backend
// and its arms' backend_used come from here.
struct BackendInfo {
  std::string name;        // "cpu", "vulkan"
  std::string device;      // CPU model name, GPU name
  std::string driver;      // CPU: the BLAS library's configuration; GPU: driver name and version
  std::string kernel_set;  // CPU: "avx512", "avx2" or "portable" (cpu/quant.h KernelIsa)
  int threads = 0;         // host threads the backend computes with
  nlohmann::json options = nlohmann::json::object();  // backend options in effect
};
nlohmann::json to_json(const BackendInfo& info);

// Device memory owned by a backend. Only the backend that made it reads or writes its bytes.
class BackendBuffer {
 public:
  virtual ~BackendBuffer() = default;
  // Bytes of device memory this buffer holds (0 for a view of the model file read in place).
  virtual size_t bytes() const = 0;
};

// A 2-D view of a buffer: `rows` rows of `cols` elements of `type` (GGML row layout, rows
// ggml_row_bytes(type, cols) apart), starting `offset` bytes into `buffer`. Activations are F32;
// an uploaded weight keeps its GGML type (its bytes may be in the backend's own layout).
struct Tensor {
  BackendBuffer* buffer = nullptr;
  size_t offset = 0;
  GgmlType type = GgmlType::F32;
  int64_t cols = 0;
  int64_t rows = 0;
  size_t row_bytes() const { return ggml_row_bytes(type, cols); }
  size_t bytes() const { return row_bytes() * static_cast<size_t>(rows); }
  // False for the empty view of an optional weight the model lacks (ModelWeights).
  bool present() const { return buffer != nullptr; }
  // Rows [first, first + n) of this view. REQUIRES: first + n <= rows.
  Tensor row_range(int64_t first, int64_t n) const;
};

// How an uploaded weight is used: row lookups (token embeddings), matmuls, or a vector that is
// read as f32 (norm weights: uploaded as F32 whatever the file's type).
enum class WeightUse { kRows, kMatmul, kVector };

// An uploaded weight: its view and the buffer that holds it.
struct UploadedWeight {
  std::unique_ptr<BackendBuffer> buffer;
  Tensor tensor;
};

// A model's weights on one backend (Backend::weights), shared by every context on the model.
// Shapes: token_embd [n_vocab][n_embd]; wq [n_head·hd][n_embd]; wk, wv [n_head_kv·hd][n_embd];
// wo [n_embd][n_head·hd]; w_gate, w_up [n_ff][n_embd]; w_down [n_embd][n_ff]; norms [1][n_embd]
// F32; output [n_vocab][n_embd] (a matmul copy of token_embd when the file ties them). Optional
// weights (present() false when the model has none): the biases, [1][rows of their matrix] F32,
// and rope_freqs [1][head_dim/2] F32 (model.h).
struct ModelWeights {
  struct Layer {
    Tensor attn_norm, wq, wk, wv, wo, ffn_norm, w_gate, w_up, w_down;
    Tensor bq, bk, bv, bo, b_gate, b_up, b_down;
  };
  Tensor token_embd;
  std::vector<Layer> layers;
  Tensor output_norm;
  Tensor output;
  Tensor rope_freqs;
  std::vector<std::unique_ptr<BackendBuffer>> buffers;  // the memory behind the views
  // Backend::describe_weights: e.g. the CPU's {"layout", "packed_matrices", "packed_bytes"}.
  nlohmann::json layout = nlohmann::json::object();
  size_t bytes() const;  // device bytes of every buffer
};

// Row format of one KV storage group (kv_cache.h): `values` floats per slot row (the group's KV
// heads × head_dim), stored as f32 (bits 32) or as affine codes (bits 8 or 4, groups of `group`
// values; engine/kv_quant.h).
struct KvRowFormat {
  size_t values = 0;
  int bits = 32;
  size_t group = 64;
  size_t row_bytes() const;  // bytes of one K (or V) row in this format
};

// Device storage of one KV group: `capacity` slots, each a position (i32), a K row and a V row.
class KvBuffer {
 public:
  KvBuffer(KvRowFormat format, size_t capacity) : format_(format), capacity_(capacity) {}
  virtual ~KvBuffer() = default;
  const KvRowFormat& format() const { return format_; }
  size_t capacity() const { return capacity_; }
  // Bytes allocated for it, MEASURED by the backend that holds it (KV resident bytes).
  virtual size_t bytes() const = 0;

 private:
  KvRowFormat format_;
  size_t capacity_;
};

// One KV head as attention reads it: the storage group holding it, its place in the group's row
// (values index·head_dim .. +head_dim), the slots in use [0, n_slots) (positions ascending), and
// the visibility rule of kv_cache.h (kv_visible_ranges): window 0 = every slot at a position
// <= the query's; else slots at position < sink or in (q - window, q].
struct KvHeadView {
  const KvBuffer* storage = nullptr;
  size_t index = 0;
  size_t n_slots = 0;
  int32_t sink = 0;
  int32_t window = 0;
};

// RoPE over n_heads heads of head_dim values per row: the variant `params` describes (engine/rope.h:
// normal or NEOX pairs, frequency base and factors, linear or YaRN position scaling).
struct RopeArgs {
  int64_t n_heads = 0;
  int64_t head_dim = 0;
  RopeParams params;                     // params.n_dims <= head_dim, even
  const Tensor* freq_factors = nullptr;  // [1][params.n_dims / 2] F32 (rope_freqs.weight), or none (all 1)
};

// Attention of n queries over KV heads (GQA: query head h reads KV head h / (n_head / n_head_kv)).
struct AttentionArgs {
  int64_t n_head = 0;
  int64_t n_head_kv = 0;
  int64_t head_dim = 0;
  std::span<const KvHeadView> kv;        // [n_head_kv]
  std::span<const int32_t> positions;    // [n] query positions, ascending
};

// One output of a fused matmul: y [n][w->rows] = x · W^T.
struct MatmulOut {
  const Tensor* w = nullptr;
  Tensor y;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual const BackendInfo& info() const = 0;

  // ---- memory ----
  // Errors: "out_of_memory" naming the size.
  virtual Result<std::unique_ptr<BackendBuffer>> alloc(size_t bytes) = 0;
  // Storage of `capacity` KV slots in `format`. Errors: "out_of_memory", "unsupported_type"
  // (a format the backend cannot store, naming it).
  virtual Result<std::unique_ptr<KvBuffer>> alloc_kv(const KvRowFormat& format, size_t capacity) = 0;
  // Device bytes held right now by this backend's buffers, KV storage and uploads.
  virtual size_t allocated_bytes() const = 0;
  // The backend's memory as measured by its allocator, for reports (engine.memory, beside the
  // host's peak RSS): at least {"held_bytes"}; a GPU backend adds peaks and bytes per use
  // (weights, kv, scratch, staging).
  virtual nlohmann::json memory_report() const { return {{"held_bytes", allocated_bytes()}}; }

  // ---- weights ----
  // `model`'s weights on this backend: uploaded on the first call, then shared while any caller
  // holds the result. Errors: upload_weight's.
  Result<std::shared_ptr<const ModelWeights>> weights(const LlamaModel& model);
  // Called by weights() before the first byte of `model` is uploaded: a backend refuses a model
  // it cannot hold here ("out_of_memory" naming the bytes needed and available, "bad_shape"
  // naming a shape its kernels cannot run), so nothing is uploaded in vain.
  virtual Status check_upload(const LlamaModel& model) { (void)model; return ok_status(); }
  // One weight of [w.n_out][w.n_in]. `source` is the file w points into (the backend may drop its
  // pages once it holds a copy), or nullptr. Errors: "unsupported_type" naming the tensor and its
  // type, "out_of_memory".
  virtual Result<UploadedWeight> upload_weight(const WeightMatrix& w, WeightUse use, const GgufFile* source) = 0;
  // A description of the uploaded weights' layout for reports (ModelWeights::layout).
  virtual nlohmann::json describe_weights(const ModelWeights& weights) const = 0;

  // ---- ops (enqueued; shapes in rows × cols; all activations F32) ----
  // dst ← src (host f32, dst.rows × dst.cols values). For inputs of tests and tools.
  virtual void write(const Tensor& dst, std::span<const float> src) = 0;
  // out[t] = table row tokens[t] as f32. out [n][table.cols]. REQUIRES: ids in [0, table.rows).
  virtual void embed(const Tensor& table, std::span<const int32_t> tokens, const Tensor& out) = 0;
  // out[t] = x[t] / sqrt(mean(x[t]²) + eps) · weight (llama.h). weight [1][cols] F32.
  virtual void rms_norm(const Tensor& x, const Tensor& weight, float eps, const Tensor& out) = 0;
  // Every output of `outs` (each y [x.rows][w->rows]) from the same x [n][w->cols]; a backend may
  // fuse them (one activation conversion for several weights).
  virtual void matmul(std::span<const MatmulOut> outs, const Tensor& x) = 0;
  // In place on x [n][n_heads·head_dim], row t at positions[t] (engine/rope.h for the arithmetic).
  virtual void rope(const Tensor& x, const RopeArgs& args, std::span<const int32_t> positions) = 0;
  // gate ← silu(gate) · up, elementwise (silu(g) = g / (1 + e^−g)).
  virtual void swiglu(const Tensor& gate, const Tensor& up) = 0;
  // x ← x + y, elementwise.
  virtual void add(const Tensor& x, const Tensor& y) = 0;
  // x[t] ← x[t] + bias for every row t (a matmul's bias, as ggml_add broadcasts it: Qwen2's
  // attn_q/k/v.bias). bias [1][x.cols] F32 (uploaded as WeightUse::kVector).
  virtual void add_bias(const Tensor& x, const Tensor& bias) = 0;
  // out [n][n_head·hd]: per query t and head h, softmax(q_h · K^T / sqrt(hd)) · V over the KV
  // slots visible at positions[t] (softmax in f32 with a double-precision denominator).
  virtual void attention(const Tensor& q, const AttentionArgs& args, const Tensor& out) = 0;

  // ---- KV storage ops ----
  // Writes slots [slot0, slot0 + n) of dst: positions[t], and the K and V rows gathered from row
  // t of k and v ([n][n_head_kv·head_dim] f32): the heads `heads` in storage order, head_dim
  // values each, encoded in dst's format (quantized when the storage is).
  // REQUIRES: slot0 + n <= dst.capacity(), heads.size() · head_dim == dst.format().values.
  virtual void kv_store(KvBuffer& dst, size_t slot0, const Tensor& k, const Tensor& v,
                        std::span<const int32_t> positions, std::span<const size_t> heads,
                        size_t head_dim) = 0;
  // Moves n slots (position, K, V) from src[src_slot ..] to dst[dst_slot ..]: growing into new
  // storage, or compacting one storage (src == dst, dst_slot <= src_slot, ranges may overlap).
  // REQUIRES: equal formats.
  virtual void kv_copy(const KvBuffer& src, size_t src_slot, KvBuffer& dst, size_t dst_slot, size_t n) = 0;

  // ---- readback ----
  // dst ← src as f32 (src.rows × src.cols values).
  virtual void read(const Tensor& src, std::span<float> dst) = 0;
  // ids[r] = the index of the largest value of row r (ties: the lowest index; sampling.h argmax).
  virtual void argmax_rows(const Tensor& src, std::span<int32_t> ids) = 0;
  // Slots [slot0, slot0 + n) of src decoded to f32: k, v [n][values], positions [n]; an empty
  // span skips that part.
  virtual void kv_read(const KvBuffer& src, size_t slot0, size_t n, std::span<float> k,
                       std::span<float> v, std::span<int32_t> positions) = 0;
  // Runs every enqueued op; readback memory is written when it returns.
  virtual void sync() = 0;

 private:
  std::map<uint64_t, std::weak_ptr<const ModelWeights>> uploads_;  // by LlamaModel::id()
};

// Options of open_backend. Each backend reads the ones it knows and refuses bad values.
struct BackendOptions {
  int threads = 1;                      // host threads (>= 1)
  std::string weight_layout = "auto";   // cpu: auto (packed on AVX2/AVX-512 CPUs), packed, row-major
  std::string batched_matmul = "auto";  // cpu: auto, sgemm, quantized (cpu/cpu_backend.h)
  uint64_t max_device_bytes = 0;        // vulkan: device memory the backend may hold (0 = the heap)
};

// The backend names open_backend knows, in preference order: {"cpu", "vulkan"}.
std::vector<std::string> known_backends();

// Opens a backend: "cpu", or "vulkan" / "vulkan:N" (device N; "vulkan" = the first discrete GPU,
// else device 0: vulkan/vk_device.h). Errors: "bad_param" (an unknown spec or option value, or a
// device number past the devices present, named), "backend_unavailable" (a known backend this
// build or machine cannot open, saying why: never a fallback to another backend).
Result<std::unique_ptr<Backend>> open_backend(const std::string& spec, const BackendOptions& options = {});

}  // namespace kakeya::engine
