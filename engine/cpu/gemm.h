#pragma once
// Batched matmul kernels (GEMM) of the CPU backend: the products of a block of tokens with a
// weight matrix (prefill, speculative verify) and the f32 products of batched attention.
// Register-blocked outer-product micro-kernels in the manner of BLIS/GotoBLAS: a panel of weight
// rows is converted tile by tile on the fly into the micro-kernel's layout (f32 or int8 lanes
// across rows), reused from L1 for every token of the block, and each micro-kernel keeps a tile of
// outputs (rows × tokens) in registers. F32/F16/BF16 weights with blocks of 2 vectors of tokens
// and more run the other way round (lanes across tokens, the activations transposed instead of
// the weights), with the same arithmetic in the same order: gemm_x86.h. Kernel sets are chosen at
// run time like the decode kernels (quant.h KernelIsa): AVX-512 (F/BW/VL/VNNI), AVX2 (FMA,
// maddubs), portable. BF16 weights are widened to f32 and multiplied by FMA, except in the AVX-512
// set on CPUs with AMX (tdpbf16ps tiles, Intel Sapphire Rapids and later) and on CPUs where
// vdpbf16ps outruns FMA (AMD Zen 4 and later; slower on the Intel Xeon measured): gemm_avx512.cpp.
// Q4_0, Q8_0 and Q4_K weights run by AMX-INT8 tiles in the AVX-512 set on CPUs with AMX-INT8,
// with the same integer block sums and f32 operations as the VNNI kernels (so the same bits).
//
// Arithmetic (docs/tensor-types.md, "Batched matmul"):
//   * Q4_0, Q8_0 (packed layout), Q4_K, Q6_K: int8 GEMM over the activations of the decode path
//     (Q8_0 / Q8_K blocks): the integer block sums are exact (vpdpbusd / maddubs lanes, the
//     sub-block scales and the K-quants' min and offset terms applied in int32), and each output
//     then takes the decode kernels' f32 operations in the same order (Q4_0: one fma chain per
//     row; Q8_0: s += sumi·(dw·da) rounded; Q4_K/Q6_K: the scalar super-block combination). So
//     the GEMM is bit-identical to matvec/matvec_packed of the same kernel set for every token:
//     gemm_matches_decode() is true, and the backend uses it for blocks of any size.
//   * F32, F16, BF16 (and Q8_0 read row-major by an AVX set, whose decode kernel sums in lanes):
//     f32 products of the decode path's activations (F16/BF16 activations rounded like ggml's
//     vec_dot_type), summed in the micro-kernel's order, so they differ from decode by float
//     rounding: the backend takes them only for blocks of kExactBlockTokens tokens and more.
//   * The portable set computes every output with the portable decode kernels (it is the
//     reference the other sets are tested against).
//
// Threading is the caller's: each call computes one tile of the output (a range of rows for a
// range of tokens) on the calling thread, with that thread's GemmScratch.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>

#include "engine/cpu/quant.h"
#include "engine/ggml_types.h"

namespace kakeya::engine {

// A weight matrix as the GEMM reads it: rows of `n` elements of `type`, row-major
// (ggml_row_bytes(type, n) apart), and for Q4_0/Q8_0 optionally its packed layout (quant.h).
struct GemmWeights {
  GgmlType type = GgmlType::F32;
  int64_t n = 0;
  const uint8_t* rows = nullptr;
  const uint8_t* packed = nullptr;  // preferred when set
};

// Per-thread scratch of the kernels (weight tiles converted on the fly, activation blocks,
// per-block activation scales): 64-byte aligned regions grown on demand and reused.
class GemmScratch {
 public:
  GemmScratch() = default;
  GemmScratch(const GemmScratch&) = delete;
  GemmScratch& operator=(const GemmScratch&) = delete;
  GemmScratch(GemmScratch&&) = default;
  GemmScratch& operator=(GemmScratch&&) = default;
  // Region `slot` (0..kSlots-1) of at least `bytes` bytes; its contents are undefined.
  // Aborts when memory cannot be allocated (ops do not fail: backend.h).
  void* get(int slot, size_t bytes);
  template <typename T>
  T* get(int slot, size_t count) {
    return static_cast<T*>(get(slot, count * sizeof(T)));
  }
  static constexpr int kSlots = 6;

 private:
  struct Free {
    void operator()(void* p) const { std::free(p); }
  };
  std::unique_ptr<void, Free> region_[kSlots];
  size_t bytes_[kSlots] = {};
};

// True when the active kernel set has a GEMM kernel of its own for weights of `type` (F32, F16,
// BF16, Q4_0, Q8_0, Q4_K, Q6_K in the AVX sets); the other types, and every type in the portable
// set, run each token through the decode kernels (weight tiles reused from cache).
bool has_gemm_kernel(GgmlType type);
// True when the active set's GEMM for `type` keeps a call's outputs in AMX tile registers for the
// whole of k (BF16 and F16 on CPUs with AMX-BF16), so a call of many rows × tokens costs no more than
// several smaller ones: the backend bounds the others' calls so that their outputs, swept once
// per block of k, stay in L2 (cpu_matmul.cpp).
bool gemm_holds_outputs_in_tiles(GgmlType type);
// True when gemm() of the active set gives, for every token, bit for bit what matvec (or
// matvec_packed when `packed`) gives without being asked to (see the header comment).
bool gemm_matches_decode(GgmlType type, bool packed);

// y[t·ldy + (r − r0)] = row r of w · activations of token t, for t in [0, n_tokens) and r in
// [r0, r1): acts[t] made by quantize_activations(w.type, x_t, w.n, ...). Only rows [r0, r1) are
// read and written. decode_exact: every output bit-identical to the decode kernels (types whose
// GEMM kernel rounds differently then run through the decode kernels). REQUIRES: acts[t].n == w.n.
void gemm(const GemmWeights& w, int64_t r0, int64_t r1, const ActivationBuffer* acts, int64_t n_tokens, float* y,
          size_t ldy, bool decode_exact, GemmScratch& scratch);

// C[i·ldc + j] = alpha · Σ_k A[i·lda + k] · B(j, k) for i < m, j < n, over f32 values, where
// B(j, k) = b[j·ldb + k] when b_rows (B's rows are the outputs: a weight matrix, attention's K)
// and b[k·ldb + j] otherwise (attention's V). k may be 0 (C = 0). Summation order is the kernel
// set's.
void gemm_f32(int64_t m, int64_t n, int64_t k, float alpha, const float* a, size_t lda, const float* b, size_t ldb,
              bool b_rows, float* c, size_t ldc, GemmScratch& scratch);

// ---- explicit kernel sets (tests, benches, the dispatcher) ----
struct GemmKernels {
  bool (*has_kernel)(GgmlType type);
  bool (*matches_decode)(GgmlType type, bool packed);
  void (*gemm)(const GemmWeights&, int64_t, int64_t, const ActivationBuffer*, int64_t, float*, size_t, bool,
               GemmScratch&);
  void (*gemm_f32)(int64_t, int64_t, int64_t, float, const float*, size_t, const float*, size_t, bool, float*, size_t,
                   GemmScratch&);
  const char* bf16_path;  // how BF16 weights run: "amx", "vdpbf16ps", "fma" or "decode"
  const char* f16_path;   // how F16 weights run: "amx" (BF16 hi/lo parts), "fma" or "decode"
  // How the int8 GEMMs run: "amx" (AMX-INT8 tiles for Q4_0, Q8_0 and Q4_K; Q6_K by vpdpbusd),
  // "vpdpbusd", "maddubs" or "decode".
  const char* int8_path;
};
// REQUIRES: kernel_isa_available(isa). The set matches quant_kernels(isa): its decode kernels
// are the ones gemm_matches_decode() refers to. The AVX-512 set runs BF16 weights by AMX where
// the CPU has it (Intel), by vdpbf16ps where that outruns FMA (AMD CPUs with AVX512-BF16), else
// by FMA; F16 weights by AMX (each F16 value as two BF16 parts) where the CPU has it, else by
// FMA; Q4_0, Q8_0 and Q4_K weights by AMX-INT8 tiles where the CPU has it, else by vpdpbusd
// (gemm_avx512.cpp).
const GemmKernels& gemm_kernels(KernelIsa isa);

// How the AVX-512 set runs BF16 weights: widened to f32 and multiplied by FMA, by vdpbf16ps
// (AVX512-BF16), or by AMX tdpbf16ps tiles (gemm_avx512.cpp); the kAmx set runs F16 weights by
// AMX too, the others by FMA, and the int8 GEMMs by AMX-INT8 tiles where the CPU has it.
enum class Bf16Gemm { kFma, kDot, kAmx };

// The AVX-512 set with BF16 weights run by `path`, regardless of the choice
// gemm_kernels(KernelIsa::Avx512) makes on this CPU (tests, benches). REQUIRES:
// kernel_isa_available(KernelIsa::Avx512); cpu_features().avx512bf16 for kDot, .amx_bf16 for kAmx.
const GemmKernels& gemm_avx512_bf16_as(Bf16Gemm path);

}  // namespace kakeya::engine
