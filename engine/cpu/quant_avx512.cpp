// AVX-512 F/BW/VL/VNNI kernels for packed (row-interleaved) Q4_0 and Q8_0 matrices and for the
// F16, BF16, Q4_K and Q6_K mat-vec, plus the lane-exact types (Q4_1 ... IQ4_XS) through their VNNI
// build (quant_lanes_avx512.cpp); everything else is the AVX2 set. This file is compiled with
// -mavx512f -mavx512bw -mavx512vl -mavx512vnni (plus the AVX2 flags) and only entered through
// detail::avx512_kernels() and the Dense16Order functions of quant.h, after
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
// 28.4-29.3 -> 31.4-31.8 (3, 6 and 8 KiB no better than 4). Chosen by CPU vendor, once.
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

// Keeps the compiler from fusing the multiply that produced v with a later add.
inline __m512 keep_rounded(__m512 v) {
  __asm__("" : "+v"(v));
  return v;
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
template <int G, size_t kBlockBytes, class Block>
inline void packed_groups(const uint8_t* packed, size_t gbytes, int64_t nb, int64_t r0, int64_t r1, float* y,
                          const Block& block) {
  const size_t pf = prefetch_bytes();
  int64_t g = r0 / kPackRows;
  const int64_t g_end = (r1 + kPackRows - 1) / kPackRows;
  for (; g + G <= g_end; g += G) {
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
    __m512 acc = _mm512_setzero_ps();
    for (int64_t b = 0; b < nb; ++b) {
      prefetch_lines<kBlockBytes>(group + static_cast<size_t>(b) * kBlockBytes + pf);
      prefetch_lines<kBlockBytes, _MM_HINT_T0>(group + static_cast<size_t>(b) * kBlockBytes + kL1PrefetchBytes);
      acc = block(group, b, acc);
    }
    store_rows16(acc, g * kPackRows, r0, r1, y);
  }
}

// Q4_0: the nibbles are the unsigned operand as stored (0..15); the −8 offset is removed once per
// block with 8·Σqy. Low nibbles of chunk c are elements 4c..4c+3, high nibbles 16+4c..16+4c+3.
void packed_q4_0(const uint8_t* packed, int64_t n, int64_t r0, int64_t r1, const ActivationBuffer& act,
                 float* y) {
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
  packed_groups<2, 288>(packed, gbytes, nb, r0, r1, y, block);
}

// Q8_0: signed weights become the unsigned operand by flipping the sign bit (q + 128); the
// 128·Σqy this adds is removed once per block.
void packed_q8_0(const uint8_t* packed, int64_t n, int64_t r0, int64_t r1, const ActivationBuffer& act,
                 float* y) {
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
  packed_groups<2, 544>(packed, gbytes, nb, r0, r1, y, block);
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

void matvec_dense16(Dense16Order order, GgmlType type, const void* w, int64_t n, int64_t r0, int64_t r1,
                    const ActivationBuffer& act, float* y) {
  if (type == GgmlType::F16) return rows_dense16<f16x16, f16_scalar>(order, w, n, r0, r1, act, y);
  rows_dense16<bf16x16, bf16_scalar>(order, w, n, r0, r1, act, y);
}

// ---- Q4_K / Q6_K against Q8_K activations (bit-identical to the portable kernels) ----
//
// Per super-block: VPMADDUBSW of the unsigned weight quants with the activations gives int16 pair
// sums (|.| <= 2·63·128, no saturation), VPDPWSSD multiplies them by each sub-block's scale and
// adds into 16 int32 lanes; the lanes are summed into the super-block's exact integer total and
// combined in f32 as in dot_q4_k / dot_q6_k (quant.cpp). Two rows at once share the activations.

// The VPERMW index that gives int16 lane m (pair m of a 64-element chunk) its sub-block's scale:
// lane m gets scale index f(m) of a vector holding the super-block's scales as int16.
template <class F>
__m512i scale_index(const F& f) {
  alignas(64) int16_t idx[32];
  for (int m = 0; m < 32; ++m) idx[m] = static_cast<int16_t>(f(m));
  return _mm512_load_si512(idx);
}

inline int32_t reduce_i32(__m512i v) { return _mm512_reduce_add_epi32(v); }

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

// One Q6_K super-block's term round(d·da·Σ) against the activations a0..a3 (its 256 quants) and
// bsums (their 16-element sums).
inline float q6k_block(const BlockQ6_K& b, const __m512i& a0, const __m512i& a1, const __m512i& a2,
                       const __m512i& a3, const __m256i& bsums, float da, const __m512i* index) {
  const __m256i sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b.scales)));
  const __m512i sc = _mm512_castsi256_si512(sc16);
  __m512i q[4];
  q6k_half(b.ql, b.qh, &q[0], &q[1]);
  q6k_half(b.ql + 64, b.qh + 32, &q[2], &q[3]);
  __m512i acc = _mm512_dpwssd_epi32(_mm512_setzero_si512(), _mm512_maddubs_epi16(q[0], a0),
                                    _mm512_permutexvar_epi16(index[0], sc));
  acc = _mm512_dpwssd_epi32(acc, _mm512_maddubs_epi16(q[1], a1), _mm512_permutexvar_epi16(index[1], sc));
  acc = _mm512_dpwssd_epi32(acc, _mm512_maddubs_epi16(q[2], a2), _mm512_permutexvar_epi16(index[2], sc));
  acc = _mm512_dpwssd_epi32(acc, _mm512_maddubs_epi16(q[3], a3), _mm512_permutexvar_epi16(index[3], sc));
  // The quants are stored +32: subtract 32·Σ_j scale_j·bsum_j (|32·scale| <= 4096 fits int16).
  const __m256i offset = _mm256_madd_epi16(_mm256_slli_epi16(sc16, 5), bsums);
  acc = _mm512_sub_epi32(acc, _mm512_zextsi256_si512(offset));
  return round_f32((_cvtsh_ss(b.d) * da) * static_cast<float>(reduce_i32(acc)));
}

template <int R>
inline void q6k_rows(const BlockQ6_K* const* x, const BlockQ8_K* y, int64_t nb, float* out) {
  const size_t pf = prefetch_bytes();
  // 16-element sub-blocks: chunk c holds sub-blocks 4c..4c+3, 8 pairs each.
  static const __m512i kIndex[4] = {scale_index([](int m) { return m / 8; }), scale_index([](int m) { return 4 + m / 8; }),
                                    scale_index([](int m) { return 8 + m / 8; }), scale_index([](int m) { return 12 + m / 8; })};
  const __m512i index[4] = {kIndex[0], kIndex[1], kIndex[2], kIndex[3]};
  float s[R] = {};
  for (int64_t i = 0; i < nb; ++i) {
    const __m512i a0 = _mm512_loadu_si512(y[i].qs), a1 = _mm512_loadu_si512(y[i].qs + 64),
                  a2 = _mm512_loadu_si512(y[i].qs + 128), a3 = _mm512_loadu_si512(y[i].qs + 192);
    const __m256i bsums = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y[i].bsums));
    // Lines at +0, 64, 128, 192 of each 210-byte block: with the next block's, every line.
    for (int r = 0; r < R; ++r) prefetch_lines<256>(reinterpret_cast<const uint8_t*>(x[r] + i) + pf);
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) s[r] += q6k_block(x[r][i], a0, a1, a2, a3, bsums, y[i].d, index);
  }
  for (int r = 0; r < R; ++r) out[r] = s[r];
}

// Q4_K's quants hold elements 64j + l (low nibble) and 64j + 32 + l (high nibble) in byte
// 32j + l; one 64-byte load covers j = 2k, 2k+1. The activations are reordered once per call so
// that the low nibbles of that load meet [64·2k .. +32) ++ [64·(2k+1) .. +32) and the high ones
// the other halves; sums[i][j] = Σ of sub-block j's 32 activations (for the mins).
struct Q4kActivations {
  std::vector<int8_t> qs;       // per super-block 4 × 64 bytes: lo0, hi0, lo1, hi1
  std::vector<int16_t> sums;    // per super-block 8
};

const Q4kActivations& q4k_activations(const BlockQ8_K* y, int64_t nb) {
  thread_local Q4kActivations t;
  t.qs.resize(static_cast<size_t>(nb) * 256);
  t.sums.resize(static_cast<size_t>(nb) * 8);
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
  }
  return t;
}

// The 12 Q4_K scale bytes -> the 8 scales and the 8 mins, 6 bits each (q4k_scale_min's mapping),
// as int16 in the low 128 bits of two vectors (built in registers: two 4-byte stores read back as
// one 8-byte load would miss store forwarding).
inline void q4k_scales_mins(const uint8_t* packed, __m128i* sc, __m128i* mn) {
  constexpr uint32_t k6 = 0x3F3F3F3Fu, k4 = 0x0F0F0F0Fu, k2 = 0x03030303u;
  uint32_t w[3];
  std::memcpy(w, packed, 12);
  const uint64_t s_lo = w[0] & k6;
  const uint64_t m_lo = w[1] & k6;
  const uint64_t s_hi = (w[2] & k4) | (((w[0] >> 6) & k2) << 4);
  const uint64_t m_hi = ((w[2] >> 4) & k4) | (((w[1] >> 6) & k2) << 4);
  *sc = _mm_cvtepu8_epi16(_mm_cvtsi64_si128(static_cast<int64_t>(s_lo | (s_hi << 32))));
  *mn = _mm_cvtepu8_epi16(_mm_cvtsi64_si128(static_cast<int64_t>(m_lo | (m_hi << 32))));
}

// One Q4_K super-block's term round(d·da·Σq) − round(dmin·da·Σm) against the reordered
// activations a0..a3 and the sub-block sums (q4k_activations).
inline float q4k_block(const BlockQ4_K& b, const __m512i& a0, const __m512i& a1, const __m512i& a2,
                       const __m512i& a3, const __m128i& sums, float da, const __m512i* index) {
  const __m512i low4 = _mm512_set1_epi8(0x0F);
  __m128i sc, mins;
  q4k_scales_mins(b.scales, &sc, &mins);
  const __m512i sc16 = _mm512_castsi128_si512(sc);
  const __m512i v0 = _mm512_loadu_si512(b.qs), v1 = _mm512_loadu_si512(b.qs + 64);
  __m512i acc = _mm512_dpwssd_epi32(_mm512_setzero_si512(), _mm512_maddubs_epi16(_mm512_and_si512(v0, low4), a0),
                                    _mm512_permutexvar_epi16(index[0], sc16));
  acc = _mm512_dpwssd_epi32(acc, _mm512_maddubs_epi16(_mm512_and_si512(_mm512_srli_epi16(v0, 4), low4), a1),
                            _mm512_permutexvar_epi16(index[1], sc16));
  acc = _mm512_dpwssd_epi32(acc, _mm512_maddubs_epi16(_mm512_and_si512(v1, low4), a2),
                            _mm512_permutexvar_epi16(index[2], sc16));
  acc = _mm512_dpwssd_epi32(acc, _mm512_maddubs_epi16(_mm512_and_si512(_mm512_srli_epi16(v1, 4), low4), a3),
                            _mm512_permutexvar_epi16(index[3], sc16));
  // Σq (16 lanes) and Σm = Σ_j min_j·sums_j (4 lanes of pairs) reduced side by side to [Σq, Σm],
  // then [d·da, dmin·da]·[Σq, Σm] in f32 (the same two rounded products as dot_q4_k).
  const __m256i q8 = _mm256_add_epi32(_mm512_castsi512_si256(acc), _mm512_extracti64x4_epi64(acc, 1));
  const __m128i q4 = _mm_add_epi32(_mm256_castsi256_si128(q8), _mm256_extracti128_si256(q8, 1));
  __m128i qm = _mm_hadd_epi32(q4, _mm_madd_epi16(mins, sums));
  qm = _mm_hadd_epi32(qm, qm);
  uint32_t dd;
  std::memcpy(&dd, &b.d, 4);  // d, dmin: adjacent fp16
  const __m128 scale = _mm_mul_ps(_mm_cvtph_ps(_mm_cvtsi32_si128(static_cast<int>(dd))), _mm_set1_ps(da));
  const __m128 p = _mm_mul_ps(_mm_cvtepi32_ps(qm), scale);
  return _mm_cvtss_f32(_mm_sub_ss(p, _mm_movehdup_ps(p)));
}

template <int R>
inline void q4k_rows(const BlockQ4_K* const* x, const BlockQ8_K* y, const int8_t* qa, const int16_t* qsums,
                     int64_t nb, float* out) {
  const size_t pf = prefetch_bytes();
  // 32-element sub-blocks: the load of j = 2k, 2k+1 gives chunk lo = sub-blocks 4k (pairs 0..15)
  // and 4k+2 (16..31), chunk hi = 4k+1 and 4k+3 (the activations are reordered to match).
  static const __m512i kIndex[4] = {scale_index([](int m) { return m < 16 ? 0 : 2; }),
                                    scale_index([](int m) { return m < 16 ? 1 : 3; }),
                                    scale_index([](int m) { return m < 16 ? 4 : 6; }),
                                    scale_index([](int m) { return m < 16 ? 5 : 7; })};
  const __m512i index[4] = {kIndex[0], kIndex[1], kIndex[2], kIndex[3]};
  float s[R] = {};
  for (int64_t i = 0; i < nb; ++i) {
    const int8_t* q = qa + i * 256;
    const __m512i a0 = _mm512_loadu_si512(q), a1 = _mm512_loadu_si512(q + 64), a2 = _mm512_loadu_si512(q + 128),
                  a3 = _mm512_loadu_si512(q + 192);
    const __m128i sums = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qsums + i * 8));
    // Lines at +0, 64, 128 of each 144-byte block: with the next block's, every line.
    for (int r = 0; r < R; ++r) prefetch_lines<192>(reinterpret_cast<const uint8_t*>(x[r] + i) + pf);
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) s[r] += q4k_block(x[r][i], a0, a1, a2, a3, sums, y[i].d, index);
  }
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

void rows_q4_k(const void* w, int64_t n, int64_t r0, int64_t r1, const ActivationBuffer& act, float* y) {
  const int64_t nb = n / 256;
  const auto* base = static_cast<const BlockQ4_K*>(w);
  const auto* a = reinterpret_cast<const BlockQ8_K*>(act.bytes.data());
  const Q4kActivations& ya = q4k_activations(a, nb);
  const int8_t* qa = ya.qs.data();
  const int16_t* qsums = ya.sums.data();
  two_streams(
      r0, r1,
      [&](int64_t ra, int64_t rb) {
        const BlockQ4_K* rows[2] = {base + ra * nb, base + rb * nb};
        float out[2];
        q4k_rows<2>(rows, a, qa, qsums, nb, out);
        y[ra - r0] = out[0];
        y[rb - r0] = out[1];
      },
      [&](int64_t ra) {
        const BlockQ4_K* rows[1] = {base + ra * nb};
        q4k_rows<1>(rows, a, qa, qsums, nb, y + (ra - r0));
      });
}

void avx512_matvec(GgmlType type, const void* w, int64_t n, int64_t r0, int64_t r1, const ActivationBuffer& act,
                   float* y) {
  switch (type) {
    case GgmlType::F16:
    case GgmlType::BF16: return matvec_dense16(avx512_dense16_order(), type, w, n, r0, r1, act, y);
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
  if (type == GgmlType::Q4_0) return packed_q4_0(packed, n, r0, r1, act, y);
  packed_q8_0(packed, n, r0, r1, act, y);
}

}  // namespace

Dense16Order avx512_dense16_order() {
  static const Dense16Order order = cpu_features().amd() ? Dense16Order::kOneRow : Dense16Order::kTwoStreams;
  return order;
}

void avx512_matvec_dense16(Dense16Order order, GgmlType type, const void* w, int64_t n, int64_t r0, int64_t r1,
                           const ActivationBuffer& act, float* y) {
  matvec_dense16(order, type, w, n, r0, r1, act, y);
}

namespace detail {

const QuantKernels& avx512_kernels() {
  static const QuantKernels k = [] {
    QuantKernels set = avx2_kernels();
    set.vec_dot = avx512_vec_dot;
    set.matvec = avx512_matvec;
    set.matvec_packed = avx512_matvec_packed;
    return set;
  }();
  return k;
}

}  // namespace detail

}  // namespace kakeya::engine
