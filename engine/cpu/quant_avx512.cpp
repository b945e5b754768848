// AVX-512 F/BW/VL/VNNI kernels for packed (row-interleaved) Q4_0 and Q8_0 matrices and for the
// F16, BF16, Q4_K and Q6_K mat-vec, plus the lane-exact types (Q4_1 ... IQ4_XS) through their VNNI
// build (quant_lanes_avx512.cpp), and the attention dot, e^x sum, 1/sum scaling and SwiGLU (bit
// for bit the AVX2 and portable sets'); everything else is the AVX2 set. This file is compiled with
// -mavx512f -mavx512bw -mavx512vl -mavx512vnni (plus the AVX2 flags) and only entered through
// detail::avx512_kernels() and the Dense16Kernel functions of quant.h, after
// cpu_features().can_run_avx512().
//
// One 64-byte load of a packed group holds the same 4 bytes of 16 rows (layout in quant.h);
// VPDPBUSD (u8 × s8, four products summed into each int32 lane) against the 4 activation bytes
// broadcast to every lane accumulates 16 exact row sums at once. Agreement with the portable
// kernels: bit-identical (exact integer block sums; per row Q4_0 s = fma(sumi, dw·da, s), Q8_0
// s += sumi·(dw·da) with the product rounded before the add).

#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "engine/cpu/cpu_features.h"
#include "engine/cpu/quant.h"
#include "engine/cpu/quant_internal.h"

#if defined(__clang__)
#pragma clang fp contract(off)
#endif
// GCC 12 reports its own _mm512_undefined_* placeholders (inside _mm512_cvtph_ps and friends) as
// (maybe-)uninitialized once inlined; the intrinsics overwrite every lane.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

namespace kakeya::engine {

namespace {

// The helpers below repeat quant_avx2.cpp's on purpose: an inline helper shared through a header
// would be compiled with each file's -m flags, and the linker may keep the AVX-512 copy for the
// AVX2 callers (an illegal instruction on AVX2-only CPUs).
inline int32_t load_i32(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// Stores the lanes of the 16 rows starting at row0 that fall in [r0, r1) to y[row - r0].
inline void store_rows16(__m512 v, int64_t row0, int64_t r0, int64_t r1, float* y) {
  if (row0 >= r0 && row0 + kPackRows <= r1) {
    _mm512_storeu_ps(y + (row0 - r0), v);
    return;
  }
  alignas(64) float tmp[kPackRows];
  _mm512_store_ps(tmp, v);
  for (int64_t r = std::max(r0, row0); r < std::min(r1, row0 + kPackRows); ++r) y[r - r0] = tmp[r - row0];
}

// Software prefetch distance, in bytes ahead in each memory stream, into L2 (prefetcht1: on the
// Xeon measured, T0 prefetches held L1 fill buffers and read 10-15% slower than T1). A plain read
// loop on one core of that Xeon reads 15.1-15.5 GB/s with no software prefetch, 18.6-19.1 with
// every line prefetched 1-2 KiB ahead, and 14.9-15.3 at 4 KiB: far enough to cover the memory
// latency, near enough that the L2 streamer does not train on the prefetches themselves. On the
// 2-core AMD EPYC (Zen 4) VM measured, 4 KiB is the distance: decode on one thread, alternating
// with 2 KiB in one run (tok/s, synth TinyLlama): Q8_0 packed 17.2-17.4 -> 20.5-22.3, Q4_0 packed
// 32.1-33.1 -> 34.4-35.4, F16 9.0-9.4 -> 10.7-11.0, Q6_K 22.8-22.9 -> 27.7-27.9, Q4_K
// 28.4-29.3 -> 31.4-31.8 (3, 6 and 8 KiB no better than 4). Chosen by CPU vendor, once. (Since
// then packed Q4_0 and Q8_0 read without software prefetch on AMD: PackedPath in quant.h.)
size_t prefetch_bytes() {
  static const size_t bytes = cpu_features().amd() ? 4096 : 2048;
  return bytes;
}

// Prefetches the kBytes bytes from p, one 64-byte line at a time, with hint kHint (T1 into L2 unless
// said otherwise). kBytes is a constant so that the loop unrolls into plain prefetch instructions.
// (kHint is an int: GCC's _mm_hint enum does not exist in clang, whose _mm_prefetch is a macro.)
template <size_t kBytes, int kHint = _MM_HINT_T1>
inline void prefetch_lines(const uint8_t* p) {
#pragma GCC unroll 16
  for (size_t off = 0; off < kBytes; off += 64)
    _mm_prefetch(reinterpret_cast<const char*>(p + off), static_cast<decltype(_MM_HINT_T1)>(kHint));
}

// The packed kernels also prefetch each stream's bytes a short distance ahead into L1
// (prefetcht0), after the L2 prefetches of all their streams, so that the demand loads find their
// lines in L1 instead of waiting on L2. One thread from memory, alternating: packed Q4_0 16.3-16.7
// -> 16.9-17.5 GB/s, Q8_0 16.6-16.8 -> 17.7-17.9; Q4_0 decode on one thread 27.3 -> 28.2 tok/s,
// on two 48.8-51.3 -> 52.4-52.5 (128 and 256 bytes ahead alike, 384 no gain). Issued per stream
// right after that stream's L2 prefetches instead, they read 14.1-14.4 GB/s; the row-major
// kernels (2 or 4 rows of a few KiB) read 5-25% slower with them (F16 17.1 -> 16.0, Q4_K 16.1 ->
// 12.4), so those prefetch into L2 only.
constexpr size_t kL1PrefetchBytes = 128;

// Keeps the compiler from fusing the multiply that produced v (an __m512 or __m256) with a later add.
template <class V>
inline V keep_rounded(V v) {
  __asm__("" : "+v"(v));
  return v;
}

// One group's 16 row sums over its nb blocks; with kPrefetch each block's bytes are prefetched as
// packed_groups (below) describes.
template <bool kPrefetch, size_t kBlockBytes, class Block>
inline __m512 packed_group_sums(const uint8_t* group, int64_t nb, size_t pf, const Block& block) {
  __m512 acc = _mm512_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    if constexpr (kPrefetch) {
      prefetch_lines<kBlockBytes>(group + static_cast<size_t>(b) * kBlockBytes + pf);
      prefetch_lines<kBlockBytes, _MM_HINT_T0>(group + static_cast<size_t>(b) * kBlockBytes + kL1PrefetchBytes);
    }
    acc = block(group, b, acc);
  }
  return acc;
}

// The packed mat-vec kernels stream G = 2 groups of 16 rows at once (two sequential memory
// streams), and each stream prefetches its own bytes prefetch_bytes() ahead into L2 and
// kL1PrefetchBytes ahead into L1, block by block (a group's last blocks prefetch the start of the
// group after it). One thread from memory (kakeya_kernels_bench, 100 matrices of 5632×2048,
// beyond the 480 MiB L3 of the Xeon measured), alternating in one run, the L2 prefetch alone:
// Q4_0 14.2 -> 15.5 GB/s and Q8_0 14.4 -> 15.8 against prefetching the same block of the next two
// groups (36 KiB ahead), which it replaced; 1 KiB ahead, one stream or four streams read no faster. A last odd group runs alone. The prefetches past the
// matrix never fault. Every row's arithmetic is the same either way, so results do not depend on
// the grouping.
// one_stream: one group after the other with no software prefetch instead (PackedPath::kOneStream).
template <int G, size_t kBlockBytes, class Block>
inline void packed_groups(bool one_stream, const uint8_t* packed, size_t gbytes, int64_t nb, int64_t r0, int64_t r1,
                          float* y, const Block& block) {
  const size_t pf = prefetch_bytes();
  int64_t g = r0 / kPackRows;
  const int64_t g_end = (r1 + kPackRows - 1) / kPackRows;
  for (; !one_stream && g + G <= g_end; g += G) {
    __m512 acc[G];
#pragma GCC unroll 4
    for (int h = 0; h < G; ++h) acc[h] = _mm512_setzero_ps();
    for (int64_t b = 0; b < nb; ++b) {
      const uint8_t* at = packed + static_cast<size_t>(g) * gbytes + static_cast<size_t>(b) * kBlockBytes;
#pragma GCC unroll 4
      for (int h = 0; h < G; ++h) prefetch_lines<kBlockBytes>(at + h * gbytes + pf);
#pragma GCC unroll 4
      for (int h = 0; h < G; ++h) prefetch_lines<kBlockBytes, _MM_HINT_T0>(at + h * gbytes + kL1PrefetchBytes);
#pragma GCC unroll 4
      for (int h = 0; h < G; ++h) acc[h] = block(packed + static_cast<size_t>(g + h) * gbytes, b, acc[h]);
    }
#pragma GCC unroll 4
    for (int h = 0; h < G; ++h) store_rows16(acc[h], (g + h) * kPackRows, r0, r1, y);
  }
  for (; g < g_end; ++g) {
    const uint8_t* group = packed + static_cast<size_t>(g) * gbytes;
    const __m512 acc = one_stream ? packed_group_sums<false, kBlockBytes>(group, nb, pf, block)
                                  : packed_group_sums<true, kBlockBytes>(group, nb, pf, block);
    store_rows16(acc, g * kPackRows, r0, r1, y);
  }
}

// Q4_0: the nibbles are the unsigned operand as stored (0..15); the −8 offset is removed once per
// block with 8·Σqy. Low nibbles of chunk c are elements 4c..4c+3, high nibbles 16+4c..16+4c+3.
void packed_q4_0(bool one_stream, const uint8_t* packed, int64_t n, int64_t r0, int64_t r1,
                 const ActivationBuffer& act, float* y) {
  const int64_t nb = n / 32;
  const size_t gbytes = detail::packed_group_bytes(GgmlType::Q4_0, n);
  const auto* a = reinterpret_cast<const BlockQ8_0*>(act.bytes.data());
  const __m512i low4 = _mm512_set1_epi8(0x0F);
  const auto block = [&](const uint8_t* group, int64_t b, __m512 acc) {
    const uint8_t* q = group + detail::packed_quants_offset(GgmlType::Q4_0, b);
    const auto* scales = reinterpret_cast<const __m256i*>(group + detail::packed_scales_offset(GgmlType::Q4_0, b));
    // The 8 activation broadcasts first, then the four 64-byte loads, then the products: this
    // order (rather than load-compute per chunk) keeps up with memory (bench/README.md).
    const int8_t* qy = a[b].qs;
    const __m512i y0 = _mm512_set1_epi32(load_i32(qy)), y1 = _mm512_set1_epi32(load_i32(qy + 4)),
                  y2 = _mm512_set1_epi32(load_i32(qy + 8)), y3 = _mm512_set1_epi32(load_i32(qy + 12));
    const __m512i z0 = _mm512_set1_epi32(load_i32(qy + 16)), z1 = _mm512_set1_epi32(load_i32(qy + 20)),
                  z2 = _mm512_set1_epi32(load_i32(qy + 24)), z3 = _mm512_set1_epi32(load_i32(qy + 28));
    const __m512i v0 = _mm512_loadu_si512(q), v1 = _mm512_loadu_si512(q + 64), v2 = _mm512_loadu_si512(q + 128),
                  v3 = _mm512_loadu_si512(q + 192);
    __m512i s_lo = _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_and_si512(v0, low4), y0);
    __m512i s_hi = _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_and_si512(_mm512_srli_epi16(v0, 4), low4), z0);
    s_lo = _mm512_dpbusd_epi32(s_lo, _mm512_and_si512(v1, low4), y1);
    s_hi = _mm512_dpbusd_epi32(s_hi, _mm512_and_si512(_mm512_srli_epi16(v1, 4), low4), z1);
    s_lo = _mm512_dpbusd_epi32(s_lo, _mm512_and_si512(v2, low4), y2);
    s_hi = _mm512_dpbusd_epi32(s_hi, _mm512_and_si512(_mm512_srli_epi16(v2, 4), low4), z2);
    s_lo = _mm512_dpbusd_epi32(s_lo, _mm512_and_si512(v3, low4), y3);
    s_hi = _mm512_dpbusd_epi32(s_hi, _mm512_and_si512(_mm512_srli_epi16(v3, 4), low4), z3);
    const __m512i corr = _mm512_set1_epi32(8 * act.block_sums[static_cast<size_t>(b)]);
    const __m512i sumi = _mm512_sub_epi32(_mm512_add_epi32(s_lo, s_hi), corr);
    const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256(scales));
    return _mm512_fmadd_ps(_mm512_cvtepi32_ps(sumi), _mm512_mul_ps(dw, _mm512_set1_ps(_cvtsh_ss(a[b].d))), acc);
  };
  // A block pair's quants (2 × 256 bytes) then its scales (2 × 32): 288 bytes per block.
  packed_groups<2, 288>(one_stream, packed, gbytes, nb, r0, r1, y, block);
}

// Q8_0: signed weights become the unsigned operand by flipping the sign bit (q + 128); the
// 128·Σqy this adds is removed once per block.
void packed_q8_0(bool one_stream, const uint8_t* packed, int64_t n, int64_t r0, int64_t r1,
                 const ActivationBuffer& act, float* y) {
  const int64_t nb = n / 32;
  const size_t gbytes = detail::packed_group_bytes(GgmlType::Q8_0, n);
  const auto* a = reinterpret_cast<const BlockQ8_0*>(act.bytes.data());
  const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80));
  const auto block = [&](const uint8_t* group, int64_t b, __m512 acc) {
    const uint8_t* q = group + detail::packed_quants_offset(GgmlType::Q8_0, b);
    const auto* scales = reinterpret_cast<const __m256i*>(group + detail::packed_scales_offset(GgmlType::Q8_0, b));
    const int8_t* qy = a[b].qs;
    __m512i yb[8], v[8];
    for (int c = 0; c < 8; ++c) yb[c] = _mm512_set1_epi32(load_i32(qy + 4 * c));
    for (int c = 0; c < 8; ++c) v[c] = _mm512_xor_si512(_mm512_loadu_si512(q + 64 * c), flip);
    __m512i s0 = _mm512_dpbusd_epi32(_mm512_setzero_si512(), v[0], yb[0]);
    __m512i s1 = _mm512_dpbusd_epi32(_mm512_setzero_si512(), v[1], yb[1]);
    for (int c = 2; c < 8; c += 2) {
      s0 = _mm512_dpbusd_epi32(s0, v[c], yb[c]);
      s1 = _mm512_dpbusd_epi32(s1, v[c + 1], yb[c + 1]);
    }
    const __m512i corr = _mm512_set1_epi32(128 * act.block_sums[static_cast<size_t>(b)]);
    const __m512i sumi = _mm512_sub_epi32(_mm512_add_epi32(s0, s1), corr);
    const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256(scales));
    const __m512 p = keep_rounded(_mm512_mul_ps(_mm512_cvtepi32_ps(sumi), _mm512_mul_ps(dw, _mm512_set1_ps(_cvtsh_ss(a[b].d)))));
    return _mm512_add_ps(acc, p);
  };
  packed_groups<2, 544>(one_stream, packed, gbytes, nb, r0, r1, y, block);
}

// ---- row-major mat-vec: two memory streams ----
//
// One thread reading its rows front to back is one sequential stream; two streams far apart in
// memory read about 15% faster on the Xeon measured (16.9 vs 14.6 GB/s on one core, a plain read
// loop). So the rows [r0, r1) are split in two halves and a kernel computes row r0 + i of the
// first half together with row r0 + h + i of the second, sharing the activation loads. Each row's
// arithmetic does not depend on its partner, so results do not depend on the split.
// Each row stream prefetches its own bytes prefetch_bytes() ahead into L2, chunk by chunk (the end
// of a row prefetches the start of the next): rows of a few KiB are too short for the L2 streamer
// to reach full speed on its own. One thread from memory (bench/results/kernels-dram-vm.json):
// F16 13.8 GB/s, BF16 14.3, Q4_K 13.6, Q6_K 14.0 with the next row prefetched (one row stride
// ahead), where the AVX2 kernels these replace read 9.3, 7.8, 9.3 and 7.5; 2 KiB ahead adds 1-6%
// end to end (F16 1.5%, BF16 5%, Q4_K 4%, Q6_K 2%, decode alternating in one run).
// (F16 and BF16 on AMD CPUs read one row at a time instead: Dense16Order in quant.h.)
//   two(a, b): rows a and b; one(a): row a alone (the odd row out).
template <class Two, class One>
inline void two_streams(int64_t r0, int64_t r1, const Two& two, const One& one) {
  const int64_t count = r1 - r0;
  const int64_t h = (count + 1) / 2;
  for (int64_t i = 0; i < count / 2; ++i) two(r0 + i, r0 + h + i);
  if (count % 2 != 0) one(r0 + h - 1);
}

// The activations of one call widened to f32 (each weight is then converted once, 16 per
// instruction, instead of both operands per product); thread-local, reused across calls.
template <class Widen16>
const float* widened_activations(const uint16_t* a, int64_t n, float (*scalar)(uint16_t), const Widen16& widen16) {
  thread_local std::vector<float> xf;
  xf.resize(static_cast<size_t>(n));
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(xf.data() + i, widen16(a + i));
  for (; i < n; ++i) xf[static_cast<size_t>(i)] = scalar(a[i]);
  return xf.data();
}

inline __m512 f16x16(const uint16_t* p) { return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))); }
inline __m512 bf16x16(const uint16_t* p) {
  const __m512i v = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  return _mm512_castsi512_ps(_mm512_slli_epi32(v, 16));
}
inline float f16_scalar(uint16_t h) { return _cvtsh_ss(h); }
inline float bf16_scalar(uint16_t h) {
  const uint32_t u = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// Dense 16-bit rows (F16, BF16) against their own activation format: per row four 16-lane f32
// accumulators over 64-column steps, f32 FMA of the exact half×half products (the AVX2 kernels'
// products; only the f32 accumulation order differs, 4 × 16 lanes). R rows at once share the
// activation loads. The activations x are either widened to f32 once per call (X = float; the
// rows are then prefetched prefetch_bytes() ahead) or kept as stored (X = uint16_t, converted at
// each load, nothing prefetched): widening a half is exact, so both give the same bits.
template <int R, __m512 (*Load)(const uint16_t*), float (*Scalar)(uint16_t), class X>
inline void dense_rows(const uint16_t* const* rows, const X* x, int64_t n, float* out) {
  constexpr bool kWide = std::is_same_v<X, float>;
  const auto x16 = [&](int64_t k) {
    if constexpr (kWide) {
      return _mm512_loadu_ps(x + k);
    } else {
      return Load(x + k);
    }
  };
  const auto x1 = [&](int64_t i) {
    if constexpr (kWide) {
      return x[i];
    } else {
      return Scalar(x[i]);
    }
  };
  const size_t pf = kWide ? prefetch_bytes() : 0;
  __m512 acc[R][4];
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int j = 0; j < 4; ++j) acc[r][j] = _mm512_setzero_ps();
  int64_t k = 0;
  for (; k + 64 <= n; k += 64) {
    __m512 xv[4];
#pragma GCC unroll 4
    for (int j = 0; j < 4; ++j) xv[j] = x16(k + 16 * j);
    if constexpr (kWide) {
#pragma GCC unroll 4
      for (int r = 0; r < R; ++r) prefetch_lines<128>(reinterpret_cast<const uint8_t*>(rows[r] + k) + pf);
    }
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
      for (int j = 0; j < 4; ++j) acc[r][j] = _mm512_fmadd_ps(Load(rows[r] + k + 16 * j), xv[j], acc[r][j]);
  }
  for (; k + 16 <= n; k += 16) {
    const __m512 xv = x16(k);
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) acc[r][0] = _mm512_fmadd_ps(Load(rows[r] + k), xv, acc[r][0]);
  }
  for (int r = 0; r < R; ++r) {
    float s = _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(acc[r][0], acc[r][1]), _mm512_add_ps(acc[r][2], acc[r][3])));
    for (int64_t i = k; i < n; ++i) s += Scalar(rows[r][i]) * x1(i);
    out[r] = s;
  }
}

template <__m512 (*Load)(const uint16_t*), float (*Scalar)(uint16_t)>
void rows_dense16(Dense16Order order, const void* w, int64_t n, int64_t r0, int64_t r1, const ActivationBuffer& act,
                  float* y) {
  const uint16_t* xh = reinterpret_cast<const uint16_t*>(act.bytes.data());
  const size_t stride = ggml_row_bytes(GgmlType::F16, n);  // 2 bytes per weight, as BF16
  const auto row = [&](int64_t r) {
    return reinterpret_cast<const uint16_t*>(static_cast<const uint8_t*>(w) + static_cast<size_t>(r) * stride);
  };
  if (order == Dense16Order::kOneRow) {
    for (int64_t r = r0; r < r1; ++r) {
      const uint16_t* rows[1] = {row(r)};
      dense_rows<1, Load, Scalar>(rows, xh, n, y + (r - r0));
    }
    return;
  }
  const float* xf = widened_activations(xh, n, Scalar, Load);
  two_streams(
      r0, r1,
      [&](int64_t a, int64_t b) {
        const uint16_t* rows[2] = {row(a), row(b)};
        float out[2];
        dense_rows<2, Load, Scalar>(rows, xf, n, out);
        y[a - r0] = out[0];
        y[b - r0] = out[1];
      },
      [&](int64_t a) {
        const uint16_t* rows[1] = {row(a)};
        dense_rows<1, Load, Scalar>(rows, xf, n, y + (a - r0));
      });
}

// BF16 rows against BF16 activations by vdpbf16ps (Bf16Product::kDot; by the rule, kOneRow on CPUs
// with AVX512-BF16, i.e. Zen 4): per row four 16-lane f32 accumulators over 128-column steps, then
// 32-column steps into the first, the lanes summed, then the scalar tail. Per lane and step the
// instruction adds the odd column's product and then the even one's (Intel SDM VDPBF16PS; Zen 4
// gave the same bits as that order on 3.2 million random lanes), each product exact (8 x 8
// significand bits) and each add rounded to nearest even, with denormal inputs and results flushed
// to zero. So against the FMA kernel (dense_rows) the products are the same and the accumulation
// pairs neighbouring columns in a lane. One instruction per 32 columns, where dense_rows converts
// both operands (two instructions each) and issues two FMAs: on the 2-core Zen 4 VM, one thread
// sweeping 60 matrices of 5632x2048 from memory, alternating sweep by sweep (medians of 7),
// prefetched 1-4 KiB ahead it read 28.3-28.5 GB/s where dense_rows read 26.9 in a fast window, and
// 26.1-26.4 (1-2 KiB) where it read 22.1 in a slow one (from L2: 74-80 against 35); llama.cpp's
// BF16 decode takes the same instruction.
//   R = 1 (kOneRow): one row after the other, each prefetched kBf16DotPrefetch bytes ahead into L2.
//   R = 2 (kTwoStreams): rows a and b of two_streams() together, sharing the activation loads, each
//     prefetched prefetch_bytes() ahead as dense_rows does in that order. Each row's arithmetic is
//     the R = 1 row's, so both give the same bits.
// Other hints for R = 1 on the Zen 4 VM, synth TinyLlama BF16 `ar-bench -p 1 -n 32 -r 3`,
// alternating with T1 at 2 KiB: prefetchnta (on AMD into L1, never evicted to L2) decoded one
// thread at 9.6-10.6 tok/s (512 B-2 KiB ahead) against 12.75, and two threads at 13.1-15.5 (512 B)
// against 15.8-24.8, slower in all 8 rounds; prefetcht0 at 1-2 KiB one thread at 7.9-9.3 against
// 11.65. Neither is kept.
constexpr size_t kBf16DotPrefetch = 2048;

template <int R>
KAKEYA_BF16_TARGET inline void bf16_dot_rows(const uint16_t* const* rows, const uint16_t* x, int64_t n, size_t pf,
                                             float* out) {
  const auto pair32 = [](const uint16_t* p) { return (__m512bh)_mm512_loadu_si512(p); };
  __m512 acc[R][4];
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int j = 0; j < 4; ++j) acc[r][j] = _mm512_setzero_ps();
  int64_t k = 0;
  for (; k + 128 <= n; k += 128) {
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) prefetch_lines<256>(reinterpret_cast<const uint8_t*>(rows[r] + k) + pf);
#pragma GCC unroll 4
    for (int j = 0; j < 4; ++j) {
      const __m512bh xv = pair32(x + k + 32 * j);
#pragma GCC unroll 4
      for (int r = 0; r < R; ++r) acc[r][j] = _mm512_dpbf16_ps(acc[r][j], pair32(rows[r] + k + 32 * j), xv);
    }
  }
  for (; k + 32 <= n; k += 32) {
    const __m512bh xv = pair32(x + k);
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) acc[r][0] = _mm512_dpbf16_ps(acc[r][0], pair32(rows[r] + k), xv);
  }
  for (int r = 0; r < R; ++r) {
    float s =
        _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(acc[r][0], acc[r][1]), _mm512_add_ps(acc[r][2], acc[r][3])));
    for (int64_t i = k; i < n; ++i) s += bf16_scalar(rows[r][i]) * bf16_scalar(x[i]);
    out[r] = s;
  }
}

KAKEYA_BF16_TARGET void rows_bf16_dot(Dense16Order order, const void* w, int64_t n, int64_t r0, int64_t r1,
                                      const ActivationBuffer& act, float* y) {
  const uint16_t* x = reinterpret_cast<const uint16_t*>(act.bytes.data());
  const size_t stride = ggml_row_bytes(GgmlType::BF16, n);
  const auto row = [&](int64_t r) {
    return reinterpret_cast<const uint16_t*>(static_cast<const uint8_t*>(w) + static_cast<size_t>(r) * stride);
  };
  if (order == Dense16Order::kOneRow) {
    for (int64_t r = r0; r < r1; ++r) {
      const uint16_t* rows[1] = {row(r)};
      bf16_dot_rows<1>(rows, x, n, kBf16DotPrefetch, y + (r - r0));
    }
    return;
  }
  const size_t pf = prefetch_bytes();
  two_streams(
      r0, r1,
      [&](int64_t a, int64_t b) {
        const uint16_t* rows[2] = {row(a), row(b)};
        float out[2];
        bf16_dot_rows<2>(rows, x, n, pf, out);
        y[a - r0] = out[0];
        y[b - r0] = out[1];
      },
      [&](int64_t a) {
        const uint16_t* rows[1] = {row(a)};
        bf16_dot_rows<1>(rows, x, n, pf, y + (a - r0));
      });
}

void matvec_dense16(Dense16Kernel kernel, GgmlType type, const void* w, int64_t n, int64_t r0, int64_t r1,
                    const ActivationBuffer& act, float* y) {
  if (type == GgmlType::F16) return rows_dense16<f16x16, f16_scalar>(kernel.order, w, n, r0, r1, act, y);
  if (kernel.bf16 == Bf16Product::kDot) return rows_bf16_dot(kernel.order, w, n, r0, r1, act, y);
  rows_dense16<bf16x16, bf16_scalar>(kernel.order, w, n, r0, r1, act, y);
}

// ---- Q4_K / Q6_K against Q8_K activations (bit-identical to the portable kernels) ----
//
// Per super-block: VPDPBUSD of the unsigned weight quants with the activations gives each
// sub-block's products in int32 lanes, small enough to pack to int16 exactly; VPMADDWD / VPDPWSSD
// multiply them by each sub-block's scale into 16 int32 lanes, whose sum is the super-block's
// exact integer total, combined in f32 as in dot_q4_k / dot_q6_k (quant.cpp). Two rows at once
// share the activations.

// The VPERMW index that gives int16 lane m its scale: lane m gets scale index f(m) of a vector
// holding the super-block's scales as int16.
template <class F>
__m512i scale_index(const F& f) {
  alignas(64) int16_t idx[32];
  for (int m = 0; m < 32; ++m) idx[m] = static_cast<int16_t>(f(m));
  return _mm512_load_si512(idx);
}

// The 6-bit quants of one half (128 elements) of a Q6_K super-block as two 64-byte chunks:
// chunk A (elements 0..63) = low nibbles of ql | qh bits 0-1 (elements 0..31) and 2-3 (32..63);
// chunk B (64..127) = high nibbles | qh bits 4-5 and 6-7 (the layout of dequant_q6_k).
inline void q6k_half(const uint8_t* ql, const uint8_t* qh, __m512i* a, __m512i* b) {
  const __m512i low4 = _mm512_set1_epi8(0x0F);
  const __m512i bits45 = _mm512_set1_epi8(0x30);
  const __m512i l = _mm512_loadu_si512(ql);
  const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qh));
  // Bytes 0..31: qh as is; 32..63: qh >> 2. Then bits 4-5 of each byte are chunk B's high bits
  // and bits 0-1 (moved to 4-5) chunk A's.
  const __m512i hh = _mm512_inserti64x4(_mm512_castsi256_si512(h), _mm256_srli_epi16(h, 2), 1);
  *a = _mm512_or_si512(_mm512_and_si512(l, low4), _mm512_and_si512(_mm512_slli_epi16(hh, 4), bits45));
  *b = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(l, 4), low4), _mm512_and_si512(hh, bits45));
}

// The sums of the 16 int32 lanes of q[0..G) (G <= 4), in every 128-bit lane as
// [Σq0, Σq1, Σq2, Σq3], zero past G (exact: the integer adds in another order).
template <int G>
inline __m512i transpose_sum(const __m512i* q) {
  const __m512i z = _mm512_setzero_si512();
  const __m512i q0 = q[0], q1 = G > 1 ? q[1] : z, q2 = G > 2 ? q[2] : z, q3 = G > 3 ? q[3] : z;
  const __m512i t01 = _mm512_add_epi32(_mm512_unpacklo_epi32(q0, q1), _mm512_unpackhi_epi32(q0, q1));
  const __m512i t23 = _mm512_add_epi32(_mm512_unpacklo_epi32(q2, q3), _mm512_unpackhi_epi32(q2, q3));
  __m512i u = _mm512_add_epi32(_mm512_unpacklo_epi64(t01, t23), _mm512_unpackhi_epi64(t01, t23));
  u = _mm512_add_epi32(u, _mm512_shuffle_i32x4(u, u, _MM_PERM_BADC));
  return _mm512_add_epi32(u, _mm512_shuffle_i32x4(u, u, _MM_PERM_CDAB));
}

// The K-quant kernels below take a row kKGroup super-blocks at a time: each super-block's exact
// integer total in 16 int32 lanes, the group's totals reduced together (transpose_sum) and their
// f32 products taken in one vector; only the final adds, in order, are scalar. Against one
// super-block at a time (a horizontal sum, scalar scale unpacking and scalar products per
// super-block, VPMADDUBSW + VPDPWSSD with 4 VPERMW-picked scale vectors), one thread on the 2-core
// AMD EPYC (Zen 4) VM, kakeya_kernels_bench 5632×2048, 3 alternating runs: Q4_K in cache
// 18.1-21.2 -> 29.7-30.2 GB/s, from memory (24 matrices) 12.5-16.3 -> 17.0-18.5, Q6_K in cache
// 21.9-28.3 -> 27.1-29.5 and level from memory; synth TinyLlama Q4_K decode on one thread
// 26.8-30.0 -> 33.4-35.1 tok/s (4 alternating pairs), Q6_K level (bench/README.md).
constexpr int64_t kKGroup = 4;

// Calls f.template operator()<G>(i) for each group of a row of nb super-blocks: i = 0, kKGroup,
// ..., G = kKGroup but for a shorter last group.
template <class F>
inline void each_kgroup(int64_t nb, const F& f) {
  int64_t i = 0;
  for (; i + kKGroup <= nb; i += kKGroup) f.template operator()<kKGroup>(i);
  switch (nb - i) {
    case 3: f.template operator()<3>(i); break;
    case 2: f.template operator()<2>(i); break;
    case 1: f.template operator()<1>(i); break;
    default: break;
  }
}

// Q6_K: VPDPBUSD of the 6-bit quants (stored +32, so unsigned) with the activations gives each
// 16-element sub-block's products in 4 int32 lanes, one 128-bit lane per sub-block
// (|.| <= 4·63·128, so they pack to int16 exactly); VPMADDWD / VPDPWSSD multiply the packed sums
// by the int8 scales (VPERMW-picked, sign-extended) into 16 int32 lanes, less 32·Σ_j scale_j·bsum_j.
inline __m512i q6k_sum(const BlockQ6_K& b, const __m512i* a, const __m256i& bsums, const __m512i& pick01,
                       const __m512i& pick23) {
  __m512i q[4];
  q6k_half(b.ql, b.qh, &q[0], &q[1]);
  q6k_half(b.ql + 64, b.qh + 32, &q[2], &q[3]);
  const __m256i sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b.scales)));
  const __m512i sc = _mm512_castsi256_si512(sc16);
  const __m512i z = _mm512_setzero_si512();
  // p_c, 128-bit lane k: sub-block 4c + k. Packed (p0, p1) lane k: sub-blocks k, 4 + k.
  const __m512i p0 = _mm512_dpbusd_epi32(z, q[0], a[0]), p1 = _mm512_dpbusd_epi32(z, q[1], a[1]);
  const __m512i p2 = _mm512_dpbusd_epi32(z, q[2], a[2]), p3 = _mm512_dpbusd_epi32(z, q[3], a[3]);
  __m512i acc = _mm512_madd_epi16(_mm512_packs_epi32(p0, p1), _mm512_permutexvar_epi16(pick01, sc));
  acc = _mm512_dpwssd_epi32(acc, _mm512_packs_epi32(p2, p3), _mm512_permutexvar_epi16(pick23, sc));
  // The quants are stored +32: subtract 32·Σ_j scale_j·bsum_j (|32·scale| <= 4096 fits int16).
  const __m256i offset = _mm256_madd_epi16(_mm256_slli_epi16(sc16, 5), bsums);
  return _mm512_sub_epi32(acc, _mm512_zextsi256_si512(offset));
}

// G super-blocks (from i) of R rows: s[r] += round(d·da·Σ) of each, in order (dot_q6_k).
template <int R, int G>
inline void q6k_group(const BlockQ6_K* const* x, const BlockQ8_K* y, int64_t i, const __m512i& pick01,
                      const __m512i& pick23, size_t pf, float* s) {
  __m512i q[R][kKGroup];
  alignas(16) uint16_t d[R][kKGroup] = {};
  alignas(16) float da[kKGroup] = {};
#pragma GCC unroll 4
  for (int b = 0; b < G; ++b) {
    const BlockQ8_K& yb = y[i + b];
    const __m512i a[4] = {_mm512_loadu_si512(yb.qs), _mm512_loadu_si512(yb.qs + 64),
                          _mm512_loadu_si512(yb.qs + 128), _mm512_loadu_si512(yb.qs + 192)};
    const __m256i bsums = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(yb.bsums));
    da[b] = yb.d;
    // Lines at +0, 64, 128, 192 of each 210-byte block: with the next block's, every line.
#pragma GCC unroll 2
    for (int r = 0; r < R; ++r) {
      prefetch_lines<256>(reinterpret_cast<const uint8_t*>(x[r] + i + b) + pf);
      q[r][b] = q6k_sum(x[r][i + b], a, bsums, pick01, pick23);
      d[r][b] = x[r][i + b].d;
    }
  }
#pragma GCC unroll 2
  for (int r = 0; r < R; ++r) {
    const __m512i sum = transpose_sum<G>(q[r]);
    const __m128 scale = _mm_mul_ps(_mm_cvtph_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(d[r]))),
                                    _mm_load_ps(da));
    const __m128 p = _mm_mul_ps(_mm_cvtepi32_ps(_mm512_castsi512_si128(sum)), scale);
    alignas(16) float t[4];
    _mm_store_ps(t, p);
#pragma GCC unroll 4
    for (int b = 0; b < G; ++b) s[r] += t[b];
  }
}

template <int R>
inline void q6k_rows(const BlockQ6_K* const* x, const BlockQ8_K* y, int64_t nb, float* out) {
  const size_t pf = prefetch_bytes();
  // Int16 lanes of 128-bit lane k: [scale k ×4, scale 4+k ×4] and [scale 8+k ×4, scale 12+k ×4].
  static const __m512i kPick01 = scale_index([](int m) { return (m % 8 < 4 ? 0 : 4) + m / 8; });
  static const __m512i kPick23 = scale_index([](int m) { return (m % 8 < 4 ? 8 : 12) + m / 8; });
  const __m512i pick01 = kPick01, pick23 = kPick23;
  float s[R] = {};
  each_kgroup(nb, [&]<int G>(int64_t i) { q6k_group<R, G>(x, y, i, pick01, pick23, pf, s); });
  for (int r = 0; r < R; ++r) out[r] = s[r];
}

// Q4_K's quants hold elements 64j + l (low nibble) and 64j + 32 + l (high nibble) in byte
// 32j + l; one 64-byte load covers j = 2k, 2k+1. The activations are reordered once per call so
// that the low nibbles of that load meet [64·2k .. +32) ++ [64·(2k+1) .. +32) and the high ones
// the other halves; sums = Σ of each sub-block's 32 activations (for the mins) and da2 = the
// super-block's activation scale twice, both padded with zeros to whole groups of kKGroup
// super-blocks (loaded a group at a time).

struct Q4kActivations {
  std::vector<int8_t> qs;    // per super-block 4 × 64 bytes: lo0, hi0, lo1, hi1
  std::vector<int16_t> sums;  // per super-block 8
  std::vector<float> da2;     // per super-block [d, d]
};

const Q4kActivations& q4k_activations(const BlockQ8_K* y, int64_t nb) {
  thread_local Q4kActivations t;
  const int64_t padded = (nb + kKGroup - 1) / kKGroup * kKGroup;
  t.qs.resize(static_cast<size_t>(nb) * 256);
  t.sums.assign(static_cast<size_t>(padded) * 8, 0);
  t.da2.assign(static_cast<size_t>(padded) * 2, 0.0f);
  for (int64_t i = 0; i < nb; ++i) {
    int8_t* d = t.qs.data() + i * 256;
    for (int k = 0; k < 2; ++k) {
      const int8_t* q = y[i].qs + 128 * k;
      std::memcpy(d + 128 * k, q, 32);            // lo: sub-block 4k
      std::memcpy(d + 128 * k + 32, q + 64, 32);  //     sub-block 4k+2
      std::memcpy(d + 128 * k + 64, q + 32, 32);  // hi: sub-block 4k+1
      std::memcpy(d + 128 * k + 96, q + 96, 32);  //     sub-block 4k+3
    }
    for (int j = 0; j < 8; ++j)
      t.sums[static_cast<size_t>(i * 8 + j)] = static_cast<int16_t>(y[i].bsums[2 * j] + y[i].bsums[2 * j + 1]);
    t.da2[static_cast<size_t>(2 * i)] = t.da2[static_cast<size_t>(2 * i + 1)] = y[i].d;
  }
  return t;
}

// Q4_K against the reordered activations (bit-identical to dot_q4_k: the same exact integer
// totals Σq = Σ_j scale_j·<q_j, a_j> and Σm = Σ_j min_j·sum_j, then per super-block
// s += round(d·da·Σq) − round(dmin·da·Σm) in order). Per super-block, VPDPBUSD gives each
// sub-block's products in 8 int32 lanes (|.| <= 4·15·128, so they pack to int16 exactly);
// VPMADDWD / VPDPWSSD multiply the packed sums by the 6-bit scales (picked by VPSHUFB from bytes,
// zero-extended) into 16 int32 lanes. The group's 16-byte headers (d, dmin, the 12 scale bytes)
// are unpacked side by side in one register, and its Σm reduced beside its Σq.
struct Q4kGroupConstants {
  __m512i low4 = _mm512_set1_epi8(0x0F);
  // Per 128-bit lane k of the packed pairs (sub-blocks A|B of two chunks), the int16 scale of
  // each 4 lanes: k < 2 the first sub-block of each chunk, k >= 2 the second (see q4k_sum_q).
  __m512i pick01 = scale_bytes(0, 1, 2, 3);
  __m512i pick23 = scale_bytes(4, 5, 6, 7);

  // VPSHUFB indices giving lanes k < 2 [s_a ×4, s_b ×4] and lanes k >= 2 [s_c ×4, s_d ×4], as int16
  // (0x80 zeroes the high bytes).
  static __m512i scale_bytes(int a, int b, int c, int d) {
    alignas(64) uint8_t idx[64];
    for (int k = 0; k < 4; ++k)
      for (int e = 0; e < 8; ++e) {
        const int src = k < 2 ? (e < 4 ? a : b) : (e < 4 ? c : d);
        idx[16 * k + 2 * e] = static_cast<uint8_t>(src);
        idx[16 * k + 2 * e + 1] = 0x80;
      }
    return _mm512_load_si512(idx);
  }
};

// The headers of super-blocks x[0..G) (zero lanes past G), one per 128-bit lane: words
// [d|dmin, w0, w1, w2] -> bytes 0..7 the 8 scales, 8..15 the 8 mins (q4k_scale_min's mapping:
// scales 0..3 = w0 & 63, mins 0..3 = w1 & 63, scales 4..7 = (w2 & 15) | (w0 >> 6) << 4, mins
// 4..7 = (w2 >> 4) | (w1 >> 6) << 4, per byte).
template <int G>
inline __m512i q4k_headers(const BlockQ4_K* x) {
  auto header = [x](int b) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(x + b)); };
  __m512i raw = _mm512_zextsi128_si512(header(0));
  if constexpr (G > 1) raw = _mm512_inserti32x4(raw, header(1), 1);
  if constexpr (G > 2) raw = _mm512_inserti32x4(raw, header(2), 2);
  if constexpr (G > 3) raw = _mm512_inserti32x4(raw, header(3), 3);
  return raw;
}

// The 128-bit lane b of v in every lane.
inline __m512i broadcast_lane(__m512i v, int b) {
  switch (b) {
    case 0: return _mm512_shuffle_i32x4(v, v, 0x00);
    case 1: return _mm512_shuffle_i32x4(v, v, 0x55);
    case 2: return _mm512_shuffle_i32x4(v, v, 0xAA);
    default: return _mm512_shuffle_i32x4(v, v, 0xFF);
  }
}

inline __m512i q4k_scales_mins(__m512i raw) {
  const __m512i w = _mm512_bsrli_epi128(raw, 4);  // [w0, w1, w2, 0]
  const __m512i lo = _mm512_and_si512(w, _mm512_set1_epi8(0x3F));
  const __m512i w2 = _mm512_shuffle_epi32(w, _MM_PERM_CCCC);
  const __m512i hi4 = _mm512_and_si512(_mm512_srlv_epi32(w2, _mm512_set_epi32(0, 0, 4, 0, 0, 0, 4, 0, 0, 0, 4, 0, 0, 0, 4, 0)),
                                       _mm512_set1_epi8(0x0F));
  const __m512i top2 = _mm512_and_si512(_mm512_srli_epi32(w, 2), _mm512_set1_epi8(0x30));
  return _mm512_unpacklo_epi32(lo, _mm512_or_si512(hi4, top2));  // [s_lo, s_hi, m_lo, m_hi]
}

// Σq of one super-block: 16 int32 lanes (exact), against the reordered activations a[0..4).
inline __m512i q4k_sum_q(const BlockQ4_K& b, const __m512i* a, __m512i scale_bytes, const Q4kGroupConstants& c) {
  const __m512i v0 = _mm512_loadu_si512(b.qs), v1 = _mm512_loadu_si512(b.qs + 64);
  const __m512i z = _mm512_setzero_si512();
  const __m512i p0 = _mm512_dpbusd_epi32(z, _mm512_and_si512(v0, c.low4), a[0]);
  const __m512i p1 = _mm512_dpbusd_epi32(z, _mm512_and_si512(_mm512_srli_epi16(v0, 4), c.low4), a[1]);
  const __m512i p2 = _mm512_dpbusd_epi32(z, _mm512_and_si512(v1, c.low4), a[2]);
  const __m512i p3 = _mm512_dpbusd_epi32(z, _mm512_and_si512(_mm512_srli_epi16(v1, 4), c.low4), a[3]);
  // p0: sub-blocks 0 (lanes 0..7) | 2 (8..15), p1: 1 | 3, p2: 4 | 6, p3: 5 | 7. Packed per
  // 128-bit lane k: [p0 lanes 4k..4k+3, p1 lanes 4k..4k+3], i.e. sub-blocks 0, 1 (k < 2) or 2, 3.
  const __m512i s01 = _mm512_shuffle_epi8(scale_bytes, c.pick01);
  const __m512i s23 = _mm512_shuffle_epi8(scale_bytes, c.pick23);
  const __m512i acc = _mm512_madd_epi16(_mm512_packs_epi32(p0, p1), s01);
  return _mm512_dpwssd_epi32(acc, _mm512_packs_epi32(p2, p3), s23);
}

// Adds the terms of G super-blocks of one row to s: q[0..G) their Σq lanes, raw their headers
// (q4k_headers), sm their scale/min bytes, sums and da2 the group's activation sums and scales.
template <int G>
inline float q4k_combine(float s, const __m512i* q, __m512i raw, __m512i sm, const int16_t* sums, const float* da2) {
  // Σm: per lane b, min_j·sum_j over the 8 sub-blocks, summed within the lane.
  __m512i m = _mm512_madd_epi16(_mm512_unpackhi_epi8(sm, _mm512_setzero_si512()), _mm512_loadu_si512(sums));
  m = _mm512_add_epi32(m, _mm512_shuffle_epi32(m, _MM_PERM_BADC));
  m = _mm512_add_epi32(m, _mm512_shuffle_epi32(m, _MM_PERM_CDAB));  // lane b: Σm_b in every element
  const __m512i u = transpose_sum<G>(q);  // every lane [Σq0..Σq3]
  // Σm_b sits at element 5b of m; interleave to [Σq0, Σm0, Σq1, Σm1, ...].
  const __m512i qm = _mm512_permutexvar_epi32(_mm512_set_epi32(0, 0, 0, 0, 0, 0, 0, 0, 15, 3, 10, 2, 5, 1, 0, 4),
                                              _mm512_mask_blend_epi32(0x8421, u, m));
  // [d0, dmin0, d1, dmin1, ...]·da (the header words 0 of the four lanes), then the products.
  const __m128i dd = _mm512_castsi512_si128(
      _mm512_permutexvar_epi32(_mm512_set_epi32(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 12, 8, 4, 0), raw));
  const __m256 scale = _mm256_mul_ps(_mm256_cvtph_ps(dd), _mm256_loadu_ps(da2));
  const __m256 p = keep_rounded(_mm256_mul_ps(_mm256_cvtepi32_ps(_mm512_castsi512_si256(qm)), scale));
  const __m256 t = _mm256_sub_ps(p, _mm256_movehdup_ps(p));  // elements 0, 2, 4, 6
  const __m128 t_lo = _mm256_castps256_ps128(t), t_hi = _mm256_extractf128_ps(t, 1);
  s += _mm_cvtss_f32(t_lo);
  if (G > 1) s += _mm_cvtss_f32(_mm_movehl_ps(t_lo, t_lo));
  if (G > 2) s += _mm_cvtss_f32(t_hi);
  if (G > 3) s += _mm_cvtss_f32(_mm_movehl_ps(t_hi, t_hi));
  return s;
}

// G super-blocks (from i) of R rows.
template <int R, int G>
inline void q4k_group(const BlockQ4_K* const* x, int64_t i, const Q4kActivations& ya, const Q4kGroupConstants& c,
                      size_t pf, float* s) {
  __m512i raw[R], sm[R], q[R][4];
#pragma GCC unroll 2
  for (int r = 0; r < R; ++r) {
    // Lines at +0, 64, ... of the group's 576 bytes: with the next group's, every line.
    prefetch_lines<kKGroup * sizeof(BlockQ4_K)>(reinterpret_cast<const uint8_t*>(x[r] + i) + pf);
    raw[r] = q4k_headers<G>(x[r] + i);
    sm[r] = q4k_scales_mins(raw[r]);
  }
#pragma GCC unroll 4
  for (int b = 0; b < G; ++b) {
    const int8_t* qa = ya.qs.data() + (i + b) * 256;
    const __m512i a[4] = {_mm512_loadu_si512(qa), _mm512_loadu_si512(qa + 64), _mm512_loadu_si512(qa + 128),
                          _mm512_loadu_si512(qa + 192)};
#pragma GCC unroll 2
    for (int r = 0; r < R; ++r)
      q[r][b] = q4k_sum_q(x[r][i + b], a, broadcast_lane(sm[r], b), c);
  }
#pragma GCC unroll 2
  for (int r = 0; r < R; ++r)
    s[r] = q4k_combine<G>(s[r], q[r], raw[r], sm[r], ya.sums.data() + i * 8, ya.da2.data() + i * 2);
}

template <int R>
inline void q4k_rows(const BlockQ4_K* const* x, const Q4kActivations& ya, int64_t nb, float* out) {
  static const Q4kGroupConstants kConstants;
  const Q4kGroupConstants c = kConstants;
  const size_t pf = prefetch_bytes();
  float s[R] = {};
  each_kgroup(nb, [&]<int G>(int64_t i) { q4k_group<R, G>(x, i, ya, c, pf, s); });
  for (int r = 0; r < R; ++r) out[r] = s[r];
}

void rows_q6_k(const void* w, int64_t n, int64_t r0, int64_t r1, const ActivationBuffer& act, float* y) {
  const int64_t nb = n / 256;
  const auto* base = static_cast<const BlockQ6_K*>(w);
  const auto* a = reinterpret_cast<const BlockQ8_K*>(act.bytes.data());
  two_streams(
      r0, r1,
      [&](int64_t ra, int64_t rb) {
        const BlockQ6_K* rows[2] = {base + ra * nb, base + rb * nb};
        float out[2];
        q6k_rows<2>(rows, a, nb, out);
        y[ra - r0] = out[0];
        y[rb - r0] = out[1];
      },
      [&](int64_t ra) {
        const BlockQ6_K* rows[1] = {base + ra * nb};
        q6k_rows<1>(rows, a, nb, y + (ra - r0));
      });
}

// Q4_K rows go two far streams with the software prefetch (prefetch_bytes()) on every CPU. On the
// 2-core AMD EPYC (Zen 5) VM, one thread, kakeya_kernels_bench from memory (24 matrices of
// 5632×2048) against this order in the same minutes, none of these made decode faster:
//   - one row at a time, no prefetch: 19.4-20.4 GB/s against 17.0-18.1 in one run, but synth
//     TinyLlama decode 27.5-31.1 tok/s against 32.4-34.1; it computes 29-35 GB/s in cache, this
//     order 39-40;
//   - two far rows without the prefetch: 21.3-29.2 against 19.4-24.7 (five ABBA rounds, medians
//     24.0 and 22.6); decode 33.1-36.8 against 33.9-38.4 (five ABBA rounds); two threads no better;
//   - two adjacent rows (r, r + 1), or two adjacent pairs far apart, no prefetch: 6.4-8.0 GB/s
//     (each row's bytes meet the other's out of order in the same pages; why that is so slow
//     was not found out);
//   - a packed layout, 16 rows interleaved a pair and 4 super-blocks at a time in exactly the
//     order this kernel loads them (one front-to-back stream, as packed Q4_0 is read): 14.2-15.9
//     against 17.1-19.2 (packed Q4_0 15.2-27.9 in the same runs), and 32 GB/s in cache against 39.
// In cache (256 rows) this kernel reads 30-40 GB/s of weights where packed Q4_0 reads 51-54,
// which points at the kernel's own rate, more than the order it reads memory in, as what one
// thread's decode waits on (a profile of that decode finds no single stall: the hottest
// instruction, a block header's load, has 8.6% of the kernel's samples).
void rows_q4_k(const void* w, int64_t n, int64_t r0, int64_t r1, const ActivationBuffer& act, float* y) {
  const int64_t nb = n / 256;
  const auto* base = static_cast<const BlockQ4_K*>(w);
  const auto* a = reinterpret_cast<const BlockQ8_K*>(act.bytes.data());
  const Q4kActivations& ya = q4k_activations(a, nb);
  two_streams(
      r0, r1,
      [&](int64_t ra, int64_t rb) {
        const BlockQ4_K* rows[2] = {base + ra * nb, base + rb * nb};
        float out[2];
        q4k_rows<2>(rows, ya, nb, out);
        y[ra - r0] = out[0];
        y[rb - r0] = out[1];
      },
      [&](int64_t ra) {
        const BlockQ4_K* rows[1] = {base + ra * nb};
        q4k_rows<1>(rows, ya, nb, y + (ra - r0));
      });
}

void avx512_matvec(GgmlType type, const void* w, int64_t n, int64_t r0, int64_t r1, const ActivationBuffer& act,
                   float* y) {
  switch (type) {
    case GgmlType::F16:
    case GgmlType::BF16: return matvec_dense16(avx512_dense16_kernel(), type, w, n, r0, r1, act, y);
    case GgmlType::Q4_K: return rows_q4_k(w, n, r0, r1, act, y);
    case GgmlType::Q6_K: return rows_q6_k(w, n, r0, r1, act, y);
    default: break;
  }
  if (const detail::TypeKernels* k = detail::lanes_avx512(type)) return k->matvec(w, n, r0, r1, act, y);
  detail::avx2_kernels().matvec(type, w, n, r0, r1, act, y);
}

// One row: the same accumulation as avx512_matvec (matvec and vec_dot agree within a set).
float avx512_vec_dot(GgmlType type, const void* row, const ActivationBuffer& act) {
  if (const detail::TypeKernels* k = detail::lanes_avx512(type)) return k->dot(row, act.bytes.data(), act.n);
  switch (type) {
    case GgmlType::F16:
    case GgmlType::BF16:
    case GgmlType::Q4_K:
    case GgmlType::Q6_K: {
      float y = 0.0f;
      avx512_matvec(type, row, act.n, 0, 1, act, &y);
      return y;
    }
    default: return detail::avx2_kernels().vec_dot(type, row, act);
  }
}

void avx512_matvec_packed(GgmlType type, const uint8_t* packed, int64_t n, int64_t r0, int64_t r1,
                          const ActivationBuffer& act, float* y) {
  avx512_matvec_packed_path(avx512_packed_path(type), type, packed, n, r0, r1, act, y);
}

// ---- f32 rows for attention (bit-identical to the AVX2 set's) ----

inline __m256 low_half(__m512 v) { return _mm512_castps512_ps256(v); }
inline __m256 high_half(__m512 v) { return _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)); }

// quant_avx2.cpp's hsum8_ps (repeated, see the top of this file): out[r] = the horizontal sum of
// v[r] for r < 8 by the same three adds per row as its hsum_ps.
inline void hsum8_ps(const __m256 v[8], float* out) {
  __m256 half[4];
  for (int p = 0; p < 4; ++p)
    half[p] = _mm256_add_ps(_mm256_permute2f128_ps(v[2 * p], v[2 * p + 1], 0x20),
                            _mm256_permute2f128_ps(v[2 * p], v[2 * p + 1], 0x31));
  __m256 pair[2];
  for (int p = 0; p < 2; ++p)
    pair[p] = _mm256_add_ps(_mm256_shuffle_ps(half[2 * p], half[2 * p + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                            _mm256_shuffle_ps(half[2 * p], half[2 * p + 1], _MM_SHUFFLE(3, 2, 3, 2)));
  const __m256 sum = _mm256_add_ps(_mm256_shuffle_ps(pair[0], pair[1], _MM_SHUFFLE(2, 0, 2, 0)),
                                   _mm256_shuffle_ps(pair[0], pair[1], _MM_SHUFFLE(3, 1, 3, 1)));
  _mm256_storeu_ps(out, _mm256_permutevar8x32_ps(sum, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)));
}

// The AVX2 set's dot_f32_rows in 16-lane registers: that kernel keeps, per row, four 8-lane
// accumulators acc0..acc3 over 32-element steps (8-element steps into acc0), sums them as
// (acc0 + acc1) + (acc2 + acc3) and then horizontally (hsum8_ps, eight rows at once). Here one
// register holds [acc0 | acc1] and one [acc2 | acc3] of a row, each lane taking the same fused
// multiply-adds in the same order (8-element steps masked to the low half), so every result is
// the AVX2 set's, bit for bit, with half the multiply-add and load instructions and the query's
// elements loaded once for eight rows. Lengths with a tail (n % 8 != 0, no Llama head size) and
// rows past the last eight run the AVX2 kernel itself. On the 2-core AMD EPYC (Zen 5) VM, the
// scores of 8 query heads of size 64 over 512 slots in blocks of 64 (attention_per_token's
// loop then): 18.3 -> 11.8 us (medians of 200).
void avx512_dot_f32_rows(const float* q, const float* k, size_t stride, size_t rows, int64_t n, float* out) {
  if (n % 8 != 0) return detail::avx2_kernels().dot_f32_rows(q, k, stride, rows, n, out);
  size_t r = 0;
  for (; r + 8 <= rows; r += 8) {
    const float* kr = k + r * stride;
    __m512 acc01[8], acc23[8];
#pragma GCC unroll 8
    for (int j = 0; j < 8; ++j) acc01[j] = acc23[j] = _mm512_setzero_ps();
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
      const __m512 q01 = _mm512_loadu_ps(q + i), q23 = _mm512_loadu_ps(q + i + 16);
#pragma GCC unroll 8
      for (size_t j = 0; j < 8; ++j) {
        acc01[j] = _mm512_fmadd_ps(q01, _mm512_loadu_ps(kr + j * stride + i), acc01[j]);
        acc23[j] = _mm512_fmadd_ps(q23, _mm512_loadu_ps(kr + j * stride + i + 16), acc23[j]);
      }
    }
    for (; i < n; i += 8) {
      const __m512 q0 = _mm512_maskz_loadu_ps(0xff, q + i);
#pragma GCC unroll 8
      for (size_t j = 0; j < 8; ++j)
        acc01[j] = _mm512_mask3_fmadd_ps(q0, _mm512_maskz_loadu_ps(0xff, kr + j * stride + i), acc01[j], 0xff);
    }
    __m256 lanes[8];
#pragma GCC unroll 8
    for (int j = 0; j < 8; ++j)
      lanes[j] = _mm256_add_ps(_mm256_add_ps(low_half(acc01[j]), high_half(acc01[j])),
                               _mm256_add_ps(low_half(acc23[j]), high_half(acc23[j])));
    hsum8_ps(lanes, out + r);
  }
  if (r < rows) detail::avx2_kernels().dot_f32_rows(q, k + r * stride, stride, rows - r, n, out + r);
}

// ---- e^x for SwiGLU and the attention softmax (bit-identical to the portable set's) ----

// exp_f32 (quant.h) on 16 lanes: the AVX2 set's exp8, operation for operation (round to nearest
// even, the same fused multiply-adds, the exponent built from the same integer, the same three
// blends for lanes below, above or NaN).
__m512 exp16(__m512 x) {
  using detail::kExpPoly;
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(detail::kLog2e)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fmadd_ps(n, _mm512_set1_ps(-detail::kLn2Hi), x);
  r = _mm512_fmadd_ps(n, _mm512_set1_ps(detail::kLn2Lo), r);
  __m512 p = _mm512_set1_ps(kExpPoly[0]);
  for (int i = 1; i < 6; ++i) p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kExpPoly[i]));
  p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), r);
  p = _mm512_add_ps(p, _mm512_set1_ps(1.0f));
  const __m512i bits = _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127)), 23);
  __m512 e = _mm512_mul_ps(p, _mm512_castsi512_ps(bits));
  e = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, _mm512_set1_ps(detail::kExpF32Min), _CMP_LT_OQ), e,
                           _mm512_setzero_ps());
  e = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, _mm512_set1_ps(detail::kExpF32Max), _CMP_GT_OQ), e,
                           _mm512_set1_ps(std::numeric_limits<float>::infinity()));
  return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q), e, x);
}

// gate[i] = gate[i] / (1 + e^−gate[i]) · up[i], 16 lanes at a time, the last n % 16 masked.
void avx512_swiglu_f32(float* gate, const float* up, int64_t n) {
  const __m512 one = _mm512_set1_ps(1.0f);
  const __m512i sign = _mm512_set1_epi32(INT32_MIN);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = n - i >= 16 ? __mmask16{0xffff} : static_cast<__mmask16>((1u << (n - i)) - 1);
    const __m512 v = _mm512_maskz_loadu_ps(m, gate + i);
    const __m512 e = exp16(_mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(v), sign)));
    _mm512_mask_storeu_ps(gate + i, m,
                          _mm512_mul_ps(_mm512_div_ps(v, _mm512_add_ps(one, e)), _mm512_maskz_loadu_ps(m, up + i)));
  }
}

void avx512_scale_f32(float* x, int64_t n, float s) {
  const __m512 vs = _mm512_set1_ps(s);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = n - i >= 16 ? __mmask16{0xffff} : static_cast<__mmask16>((1u << (n - i)) - 1);
    _mm512_mask_storeu_ps(x + i, m, _mm512_mul_ps(_mm512_maskz_loadu_ps(m, x + i), vs));
  }
}

// row[i] = e^(row[i] − shift) and their float64 sum in the portable set's order: partial sums
// s0..s7 of the elements i ≡ 0..7 (mod 8), here the eight float64 lanes of one register, taking
// each 16-lane result's low 8 and then high 8 (the lanes past n add +0, which leaves a partial
// sum as it was), then ((s0 + s4) + (s2 + s6)) + ((s1 + s5) + (s3 + s7)) as the AVX2 set adds them.
double avx512_exp_sum_f32(float* row, int64_t n, float shift) {
  const __m512 vs = _mm512_set1_ps(shift);
  __m512d s = _mm512_setzero_pd();
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = n - i >= 16 ? __mmask16{0xffff} : static_cast<__mmask16>((1u << (n - i)) - 1);
    const __m512 e = _mm512_maskz_mov_ps(m, exp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, row + i), vs)));
    _mm512_mask_storeu_ps(row + i, m, e);
    s = _mm512_add_pd(s, _mm512_cvtps_pd(low_half(e)));
    if (n - i > 8) s = _mm512_add_pd(s, _mm512_cvtps_pd(high_half(e)));
  }
  const __m256d a = _mm256_add_pd(_mm512_castpd512_pd256(s), _mm512_extractf64x4_pd(s, 1));  // s0+s4 ... s3+s7
  const __m128d b = _mm_add_pd(_mm256_castpd256_pd128(a), _mm256_extractf128_pd(a, 1));
  return _mm_cvtsd_f64(b) + _mm_cvtsd_f64(_mm_unpackhi_pd(b, b));
}

}  // namespace

PackedPath avx512_packed_path(GgmlType type) {
  static const bool amd = cpu_features().amd();
  if (!amd) return PackedPath::kTwoStreams;
  return type == GgmlType::Q8_0 ? PackedPath::kAvx2 : PackedPath::kOneStream;
}

void avx512_matvec_packed_path(PackedPath path, GgmlType type, const uint8_t* packed, int64_t n, int64_t r0,
                               int64_t r1, const ActivationBuffer& act, float* y) {
  if (path == PackedPath::kAvx2) return detail::avx2_kernels().matvec_packed(type, packed, n, r0, r1, act, y);
  const bool one_stream = path == PackedPath::kOneStream;
  if (type == GgmlType::Q4_0) return packed_q4_0(one_stream, packed, n, r0, r1, act, y);
  packed_q8_0(one_stream, packed, n, r0, r1, act, y);
}

Dense16Kernel avx512_dense16_kernel() {
  static const Dense16Kernel kernel = [] {
    Dense16Kernel k;
    dense16_env(&k);
    return k;
  }();
  return kernel;
}

void avx512_matvec_dense16(Dense16Kernel kernel, GgmlType type, const void* w, int64_t n, int64_t r0, int64_t r1,
                           const ActivationBuffer& act, float* y) {
  matvec_dense16(kernel, type, w, n, r0, r1, act, y);
}

namespace detail {

const QuantKernels& avx512_kernels() {
  static const QuantKernels k = [] {
    QuantKernels set = avx2_kernels();
    set.vec_dot = avx512_vec_dot;
    set.matvec = avx512_matvec;
    set.matvec_packed = avx512_matvec_packed;
    set.dot_f32_rows = avx512_dot_f32_rows;
    set.swiglu_f32 = avx512_swiglu_f32;
    set.exp_sum_f32 = avx512_exp_sum_f32;
    set.scale_f32 = avx512_scale_f32;
    return set;
  }();
  return k;
}

}  // namespace detail

}  // namespace kakeya::engine
