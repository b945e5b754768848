#pragma once
// The compute roofline of the core, measured: the multiply-add throughput of the instructions the
// engine's GEMM kernels are built from (engine/cpu/gemm.h), with every operand in registers.
// Each kernel runs kChains independent accumulator chains (more than latency × pipes on current
// x86 cores), so the figure is the issue-bound peak; the engine's prefill efficiency is its
// FLOP/s (int8 ops for the quantized types) divided by this peak at the same thread count.
//
//   fma_f32    vfmadd231ps on the active kernel set's vectors (16 lanes AVX-512, 8 lanes AVX2):
//              2 FLOP per lane (F32/F16 weights; BF16 where the CPU lacks AVX512-BF16)
//   bf16_dot   vdpbf16ps zmm (AVX512-BF16): 16 lanes × 2 bf16 products, 64 FLOP per instruction
//              (BF16 weights on AMD CPUs that have it)
//   amx_bf16   tdpbf16ps (AMX-BF16): 16 × 16 outputs × 32 bf16 products, 16384 FLOP per
//              instruction, four C tiles in flight (BF16 weights where present)
//   amx_f16    the same loop counted as F16 products: the AMX F16 GEMM takes four tdpbf16ps per
//              F16 product (each value as two BF16 parts, gemm_avx512.cpp), so 4096 FLOP per
//              instruction (F16 weights where AMX-BF16 is present)
//   amx_int8   tdpbssd (AMX-INT8) with the engine's tiles for Q4_0 / Q8_0 / Q4_K: 16 × 16 outputs
//              × 32 s8·s8 products (one block's k), 16384 ops per instruction, four C tiles in
//              flight (Q4_0, Q8_0 and Q4_K weights where present)
//   int8_dot   vpdpbusd zmm (AVX512-VNNI): 64 u8·s8 products, 128 ops per instruction; on an
//              AVX2-only CPU the maddubs + madd + add sequence of the AVX2 kernels (32 products)
//              (Q8_0 and the K/legacy types)
// One std::thread per counted thread, each running the same loop; GFLOP/s = all threads' ops ÷
// wall time, median of `reps`. Never asserted (bench/).
#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/cpu/amx_tiles.h"
#include "engine/cpu/cpu_features.h"
#include "engine/cpu/gemm.h"
#include "engine/cpu/quant.h"

// GCC 12 reports its own _mm512_undefined_* placeholders (inside the set1/reduce intrinsics) as
// uninitialized once inlined; the intrinsics overwrite every lane.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

namespace kakeya::engine::roofline {

inline constexpr int kChains = 12;

// Each loop returns a value derived from every accumulator so the work cannot be dropped; `iters`
// rounds of kChains instructions, the chains unrolled so the accumulators stay in registers.
__attribute__((target("avx512f"))) inline float fma512(int64_t iters) {
  __m512 acc[kChains];
  for (int j = 0; j < kChains; ++j) acc[j] = _mm512_set1_ps(0.001f * static_cast<float>(j));
  const __m512 a = _mm512_set1_ps(0.9999999f), b = _mm512_set1_ps(1e-7f);
  for (int64_t i = 0; i < iters; ++i)
#pragma GCC unroll 12
    for (int j = 0; j < kChains; ++j) acc[j] = _mm512_fmadd_ps(acc[j], a, b);
  float s = 0;
  for (int j = 0; j < kChains; ++j) s += _mm512_reduce_add_ps(acc[j]);
  return s;
}

__attribute__((target("avx2,fma"))) inline float fma256(int64_t iters) {
  __m256 acc[kChains];
  for (int j = 0; j < kChains; ++j) acc[j] = _mm256_set1_ps(0.001f * static_cast<float>(j));
  const __m256 a = _mm256_set1_ps(0.9999999f), b = _mm256_set1_ps(1e-7f);
  for (int64_t i = 0; i < iters; ++i)
#pragma GCC unroll 12
    for (int j = 0; j < kChains; ++j) acc[j] = _mm256_fmadd_ps(acc[j], a, b);
  alignas(32) float lanes[8];
  float s = 0;
  for (int j = 0; j < kChains; ++j) {
    _mm256_store_ps(lanes, acc[j]);
    for (float v : lanes) s += v;
  }
  return s;
}

__attribute__((target("avx512f,avx512bf16"))) inline float bf16dot512(int64_t iters) {
  __m512 acc[kChains];
  for (int j = 0; j < kChains; ++j) acc[j] = _mm512_set1_ps(0.001f * static_cast<float>(j));
  const __m512bh a = (__m512bh)_mm512_set1_epi16(0x3f80);  // bf16 1.0
  const __m512bh b = (__m512bh)_mm512_set1_epi16(0x3380);  // bf16 ~6e-8
  for (int64_t i = 0; i < iters; ++i)
#pragma GCC unroll 12
    for (int j = 0; j < kChains; ++j) acc[j] = _mm512_dpbf16_ps(acc[j], a, b);
  float s = 0;
  for (int j = 0; j < kChains; ++j) s += _mm512_reduce_add_ps(acc[j]);
  return s;
}

__attribute__((target("avx512f,avx512vnni"))) inline float vnni512(int64_t iters) {
  __m512i acc[kChains];
  for (int j = 0; j < kChains; ++j) acc[j] = _mm512_set1_epi32(j);
  const __m512i a = _mm512_set1_epi8(3), b = _mm512_set1_epi8(-2);
  for (int64_t i = 0; i < iters; ++i)
#pragma GCC unroll 12
    for (int j = 0; j < kChains; ++j) acc[j] = _mm512_dpbusd_epi32(acc[j], a, b);
  int64_t s = 0;
  for (int j = 0; j < kChains; ++j) s += _mm512_reduce_add_epi32(acc[j]);
  return static_cast<float>(s);
}

__attribute__((target("avx2"))) inline float maddubs256(int64_t iters) {
  __m256i acc[kChains];
  for (int j = 0; j < kChains; ++j) acc[j] = _mm256_set1_epi32(j);
  const __m256i a = _mm256_set1_epi8(3), b = _mm256_set1_epi8(-2), ones = _mm256_set1_epi16(1);
  for (int64_t i = 0; i < iters; ++i)
#pragma GCC unroll 12
    for (int j = 0; j < kChains; ++j)
      acc[j] = _mm256_add_epi32(acc[j], _mm256_madd_epi16(_mm256_maddubs_epi16(a, b), ones));
  alignas(32) int32_t lanes[8];
  int64_t s = 0;
  for (int j = 0; j < kChains; ++j) {
    _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), acc[j]);
    for (int32_t v : lanes) s += v;
  }
  return static_cast<float>(s);
}

// AMX tdpbf16ps into four C tiles from two A and two B tiles, as the engine's BF16 kernel steps
// (gemm_avx512.cpp), with the engine's tile configuration (engine/cpu/amx_tiles.h) loaded on this
// thread. REQUIRES: cpu_features().amx_bf16 (the tile state granted).
__attribute__((target("amx-tile,amx-bf16"))) inline float amx_bf16(int64_t iters) {
  const AmxTileConfig config;
  alignas(64) uint16_t a[16 * 32], b[16 * 32];
  std::fill(std::begin(a), std::end(a), uint16_t{0x3f80});  // bf16 1.0
  std::fill(std::begin(b), std::end(b), uint16_t{0x3380});  // bf16 ~6e-8
  _tile_loadconfig(&config);
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  _tile_loadd(4, a, 64);
  _tile_loadd(5, a, 64);
  _tile_loadd(6, b, 64);
  _tile_loadd(7, b, 64);
  for (int64_t i = 0; i < iters; ++i) {
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(1, 4, 7);
    _tile_dpbf16ps(2, 5, 6);
    _tile_dpbf16ps(3, 5, 7);
  }
  alignas(64) float c[16 * 16];
  float s = 0;
  _tile_stored(0, c, 64);
  for (float v : c) s += v;
  _tile_stored(3, c, 64);
  for (float v : c) s += v;
  _tile_release();
  return s;
}

// AMX tdpbssd at k = 32 (the Q4_0/Q8_0 kernel's tiles: A 16 rows × 32 bytes, B 8 rows × 64 bytes,
// gemm_avx512.cpp) into four C tiles from two A and two B tiles. REQUIRES: cpu_features().amx_int8.
__attribute__((target("amx-tile,amx-int8"))) inline float amx_int8(int64_t iters) {
  AmxTileConfig config;
  config.colsb[2] = config.colsb[3] = 32;
  config.rows[4] = config.rows[5] = 8;
  alignas(64) int8_t a[16 * 32], b[8 * 64];
  std::fill(std::begin(a), std::end(a), int8_t{1});
  std::fill(std::begin(b), std::end(b), int8_t{1});
  _tile_loadconfig(&config);
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(6);
  _tile_zero(7);
  _tile_loadd(2, a, 32);
  _tile_loadd(3, a, 32);
  _tile_loadd(4, b, 64);
  _tile_loadd(5, b, 64);
  for (int64_t i = 0; i < iters; ++i) {
    _tile_dpbssd(0, 2, 4);
    _tile_dpbssd(1, 3, 5);
    _tile_dpbssd(6, 2, 5);
    _tile_dpbssd(7, 3, 4);
  }
  alignas(64) int32_t c[16 * 16];
  float s = 0;
  _tile_stored(0, c, 64);
  for (int32_t v : c) s += static_cast<float>(v);
  _tile_stored(7, c, 64);
  for (int32_t v : c) s += static_cast<float>(v);
  _tile_release();
  return s;
}

// The peak the GEMM of weights `type` runs on in kernel set `g` (gemm.h): int8 dot products for
// the quantized types, AMX tiles for Q4_0, Q8_0 and Q4_K where the set runs them so; for BF16 and F16 the
// path the set takes (GemmKernels::bf16_path, f16_path, int8_path); f32 FMA otherwise.
inline std::string gemm_peak_name(GgmlType type, const GemmKernels& g) {
  const std::string bf16 = g.bf16_path, f16 = g.f16_path, int8 = g.int8_path;
  switch (type) {
    case GgmlType::Q4_0:
    case GgmlType::Q8_0:
    case GgmlType::Q4_K: return int8 == "amx" ? "amx_int8" : "int8_dot";
    case GgmlType::F32: return "fma_f32";
    case GgmlType::F16: return f16 == "amx" ? "amx_f16" : "fma_f32";
    case GgmlType::BF16: return bf16 == "amx" ? "amx_bf16" : bf16 == "vdpbf16ps" ? "bf16_dot" : "fma_f32";
    default: return "int8_dot";
  }
}

struct Peak {
  std::string name;         // "fma_f32", "bf16_dot", "amx_bf16", "amx_f16", "amx_int8", "int8_dot"
  std::string instruction;  // what was measured
  double ops_per_iter = 0;  // multiply-add ops (2 per product) of one round of kChains instructions
  float (*loop)(int64_t) = nullptr;
};

// The peaks of kernel set `isa` (default: the active one, quant.h active_kernel_isa()) on this
// CPU; none on the portable set. REQUIRES: kernel_isa_available(isa).
inline std::vector<Peak> peaks(KernelIsa isa = active_kernel_isa()) {
  const CpuFeatures& f = cpu_features();
  std::vector<Peak> p;
  switch (isa) {
    case KernelIsa::Avx512:
      p.push_back({"fma_f32", "vfmadd231ps zmm", kChains * 16 * 2.0, fma512});
      if (f.avx512bf16) p.push_back({"bf16_dot", "vdpbf16ps zmm", kChains * 32 * 2.0, bf16dot512});
      if (f.amx_bf16) {
        p.push_back({"amx_bf16", "tdpbf16ps", 4 * 16 * 16 * 32 * 2.0, amx_bf16});
        p.push_back({"amx_f16", "tdpbf16ps, 4 per F16 product", 4 * 16 * 16 * 32 * 2.0 / 4, amx_bf16});
      }
      if (f.amx_int8) p.push_back({"amx_int8", "tdpbssd (k = 32)", 4 * 16 * 16 * 32 * 2.0, amx_int8});
      p.push_back({"int8_dot", "vpdpbusd zmm", kChains * 64 * 2.0, vnni512});
      break;
    case KernelIsa::Avx2:
      p.push_back({"fma_f32", "vfmadd231ps ymm", kChains * 8 * 2.0, fma256});
      p.push_back({"int8_dot", "vpmaddubsw+vpmaddwd+vpaddd ymm", kChains * 32 * 2.0, maddubs256});
      break;
    case KernelIsa::Portable: break;
  }
  return p;
}

// GOP/s of `peak` on `threads` threads (one loop per thread), median of `reps` timed runs of
// about `seconds` each after one untimed run.
inline double measure(const Peak& peak, int threads, int reps, double seconds = 0.2) {
  using Clock = std::chrono::steady_clock;
  // Calibrate the iteration count on one thread.
  int64_t iters = 1 << 16;
  for (;;) {
    const auto t0 = Clock::now();
    volatile float sink = peak.loop(iters);
    (void)sink;
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
    if (s > seconds / 4 || iters > (int64_t{1} << 40)) {
      iters = static_cast<int64_t>(static_cast<double>(iters) * seconds / std::max(s, 1e-9));
      break;
    }
    iters *= 4;
  }
  std::vector<double> gops;
  for (int r = 0; r < reps + 1; ++r) {
    std::vector<std::thread> pool;
    std::vector<float> sinks(static_cast<size_t>(threads));
    const auto t0 = Clock::now();
    for (int t = 0; t < threads; ++t) pool.emplace_back([&, t] { sinks[static_cast<size_t>(t)] = peak.loop(iters); });
    for (auto& th : pool) th.join();
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
    volatile float sink = sinks[0];
    (void)sink;
    if (r > 0) gops.push_back(peak.ops_per_iter * static_cast<double>(iters) * threads / s / 1e9);
  }
  std::sort(gops.begin(), gops.end());
  return gops[gops.size() / 2];
}

}  // namespace kakeya::engine::roofline

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
