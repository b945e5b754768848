// The CPU backend: construction, memory, weight upload and the elementwise ops. Matmul paths
// are in cpu_matmul.cpp, attention and the KV storage ops in cpu_attention.cpp.
#include "engine/cpu/cpu_backend.h"

#include <cblas.h>

#include <dlfcn.h>
#include <sys/mman.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "engine/cpu/cpu_features.h"
#include "engine/sampling.h"

extern "C" {
// OpenBLAS extensions (declared in openblas_config.h on some distributions only).
char* openblas_get_config(void);
int openblas_get_parallel(void);  // 0 sequential, 1 pthreads, 2 OpenMP
}

namespace kakeya::engine {
namespace {

uint8_t* aligned_bytes(size_t bytes) {
  return static_cast<uint8_t*>(std::aligned_alloc(64, std::max<size_t>(64, (bytes + 63) / 64 * 64)));
}

// Four floats as one vector (GCC/Clang vector extension, SSE2 on baseline x86-64): the element
// loops below written with it, as -O2's cost model leaves loops of unknown length scalar. Each
// lane rounds as the scalar expression would.
using Float4 = float __attribute__((vector_size(16)));
inline Float4 load4(const float* p) {
  Float4 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline void store4(float* p, Float4 v) { std::memcpy(p, &v, sizeof v); }

// y = x / sqrt(mean(x²) + eps) · w (ggml rms_norm then mul; sum of squares in double, in 8
// interleaved partial sums combined in a fixed order: the same bits on every machine, and no
// chain of dependent adds, so the compiler vectorizes it). y never overlaps x or w.
void rms_norm_row(const float* __restrict x, const float* __restrict w, int64_t n, float eps, float* __restrict y) {
  double s0 = 0, s1 = 0, s2 = 0, s3 = 0, s4 = 0, s5 = 0, s6 = 0, s7 = 0;
  auto sq = [&](int64_t i) { return static_cast<double>(x[i]) * x[i]; };
  int64_t k = 0;
  for (; k + 8 <= n; k += 8) {
    s0 += sq(k), s1 += sq(k + 1), s2 += sq(k + 2), s3 += sq(k + 3);
    s4 += sq(k + 4), s5 += sq(k + 5), s6 += sq(k + 6), s7 += sq(k + 7);
  }
  double p[8] = {s0, s1, s2, s3, s4, s5, s6, s7};  // locals above: an array stayed in memory
  for (; k < n; ++k) p[k % 8] += sq(k);
  const double sum = ((p[0] + p[4]) + (p[2] + p[6])) + ((p[1] + p[5]) + (p[3] + p[7]));
  const float mean = static_cast<float>(sum / static_cast<double>(n));
  const float scale = 1.0f / std::sqrt(mean + eps);
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) store4(y + i, (load4(x + i) * scale) * load4(w + i));
  for (; i < n; ++i) y[i] = (x[i] * scale) * w[i];
}

// Rotates the pairs of n_heads heads of head_dim values by the angles of `cache` (rope_cache).
void rope_row(float* x, int64_t n_heads, int64_t head_dim, const RopeParams& p, const float* cache) {
  // Element offsets of a pair: (2i, 2i + 1) in the normal layout, (i, i + n_dims/2) in NEOX.
  const bool neox = p.layout == RopeLayout::kNeox;
  const int64_t step = neox ? 1 : 2;
  const int64_t second = neox ? p.n_dims / 2 : 1;
  for (int64_t h = 0; h < n_heads; ++h) {
    float* v = x + h * head_dim;
    for (int64_t i0 = 0; i0 < p.n_dims; i0 += 2) {
      const float c = cache[i0];
      const float s = cache[i0 + 1];
      float* a = v + (i0 / 2) * step;
      const float x0 = a[0];
      const float x1 = a[second];
      a[0] = x0 * c - x1 * s;
      a[second] = x0 * s + x1 * c;
    }
  }
}

// Every type with dot-product kernels (engine/cpu/quant.h) runs the matmul paths.
bool matmul_type(GgmlType t) { return has_dot_kernels(t); }

}  // namespace

Result<MatmulMode> parse_matmul_mode(const std::string& name) {
  if (name == "auto") return MatmulMode::kAuto;
  if (name == "sgemm") return MatmulMode::kSgemm;
  if (name == "quantized") return MatmulMode::kQuantizedActivations;
  return make_error("bad_param", "batched_matmul \"" + name + "\" is not auto, sgemm or quantized");
}

const char* matmul_mode_name(MatmulMode mode) {
  switch (mode) {
    case MatmulMode::kAuto: return "auto";
    case MatmulMode::kSgemm: return "sgemm";
    case MatmulMode::kQuantizedActivations: return "quantized";
  }
  return "auto";
}

std::string resolve_weight_layout(const std::string& layout) {
  if (layout != "auto") return layout;
  return active_kernel_isa() != KernelIsa::Portable ? "packed" : "row-major";
}

// ---- buffers ----

std::unique_ptr<CpuBuffer> CpuBuffer::allocate(size_t bytes, CpuByteCounter counter) {
  uint8_t* p = aligned_bytes(bytes);
  if (p == nullptr) return nullptr;
  std::memset(p, 0, bytes);
  std::unique_ptr<CpuBuffer> b(new CpuBuffer(std::move(counter)));
  b->data_ = p;
  b->owns_data_ = true;
  b->owned_bytes_ = bytes;
  *b->counter_ += bytes;
  return b;
}

std::unique_ptr<CpuBuffer> CpuBuffer::view(const uint8_t* data, CpuByteCounter counter) {
  std::unique_ptr<CpuBuffer> b(new CpuBuffer(std::move(counter)));
  b->data_ = const_cast<uint8_t*>(data);  // never written: weights are read-only
  return b;
}

std::unique_ptr<CpuBuffer> CpuBuffer::adopt(uint8_t* data, size_t bytes, CpuByteCounter counter) {
  std::unique_ptr<CpuBuffer> b(new CpuBuffer(std::move(counter)));
  b->data_ = data;
  b->owns_data_ = true;
  b->copy_ = true;
  b->owned_bytes_ = bytes;
  *b->counter_ += bytes;
  return b;
}

void CpuBuffer::set_packed(uint8_t* packed, size_t bytes) {
  packed_ = packed;
  packed_bytes_ = bytes;
  owned_bytes_ += bytes;
  *counter_ += bytes;
}

CpuBuffer::~CpuBuffer() {
  *counter_ -= owned_bytes_;
  if (owns_data_) std::free(data_);
  std::free(packed_);
}

uint8_t* streamed_bytes(size_t bytes) {
  constexpr size_t kHuge = size_t{2} << 20;
  if (bytes < kHuge) return aligned_bytes(bytes);
  void* p = nullptr;  // posix_memalign: aligned_alloc wants the size a multiple of the alignment
  if (::posix_memalign(&p, kHuge, bytes) != 0) return nullptr;
  ::madvise(p, bytes / kHuge * kHuge, MADV_HUGEPAGE);
  return static_cast<uint8_t*>(p);
}

Status check_sgemm_threads(MatmulMode mode, int threads, int openblas_parallel) {
  if (mode != MatmulMode::kSgemm || threads <= 1 || openblas_parallel != 0) return ok_status();
  return make_error("bad_param", "cpu backend: batched_matmul \"sgemm\" with threads " + std::to_string(threads) +
                                     " calls OpenBLAS from several threads at once, and this process loaded "
                                     "OpenBLAS's serial build (openblas_get_parallel() = 0), which gives wrong "
                                     "results that way: use threads 1, batched_matmul auto or quantized, or the "
                                     "pthread build of OpenBLAS");
}

void openblas_single_threaded() {
  static std::once_flag once;
  std::call_once(once, [] {
    openblas_set_num_threads(1);
    if (openblas_get_parallel() != 1) return;  // not the pthread build: no workers of its own
    using Shutdown = int (*)();
    if (auto shutdown = reinterpret_cast<Shutdown>(dlsym(RTLD_DEFAULT, "blas_thread_shutdown_"))) shutdown();
  });
}

// ---- the backend ----

CpuBackend::CpuBackend(int threads, bool pack_weights, MatmulMode batched_matmul)
    : pack_weights_(pack_weights),
      batched_matmul_(batched_matmul),
      pool_(threads),
      allocated_(std::make_shared<std::atomic<size_t>>(0)) {
  openblas_single_threaded();
  const CpuFeatures& f = cpu_features();
  info_.name = "cpu";
  info_.device = f.brand.empty() ? "unknown CPU" : f.brand;
  const char* blas = openblas_get_config();
  info_.driver = blas != nullptr ? blas : "OpenBLAS";
  info_.kernel_set = kernel_isa_name(active_kernel_isa());
  info_.threads = pool_.n_threads();
  info_.options = {{"weight_layout", pack_weights ? "packed" : "row-major"},
                   {"batched_matmul", matmul_mode_name(batched_matmul)}};
  // The F16/BF16 mat-vec kernel (quant.h Dense16Kernel; kDense16Env can name another).
  if (active_kernel_isa() == KernelIsa::Avx512)
    info_.options["dense16_kernel"] = dense16_kernel_name(avx512_dense16_kernel());
  s_.thread_f32.resize(static_cast<size_t>(pool_.n_threads()));
  s_.thread_scores.resize(static_cast<size_t>(pool_.n_threads()));
  s_.gemm.resize(static_cast<size_t>(pool_.n_threads()));
}

CpuBackend::~CpuBackend() = default;

Result<std::unique_ptr<Backend>> open_cpu_backend(const BackendOptions& o) {
  if (o.threads < 1) return make_error("bad_param", "cpu backend: threads " + std::to_string(o.threads) + " < 1");
  if (o.weight_layout != "auto" && o.weight_layout != "packed" && o.weight_layout != "row-major") {
    return make_error("bad_param",
                      "cpu backend: weight_layout \"" + o.weight_layout + "\" is not auto, packed or row-major");
  }
  KernelIsa cap;
  if (const char* unnamed = kernel_isa_cap(&cap); unnamed != nullptr) {
    return make_error("bad_param", std::string("cpu backend: ") + kKernelIsaEnv + " \"" + unnamed +
                                       "\" is not avx512, avx2 or portable");
  }
  Dense16Kernel dense16;
  if (const char* unnamed = dense16_env(&dense16); unnamed != nullptr) {
    return make_error("bad_param", std::string("cpu backend: ") + kDense16Env + " \"" + unnamed +
                                       "\" is not one-row or two-streams, optionally followed by +fma or +vdpbf16ps" +
                                       (std::strstr(unnamed, "vdpbf16ps") != nullptr && !cpu_features().avx512bf16
                                            ? " (this CPU has no AVX512-BF16)"
                                            : ""));
  }
  KAKEYA_ASSIGN_OR_RETURN(MatmulMode mode, parse_matmul_mode(o.batched_matmul));
  KAKEYA_TRY(check_sgemm_threads(mode, o.threads, openblas_get_parallel()));
  return std::unique_ptr<Backend>(new CpuBackend(o.threads, resolve_weight_layout(o.weight_layout) == "packed", mode));
}

float* CpuBackend::f32(const Tensor& t) {
  return reinterpret_cast<float*>(static_cast<CpuBuffer*>(t.buffer)->data() + t.offset);
}

void CpuBackend::reserve_thread_f32(size_t n) {
  for (auto& buf : s_.thread_f32)
    if (buf.size() < n) buf.resize(n);
}

Result<std::unique_ptr<BackendBuffer>> CpuBackend::alloc(size_t bytes) {
  auto b = CpuBuffer::allocate(bytes, allocated_);
  if (!b) return make_error("out_of_memory", "cpu backend: cannot allocate " + std::to_string(bytes) + " bytes");
  return std::unique_ptr<BackendBuffer>(std::move(b));
}

size_t CpuBackend::allocated_bytes() const { return allocated_->load(); }

Result<UploadedWeight> CpuBackend::upload_weight(const WeightMatrix& w, WeightUse use, const GgufFile* source) {
  UploadedWeight u;
  if (use == WeightUse::kVector) {
    // Norm weights: dequantized to f32 once (ggml to_float).
    const size_t n = static_cast<size_t>(w.n_in * w.n_out);
    auto b = CpuBuffer::allocate(n * sizeof(float), allocated_);
    if (!b) return make_error("out_of_memory", "cpu backend: cannot allocate " + std::to_string(n * sizeof(float)) +
                                                   " bytes for " + w.name);
    for (int64_t r = 0; r < w.n_out; ++r)
      dequantize_row(w.type, w.row(r), reinterpret_cast<float*>(b->data()) + r * w.n_in, w.n_in);
    u.tensor = Tensor{b.get(), 0, GgmlType::F32, w.n_in, w.n_out};
    u.buffer = std::move(b);
    return u;
  }
  if (use == WeightUse::kMatmul && !matmul_type(w.type)) {
    return make_error("unsupported_type", "tensor " + w.name + ": type " + ggml_type_name(w.type) +
                                              " has no matmul kernel in the cpu backend");
  }
  // Read in place from the file, unless weight_layout "packed" gives matmul weights a copy: the
  // packed layout for a packable type, the file's own layout in huge pages for the others.
  auto b = CpuBuffer::view(w.data, allocated_);
  if (use == WeightUse::kMatmul && pack_weights_) {
    const size_t file_bytes = static_cast<size_t>(w.n_out) * w.row_bytes;
    const bool pack = packable(w.type, w.n_in);
    const size_t bytes = pack ? packed_bytes(w.type, w.n_in, w.n_out) : file_bytes;
    uint8_t* copy = streamed_bytes(bytes);
    if (copy == nullptr) {
      return make_error("out_of_memory", "cannot allocate " + std::to_string(bytes) + " bytes for the " +
                                             (pack ? "packed copy" : "copy") + " of " + w.name);
    }
    if (pack) {
      pack_rows(w.type, w.data, w.n_in, w.n_out, copy);
      b->set_packed(copy, bytes);
    } else {
      // As stored, but in huge pages: decode reads it faster than the file's 4 KiB pages
      // (cpu_backend.h, weight_layout).
      std::memcpy(copy, w.data, bytes);
      b = CpuBuffer::adopt(copy, bytes, allocated_);
    }
    // The copy is what the kernels read: drop the file's pages so the weights are resident once.
    if (source != nullptr) source->release_pages(w.data, file_bytes);
  }
  u.tensor = Tensor{b.get(), 0, w.type, w.n_in, w.n_out};
  u.buffer = std::move(b);
  return u;
}

nlohmann::json CpuBackend::describe_weights(const ModelWeights& weights) const {
  size_t packed = 0, packed_bytes_total = 0, copied = 0, copied_bytes = 0;
  for (const auto& b : weights.buffers) {
    const auto& cb = static_cast<const CpuBuffer&>(*b);
    if (cb.packed() != nullptr) {
      ++packed;
      packed_bytes_total += cb.packed_bytes();
    } else if (cb.owns_copy()) {
      ++copied;
      copied_bytes += cb.bytes();
    }
  }
  return {{"layout", pack_weights_ ? "packed" : "row-major"},
          {"packed_matrices", packed},
          {"packed_bytes", packed_bytes_total},
          {"copied_matrices", copied},
          {"copied_bytes", copied_bytes},
          {"bytes", weights.bytes()}};
}

// ---- elementwise ops ----

void CpuBackend::write(const Tensor& dst, std::span<const float> src) {
  std::memcpy(f32(dst), src.data(), std::min(src.size() * sizeof(float), dst.bytes()));
}

void CpuBackend::embed(const Tensor& table, std::span<const int32_t> tokens, const Tensor& out) {
  const auto* rows = static_cast<const CpuBuffer*>(table.buffer)->data() + table.offset;
  float* y = f32(out);
  const int64_t E = table.cols;
  const size_t row_bytes = table.row_bytes();
  pool_.parallel_ranges(tokens.size(), 1, [&](size_t a, size_t b, int) {
    for (size_t t = a; t < b; ++t)
      dequantize_row(table.type, rows + static_cast<size_t>(tokens[t]) * row_bytes, y + t * static_cast<size_t>(E), E);
  });
}

void CpuBackend::rms_norm(const Tensor& x, const Tensor& weight, float eps, const Tensor& out) {
  const float* xs = f32(x);
  const float* w = f32(weight);
  float* y = f32(out);
  const size_t E = static_cast<size_t>(x.cols);
  pool_.parallel_ranges(static_cast<size_t>(x.rows), 1, [&](size_t a, size_t b, int) {
    for (size_t t = a; t < b; ++t) rms_norm_row(xs + t * E, w, x.cols, eps, y + t * E);
  });
}

void CpuBackend::rope(const Tensor& x, const RopeArgs& args, std::span<const int32_t> positions) {
  float* xs = f32(x);
  const size_t width = static_cast<size_t>(x.cols);
  const RopeParams& p = args.params;
  const float theta_scale = rope_theta_scale(p);
  const std::array<float, 2> corr = rope_yarn_corr_dims(p);
  const float* ff = args.freq_factors != nullptr ? f32(*args.freq_factors) : nullptr;
  reserve_thread_f32(static_cast<size_t>(p.n_dims));
  pool_.parallel_ranges(positions.size(), 1, [&](size_t a, size_t b, int thread) {
    float* cache = s_.thread_f32[static_cast<size_t>(thread)].data();
    for (size_t t = a; t < b; ++t) {
      rope_cache(p, ff, theta_scale, corr, positions[t], cache);
      rope_row(xs + t * width, args.n_heads, args.head_dim, p, cache);
    }
  });
}

void CpuBackend::swiglu(const Tensor& gate, const Tensor& up) {
  float* g = f32(gate);
  const float* u = f32(up);
  pool_.parallel_ranges(static_cast<size_t>(gate.rows * gate.cols), 16384, [&](size_t a, size_t b, int) {
    swiglu_f32(g + a, u + a, static_cast<int64_t>(b - a));
  });
}

void CpuBackend::add(const Tensor& x, const Tensor& y) {
  float* a = f32(x);
  const float* b = f32(y);
  pool_.parallel_ranges(static_cast<size_t>(x.rows * x.cols), 16384, [&](size_t i0, size_t i1, int) {
    size_t i = i0;
    for (; i + 4 <= i1; i += 4) store4(a + i, load4(a + i) + load4(b + i));
    for (; i < i1; ++i) a[i] += b[i];
  });
}

void CpuBackend::add_bias(const Tensor& x, const Tensor& bias) {
  float* a = f32(x);
  const float* b = f32(bias);
  const size_t cols = static_cast<size_t>(x.cols);
  for (size_t t = 0; t < static_cast<size_t>(x.rows); ++t)
    for (size_t i = 0; i < cols; ++i) a[t * cols + i] += b[i];
}

void CpuBackend::read(const Tensor& src, std::span<float> dst) {
  std::memcpy(dst.data(), f32(src), std::min(dst.size() * sizeof(float), src.bytes()));
}

void CpuBackend::argmax_rows(const Tensor& src, std::span<int32_t> ids) {
  const float* rows = f32(src);
  const size_t n = static_cast<size_t>(src.cols);
  for (size_t r = 0; r < ids.size(); ++r) ids[r] = argmax(std::span<const float>(rows + r * n, n));
}

void CpuBackend::accept_greedy(const Tensor& logits, std::span<const int32_t> drafts, std::span<int32_t> out) {
  std::vector<int32_t> ids(drafts.size() + 1);
  argmax_rows(logits, ids);
  greedy_acceptance(ids, drafts, out);
}

}  // namespace kakeya::engine
