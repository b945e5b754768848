#pragma once
// The CPU backend: the engine's own kernels (cpu/quant.h for decode, cpu/gemm.h for batches;
// run-time choice of the AVX-512, AVX2 or portable set), OpenBLAS sgemm as an option, a thread
// pool (cpu/thread_pool.h) that splits every op. Ops run when they are enqueued; sync() has
// nothing to wait for.
//
// Options (BackendOptions, checked by the constructor's factory open_cpu_backend):
//   threads         the pool's threads (the calling thread included). The pool blocks rather than
//                   spins between jobs (thread_pool.h); OpenBLAS, when the sgemm option uses it,
//                   runs single-threaded, process-wide, and the pool splits every sgemm: OpenBLAS's
//                   own threads busy-wait after each call (~0.1 s), which on a host shared with a
//                   busy process stole the CPU from the decode that follows a prefill; its pthread
//                   build's workers are joined (openblas_single_threaded below).
//   weight_layout   "packed": matmul weights (not token_embd's row lookups) copied at upload,
//                   Q4_0/Q8_0 into the row-interleaved layout of the packed kernels (quant.h,
//                   kPackRows), the other types as stored; the copies are 2 MiB-aligned and
//                   advised to transparent huge pages, and the file's pages of those tensors are
//                   released, so weights are resident once. "row-major": every weight read in
//                   place from the file (4 KiB pages); "auto": packed when the active kernel set is
//                   a SIMD one (the portable packed kernels copy each row back first and are
//                   slower). Measured (bench/README.md): one-thread decode on the Xeon measured,
//                   alternating, read a huge-page copy faster than the file's mapping: F16 by
//                   13-20%, BF16 23-28%, Q4_K 4-7%, Q6_K -1 to +5%; the packed layout is the
//                   int8 GEMM's own (row-major Q4_0/Q8_0 are packed a group at a time per batch).
//   batched_matmul  how a batch of n > 1 tokens runs (MatmulMode below).
//
// Paths of a batch of n tokens (BatchPath):
//   * one token (decode): quantize_activations + matvec, multithreaded over rows — activations are
//     converted exactly like ggml-cpu (Q8_0/Q8_K/F16/BF16), so logits match llama.cpp's to ~1e-6
//     (up to ~1e-3 on the fragile synthetic references).
//   * kExact: the same activations through gemm(..., decode_exact) — the int8 GEMM kernels where
//     they round like decode (Q4_0, Q8_0 packed, Q4_K, Q6_K: gemm.h), the decode kernels with
//     weight tiles reused across the batch otherwise — and attention token by token, so every row
//     is bit for bit what token-by-token decode gives.
//   * kGemm: every type with a GEMM kernel of its own through it (F32/F16/BF16 summed in the
//     micro-kernel's f32 order), and attention of the whole batch through gemm_f32 (scores and
//     values per head and block of queries): rows differ from decode by f32 rounding only where a
//     kernel rounds differently.
//   * kSgemm: weights dequantized to f32 in row tiles (F32 weights used in place) and multiplied
//     with OpenBLAS cblas_sgemm; attention of the batch through sgemm too. Activations are NOT
//     quantized, so for quantized weights the logits differ from the decode path by the
//     activation-quantization error (~2e-2 on the synthetic references).
// MatmulMode picks them: kAuto (the default) kExact below kMinBatchedTokens tokens and kGemm from
// there; kQuantizedActivations kExact at every size; kSgemm kSgemm at every size.
// "Verify agrees with decode" (backend.h): kAuto and kQuantizedActivations run every batch
// shorter than kMinBatchedTokens (>= kExactBlockTokens) on kExact, so blocks below
// kExactBlockTokens are exact; kQuantizedActivations makes every batch exact; kSgemm gives the
// requirement up (speculative output can then differ from AR: the lossless check reports it).
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/backend.h"
#include "engine/cpu/gemm.h"
#include "engine/cpu/quant.h"
#include "engine/cpu/thread_pool.h"
#include "engine/kv_cache.h"

namespace kakeya::engine {

enum class MatmulMode { kAuto, kSgemm, kQuantizedActivations };
enum class BatchPath { kExact, kGemm, kSgemm };
inline constexpr size_t kMinBatchedTokens = 32;  // kAuto's threshold for kGemm
static_assert(kMinBatchedTokens >= kExactBlockTokens, "kAuto must keep verify blocks exact");

// "auto" | "sgemm" | "quantized". Errors: "bad_param" naming the value.
Result<MatmulMode> parse_matmul_mode(const std::string& name);
const char* matmul_mode_name(MatmulMode mode);  // "auto", "sgemm", "quantized"
// Memory the decode kernels stream from (the weight copies of weight_layout "packed"): 2 MiB-aligned
// and advised to transparent huge pages (MADV_HUGEPAGE; honoured where THP is "madvise" or
// "always", ignored elsewhere), so a sweep over the weights takes one TLB miss per 2 MiB instead of
// per 4 KiB and the prefetches run on. The size is not rounded up: the pages past the last whole
// 2 MiB stay small, so no memory is added. Below 2 MiB: 64-byte aligned. nullptr when it cannot be
// allocated; release with std::free.
uint8_t* streamed_bytes(size_t bytes);

// OpenBLAS single-threaded for the rest of the process (the pool splits every sgemm), and the
// workers of its pthread build joined: that build starts them when the library loads, and they
// spin (sched_yield) for 2^28 TSC cycles before they sleep, about a tenth of a CPU-second taken
// from the model load on a 2-core host. Runs once per process (every CpuBackend calls it; calling
// it again does nothing). blas_thread_shutdown_ is OpenBLAS's, exported by its pthread build and
// looked up at run time (dlsym), so an OpenMP or serial build behind Debian's alternatives still
// loads; only the pthread build is shut down. Afterwards nothing may call
// openblas_set_num_threads: in OpenBLAS 0.3.x it starts the workers again.
void openblas_single_threaded();

// weight_layout "auto" resolved on this machine: "packed" or "row-major".
std::string resolve_weight_layout(const std::string& layout);

// Host memory of the CPU backend: owned (64-byte aligned) or a view of the model's mapping, with
// the packed copy of a matmul weight when it has one.
// Bytes of live CPU buffers, shared by a backend and the buffers it made (which may outlive it).
using CpuByteCounter = std::shared_ptr<std::atomic<size_t>>;

class CpuBuffer final : public BackendBuffer {
 public:
  // Owned, zero-initialised, 64-byte aligned memory. nullptr when it cannot be allocated.
  static std::unique_ptr<CpuBuffer> allocate(size_t bytes, CpuByteCounter counter);
  // A view of memory owned elsewhere (the model file): none of the backend's own bytes.
  static std::unique_ptr<CpuBuffer> view(const uint8_t* data, CpuByteCounter counter);
  // Takes ownership of `data`, a weight copied from the model file (std::free-able memory of
  // `bytes` bytes), counted as the backend's.
  static std::unique_ptr<CpuBuffer> adopt(uint8_t* data, size_t bytes, CpuByteCounter counter);
  ~CpuBuffer() override;
  size_t bytes() const override { return owned_bytes_; }
  uint8_t* data() const { return data_; }
  // The packed layout of the same matrix (quant.h), owned by this buffer, or nullptr.
  const uint8_t* packed() const { return packed_; }
  size_t packed_bytes() const { return packed_bytes_; }
  // Whether data() is a copy of a model weight (adopt) rather than the file's bytes or scratch.
  bool owns_copy() const { return copy_; }
  // Takes ownership of `packed` (std::aligned_alloc memory of `bytes` bytes).
  void set_packed(uint8_t* packed, size_t bytes);

 private:
  explicit CpuBuffer(CpuByteCounter counter) : counter_(std::move(counter)) {}
  uint8_t* data_ = nullptr;
  bool owns_data_ = false;
  bool copy_ = false;
  uint8_t* packed_ = nullptr;
  size_t packed_bytes_ = 0;
  size_t owned_bytes_ = 0;
  CpuByteCounter counter_;
};

// KV storage in host memory: positions [capacity] i32, K and V [capacity][row_bytes].
class CpuKvBuffer final : public KvBuffer {
 public:
  // nullptr when the memory cannot be allocated.
  static std::unique_ptr<CpuKvBuffer> allocate(const KvRowFormat& format, size_t capacity, CpuByteCounter counter);
  ~CpuKvBuffer() override;
  size_t bytes() const override { return bytes_; }
  int32_t* positions() const { return positions_; }
  uint8_t* k() const { return k_; }
  uint8_t* v() const { return v_; }

 private:
  CpuKvBuffer(const KvRowFormat& format, size_t capacity, CpuByteCounter counter);
  int32_t* positions_ = nullptr;
  uint8_t* k_ = nullptr;
  uint8_t* v_ = nullptr;
  size_t bytes_ = 0;
  CpuByteCounter counter_;
};

class CpuBackend final : public Backend {
 public:
  // REQUIRES: options checked by open_cpu_backend.
  CpuBackend(int threads, bool pack_weights, MatmulMode batched_matmul);
  ~CpuBackend() override;

  const BackendInfo& info() const override { return info_; }
  Result<std::unique_ptr<BackendBuffer>> alloc(size_t bytes) override;
  Result<std::unique_ptr<KvBuffer>> alloc_kv(const KvRowFormat& format, size_t capacity) override;
  size_t allocated_bytes() const override;
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
  // argmax_rows, then greedy_acceptance on the host (no device in between).
  void accept_greedy(const Tensor& logits, std::span<const int32_t> drafts, std::span<int32_t> out) override;
  void kv_read(const KvBuffer& src, size_t slot0, size_t n, std::span<float> k, std::span<float> v,
               std::span<int32_t> positions) override;
  void sync() override {}

  MatmulMode batched_matmul() const { return batched_matmul_; }
  // The path of a batch of n tokens (matmuls and attention alike); one token is always kExact.
  BatchPath batch_path(size_t n) const {
    if (n <= 1 || batched_matmul_ == MatmulMode::kQuantizedActivations) return BatchPath::kExact;
    if (batched_matmul_ == MatmulMode::kSgemm) return BatchPath::kSgemm;
    return n >= kMinBatchedTokens ? BatchPath::kGemm : BatchPath::kExact;
  }
  ThreadPool& pool() { return pool_; }

 private:
  // The f32 rows of a tensor in this backend's memory.
  static float* f32(const Tensor& t);
  // matmul paths (cpu_matmul.cpp): outputs sharing a weight type and input width through the
  // engine's kernels (decode for one token, gemm for more), or one weight through OpenBLAS.
  void matmul_kernels(std::span<const MatmulOut> outs, const Tensor& x, BatchPath path);
  void matmul_sgemm(const Tensor& w, const float* x, size_t n, float* y);
  // attention (cpu_attention.cpp): per-head views of the KV slots (quantized storage decoded into
  // scratch), then the batched (gemm_f32 or OpenBLAS, per head and block of queries) or per-token
  // path.
  void kv_slots(const AttentionArgs& args);
  void attention_batched(const float* q, const AttentionArgs& args, float* out, bool openblas);
  void attention_per_token(const float* q, const AttentionArgs& args, float* out);
  // Per-thread f32 scratch of at least n floats (RoPE cache).
  void reserve_thread_f32(size_t n);

  // Scratch of the ops, reused across calls (one op runs at a time).
  struct Scratch {
    std::vector<ActivationBuffer> acts;             // matmul: converted activations [n]
    std::vector<GemmScratch> gemm;                  // per thread: the GEMM kernels' scratch
    std::vector<float> tile;                        // sgemm path: dequantized weight rows
    std::vector<std::vector<float>> thread_scores;  // per thread: attention scores [queries or heads][slots]
    std::vector<std::vector<float>> thread_f32;     // per thread: RoPE cache
    std::vector<KvSlots> kv_views;                  // attention: one view per KV head
    std::vector<float> kv_dequant;                  // attention: quantized KV decoded to f32
    std::vector<float> gather;                      // kv_store: one row of a group's heads
  };

  BackendInfo info_;
  bool pack_weights_;
  MatmulMode batched_matmul_;
  ThreadPool pool_;
  Scratch s_;
  CpuByteCounter allocated_;
};

// The batched_matmul "sgemm" option splits every sgemm over the pool, so with threads > 1 it calls
// OpenBLAS from several threads at once. OpenBLAS's serial build (openblas_get_parallel() 0, e.g.
// Debian's libopenblas0-serial when chosen by update-alternatives) is not safe for that: a 2-thread
// prefill through it came out wrong by up to 28 in a logit. Error "bad_param" saying so for that
// combination; ok otherwise (openblas_parallel: 0 serial, 1 pthreads, 2 OpenMP).
Status check_sgemm_threads(MatmulMode mode, int threads, int openblas_parallel);

// The factory behind open_backend("cpu"). Errors: "bad_param" (threads < 1, an unknown
// weight_layout or batched_matmul, naming it; check_sgemm_threads).
Result<std::unique_ptr<Backend>> open_cpu_backend(const BackendOptions& options);

}  // namespace kakeya::engine
