#pragma once
// x86 kernels of the lane-exact types (quant_lanes.h): Q4_1, Q5_1 (against Q8_1), Q5_0, IQ4_NL
// (against Q8_0), Q2_K, Q3_K, Q5_K and IQ4_XS (against Q8_K). Included by quant_lanes_avx2.cpp
// (-mavx2 -mfma -mf16c) and quant_lanes_avx512.cpp (plus AVX-512 F/BW/VL/VNNI), which instantiate
// them: with VNNI the unsigned x signed byte lanes are one vpdpbusd instead of maddubs + madd,
// the integers are the same. Everything here has internal linkage (an anonymous namespace), so
// each file keeps the copy compiled with its own -m flags: an inline function with external
// linkage could be merged by the linker into the AVX-512 copy and run on AVX2-only CPUs.
//
// Each type is a kernel struct: W/A the weight and activation blocks, kBlock the elements per
// block, and State, one row's accumulation (step() per block in order, finish() for the row's
// value). lane_dot runs one row; lane_rows runs four rows at once (four independent fma chains,
// so the per-block fma latency is hidden, and each activation block is loaded once for the four)
// with exactly the arithmetic of lane_dot per row.
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "engine/cpu/quant.h"
#include "engine/cpu/quant_internal.h"

#if defined(__clang__)
#pragma clang fp contract(off)
#endif

namespace kakeya::engine {
namespace {

// ---- primitives ----

inline float x86_h2f(uint16_t h) { return _cvtsh_ss(h); }
inline __m256i x86_load(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }

// ggml hsum_float_8: (hi + lo) halves, then [0]+[2] and [1]+[3], then the two sums.
inline float x86_hsum_lanes(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_extractf128_ps(v, 1), _mm256_castps256_ps128(v));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

inline int32_t x86_hsum_i32(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_unpackhi_epi64(s, s));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
  return _mm_cvtsi128_si32(s);
}

// 32 nibbles of a 16-byte array as bytes 0..15: low nibbles (elements 0..15) in the low half,
// high nibbles (elements 16..31) in the high half.
inline __m256i x86_nibbles32(const uint8_t* qs) {
  const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
  const __m256i both = _mm256_set_m128i(_mm_srli_epi16(packed, 4), packed);
  return _mm256_and_si256(both, _mm256_set1_epi8(0x0F));
}

// Byte e = 0xFF where bit e of the 32-bit little-endian word at p is set, else 0.
inline __m256i x86_bits_to_bytes(const uint8_t* p) {
  uint32_t w;
  std::memcpy(&w, p, 4);
  // Byte e takes source byte e / 8 (the 128-bit halves see bytes 0, 1 and 2, 3 of the word).
  const __m256i spread = _mm256_shuffle_epi8(
      _mm256_set1_epi32(static_cast<int32_t>(w)),
      _mm256_setr_epi64x(0x0000000000000000, 0x0101010101010101, 0x0202020202020202, 0x0303030303030303));
  const __m256i bit = _mm256_set1_epi64x(static_cast<int64_t>(0x8040201008040201ull));
  return _mm256_cmpeq_epi8(_mm256_and_si256(spread, bit), bit);
}

// 32 IQ4_NL codebook values of a 16-byte nibble array (element order as x86_nibbles32).
inline __m256i x86_iq4nl_values32(const uint8_t* qs) {
  const __m256i book = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kIQ4NLValues)));
  return _mm256_shuffle_epi8(book, x86_nibbles32(qs));
}

// Exact int32 lanes of unsigned (0..127) x signed bytes: lane k = Σ of the products of bytes
// 4k..4k+3.
inline __m256i x86_lanes_u8s8(__m256i u, __m256i s) {
#if defined(__AVX512VNNI__) && defined(__AVX512VL__)
  return _mm256_dpbusd_epi32(_mm256_setzero_si256(), u, s);
#else
  return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1));
#endif
}

// The same for signed x signed bytes (|x| <= 127): the sign of x moved onto y.
inline __m256i x86_lanes_s8s8(__m256i x, __m256i y) {
  return x86_lanes_u8s8(_mm256_sign_epi8(x, x), _mm256_sign_epi8(y, x));
}

// int32 lanes of unsigned (0..127) x signed bytes, each pair sum (int16, exact for these ranges)
// times the int16 scale of its half: bytes 0..15 take `scales` lane 0..7, 16..31 lane 8..15.
inline __m256i x86_scaled_lanes(__m256i u, __m256i s, __m256i scales) {
  return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), scales);
}

// Q4_K/Q5_K 6-bit scale and min of sub-block j (quant.h q4k_scale_min, repeated here so that no
// inline function with external linkage is compiled with this file's flags).
inline void x86_scale_min_k4(int j, const uint8_t* q, uint8_t* sc, uint8_t* m) {
  if (j < 4) {
    *sc = q[j] & 63;
    *m = q[j + 4] & 63;
  } else {
    *sc = static_cast<uint8_t>((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
    *m = static_cast<uint8_t>((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
  }
}

// acc = fma(scale, float(lanes), acc), the per-block step of every lane-exact kernel.
inline __m256 x86_fma_lanes(float scale, __m256i lanes, __m256 acc) {
  return _mm256_fmadd_ps(_mm256_set1_ps(scale), _mm256_cvtepi32_ps(lanes), acc);
}

// int16 scales for a 32-byte vector whose bytes 0..15 take scale `lo` and 16..31 scale `hi`.
inline __m256i x86_scale_pair(int lo, int hi) {
  return _mm256_set_m128i(_mm_set1_epi16(static_cast<short>(hi)), _mm_set1_epi16(static_cast<short>(lo)));
}

// ---- 32-element blocks ----

struct KQ5_0 {
  using W = BlockQ5_0;
  using A = BlockQ8_0;
  static constexpr GgmlType kType = GgmlType::Q5_0;
  static constexpr int64_t kBlock = 32;
  // q5 - 16 as signed bytes: the nibble, with 0xF0 (-16) or-ed in where the 5th bit is clear.
  static __m256i lanes(const W& x, const A& y) {
    const __m256i q = _mm256_or_si256(x86_nibbles32(x.qs),
                                      _mm256_andnot_si256(x86_bits_to_bytes(x.qh), _mm256_set1_epi8(static_cast<char>(0xF0))));
    return x86_lanes_s8s8(q, x86_load(y.qs));
  }
  struct State {
    __m256 acc = _mm256_setzero_ps();
    explicit State(int64_t) {}
    void step(const W& x, const A& y, int64_t) { acc = x86_fma_lanes(x86_h2f(x.d) * x86_h2f(y.d), lanes(x, y), acc); }
    float finish() const { return x86_hsum_lanes(acc); }
  };
};

// Even and odd blocks in two accumulators; an odd last block is added by one scalar fma of its
// whole integer sum (ggml_vec_dot_iq4_nl_q8_0).
struct KIQ4_NL {
  using W = BlockIQ4_NL;
  using A = BlockQ8_0;
  static constexpr GgmlType kType = GgmlType::IQ4_NL;
  static constexpr int64_t kBlock = 32;
  struct State {
    __m256 even = _mm256_setzero_ps(), odd = _mm256_setzero_ps();
    int64_t tail;  // index of a last block outside the pairs, or -1
    float tail_scale = 0.0f;
    int32_t tail_sum = 0;
    explicit State(int64_t nb) : tail(nb % 2 == 1 ? nb - 1 : -1) {}
    void step(const W& x, const A& y, int64_t i) {
      const __m256i l = x86_lanes_s8s8(x86_iq4nl_values32(x.qs), x86_load(y.qs));
      const float d = x86_h2f(x.d) * x86_h2f(y.d);
      if (i == tail) {
        tail_scale = d;
        tail_sum = x86_hsum_i32(l);
      } else if (i % 2 == 0) {
        even = x86_fma_lanes(d, l, even);
      } else {
        odd = x86_fma_lanes(d, l, odd);
      }
    }
    float finish() const {
      const float s = x86_hsum_lanes(_mm256_add_ps(even, odd));
      return tail < 0 ? s : std::fma(tail_scale, static_cast<float>(tail_sum), s);
    }
  };
};

// Q4_1 / Q5_1: unsigned quants, and the min term Σ fp16(w.m)·fp16(a.s) by one scalar fma per
// block, added after the lanes' sum.
template <typename Block, GgmlType T>
struct KAffine {
  using W = Block;
  using A = BlockQ8_1;
  static constexpr GgmlType kType = T;
  static constexpr int64_t kBlock = 32;
  static __m256i quants(const BlockQ4_1& x) { return x86_nibbles32(x.qs); }
  static __m256i quants(const BlockQ5_1& x) {
    return _mm256_or_si256(x86_nibbles32(x.qs), _mm256_and_si256(x86_bits_to_bytes(x.qh), _mm256_set1_epi8(0x10)));
  }
  struct State {
    __m256 acc = _mm256_setzero_ps();
    float summs = 0.0f;
    explicit State(int64_t) {}
    void step(const W& x, const A& y, int64_t) {
      summs = std::fma(x86_h2f(x.m), x86_h2f(y.s), summs);
      acc = x86_fma_lanes(x86_h2f(x.d) * x86_h2f(y.d), x86_lanes_u8s8(quants(x), x86_load(y.qs)), acc);
    }
    float finish() const { return x86_hsum_lanes(acc) + summs; }
  };
};
using KQ4_1 = KAffine<BlockQ4_1, GgmlType::Q4_1>;
using KQ5_1 = KAffine<BlockQ5_1, GgmlType::Q5_1>;

// ---- super-blocks of 256 against Q8_K ----

// Q2_K / Q3_K: vector l of half h holds elements 128h + 32l + b (bits 2l of qs[32h + b]) with the
// scales of sub-blocks 8h + 2l (b < 16) and 8h + 2l + 1.
// Shuffle controls picking, for vector l, int16 scale 2l of a 128-bit half in the low half and
// 2l + 1 in the high half (the 8 scales of half h broadcast to both halves first).
struct PairShuffles {
  alignas(32) int8_t bytes[4][32];
  constexpr PairShuffles() : bytes{} {
    for (int l = 0; l < 4; ++l)
      for (int b = 0; b < 32; ++b) bytes[l][b] = static_cast<int8_t>(4 * l + (b < 16 ? 0 : 2) + (b % 2));
  }
};
constexpr PairShuffles kPairShuffles;

// Σ over the 8 vectors of a super-block of scale x (unsigned 2-bit quants - sub) x q8, where
// scales16 holds the 16 sub-block scales as int16 and sub(h, l) the bytes subtracted from the
// quants (Q3_K's missing high bit, 0 for Q2_K).
template <typename Sub>
inline __m256i x86_two_bit_lanes(const uint8_t* qs, const int8_t* q8, __m256i scales16, Sub sub) {
  const __m256i m3 = _mm256_set1_epi8(3);
  __m256i sumi = _mm256_setzero_si256();
  const __m256i halves[2] = {_mm256_permute4x64_epi64(scales16, 0x44), _mm256_permute4x64_epi64(scales16, 0xEE)};
  for (int h = 0; h < 2; ++h) {
    const __m256i bits = x86_load(qs + 32 * h);
    const __m256i half = halves[h];
    for (int l = 0; l < 4; ++l) {
      const __m256i q = _mm256_and_si256(_mm256_srli_epi16(bits, 2 * l), m3);
      const __m256i y = x86_load(q8 + 128 * h + 32 * l);
      __m256i p16 = _mm256_maddubs_epi16(q, y);
      if constexpr (!std::is_same_v<Sub, std::nullptr_t>) p16 = _mm256_sub_epi16(p16, _mm256_maddubs_epi16(sub(h, l), y));
      sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(p16, _mm256_shuffle_epi8(half, x86_load(kPairShuffles.bytes[l]))));
    }
  }
  return sumi;
}

// Q2_K: per super-block, first the mins (lane k: min[2k]·bsums[2k] + min[2k+1]·bsums[2k+1],
// times -a.d·fp16(w.dmin)), then the scaled quants (times a.d·fp16(w.d)), into the same lanes.
struct KQ2_K {
  using W = BlockQ2_K;
  using A = BlockQ8_K;
  static constexpr GgmlType kType = GgmlType::Q2_K;
  static constexpr int64_t kBlock = 256;
  struct State {
    __m256 acc = _mm256_setzero_ps();
    explicit State(int64_t) {}
    void step(const W& x, const A& y, int64_t) {
      const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x.scales));
      const __m128i low4 = _mm_set1_epi8(0x0F);
      const __m256i mins = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(packed, 4), low4));
      acc = x86_fma_lanes(-y.d * x86_h2f(x.dmin), _mm256_madd_epi16(mins, x86_load(y.bsums)), acc);
      const __m256i scales = _mm256_cvtepu8_epi16(_mm_and_si128(packed, low4));
      acc = x86_fma_lanes(y.d * x86_h2f(x.d), x86_two_bit_lanes(x.qs, y.qs, scales, nullptr), acc);
    }
    float finish() const { return x86_hsum_lanes(acc); }
  };
};

struct KQ3_K {
  using W = BlockQ3_K;
  using A = BlockQ8_K;
  static constexpr GgmlType kType = GgmlType::Q3_K;
  static constexpr int64_t kBlock = 256;
  // The 16 6-bit scales minus 32 as int16: scale j has its low 4 bits in the low (j < 8) or high
  // nibble of byte j % 8, its high 2 bits at bits 2(j / 4) of byte 8 + j % 4.
  static __m256i scales(const uint8_t* s) {
    uint32_t w[3];
    std::memcpy(w, s, 12);
    constexpr uint32_t k4 = 0x0F0F0F0Fu, k2 = 0x03030303u;
    const __m128i bytes = _mm_setr_epi32(static_cast<int>((w[0] & k4) | ((w[2] & k2) << 4)),
                                         static_cast<int>((w[1] & k4) | (((w[2] >> 2) & k2) << 4)),
                                         static_cast<int>(((w[0] >> 4) & k4) | (((w[2] >> 4) & k2) << 4)),
                                         static_cast<int>(((w[1] >> 4) & k4) | (((w[2] >> 6) & k2) << 4)));
    return _mm256_sub_epi16(_mm256_cvtepu8_epi16(bytes), _mm256_set1_epi16(32));
  }
  struct State {
    __m256 acc = _mm256_setzero_ps();
    explicit State(int64_t) {}
    void step(const W& x, const A& y, int64_t) {
      const __m256i hmask = x86_load(x.hmask);
      // 4 where the high bit of element 128h + 32l + b (bit 4h + l of hmask[b]) is clear.
      auto sub = [&](int h, int l) {
        const __m256i bit = _mm256_set1_epi8(static_cast<char>(1 << (4 * h + l)));
        return _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(hmask, bit), _mm256_setzero_si256()), _mm256_set1_epi8(4));
      };
      acc = x86_fma_lanes(y.d * x86_h2f(x.d), x86_two_bit_lanes(x.qs, y.qs, scales(x.scales), sub), acc);
    }
    float finish() const { return x86_hsum_lanes(acc); }
  };
};

// Q5_K: vector j (sub-block j of 32) holds elements 32j + b: nibble (j % 2) of qs[32(j / 2) + b],
// 5th bit j of qh[b]. The mins go to one scalar per super-block, added after the lanes' sum.
struct KQ5_K {
  using W = BlockQ5_K;
  using A = BlockQ8_K;
  static constexpr GgmlType kType = GgmlType::Q5_K;
  static constexpr int64_t kBlock = 256;
  struct State {
    __m256 acc = _mm256_setzero_ps();
    float summs = 0.0f;
    explicit State(int64_t) {}
    void step(const W& x, const A& y, int64_t) {
      uint8_t sc[8], mn[8];
      for (int j = 0; j < 8; ++j) x86_scale_min_k4(j, x.scales, &sc[j], &mn[j]);
      int32_t mins = 0;
      for (int j = 0; j < 8; ++j) mins += mn[j] * (y.bsums[2 * j] + y.bsums[2 * j + 1]);
      summs = std::fma(-y.d * x86_h2f(x.dmin), static_cast<float>(mins), summs);
      const __m256i m4 = _mm256_set1_epi8(0x0F), b5 = _mm256_set1_epi8(0x10);
      const __m256i qh = x86_load(x.qh);
      __m256i sumi = _mm256_setzero_si256();
      for (int p = 0; p < 4; ++p) {
        const __m256i bits = x86_load(x.qs + 32 * p);
        for (int half = 0; half < 2; ++half) {
          const int j = 2 * p + half;
          const __m256i low = _mm256_and_si256(half == 0 ? bits : _mm256_srli_epi16(bits, 4), m4);
          const __m256i high = _mm256_and_si256(_mm256_slli_epi16(_mm256_srli_epi16(qh, j), 4), b5);
          sumi = _mm256_add_epi32(sumi, x86_scaled_lanes(_mm256_or_si256(low, high), x86_load(y.qs + 32 * j),
                                                         _mm256_set1_epi16(sc[j])));
        }
      }
      acc = x86_fma_lanes(y.d * x86_h2f(x.d), sumi, acc);
    }
    float finish() const { return x86_hsum_lanes(acc) + summs; }
  };
};

// IQ4_XS: sub-block j (32 elements: codebook values of the nibbles of qs[16j..16j + 15]) with its
// 6-bit scale minus 32.
struct KIQ4_XS {
  using W = BlockIQ4_XS;
  using A = BlockQ8_K;
  static constexpr GgmlType kType = GgmlType::IQ4_XS;
  static constexpr int64_t kBlock = 256;
  struct State {
    __m256 acc = _mm256_setzero_ps();
    explicit State(int64_t) {}
    void step(const W& x, const A& y, int64_t) {
      __m256i sumi = _mm256_setzero_si256();
      for (int j = 0; j < 8; ++j) {
        const int ls = (((x.scales_l[j / 2] >> (4 * (j % 2))) & 0x0F) | (((x.scales_h >> (2 * j)) & 3) << 4)) - 32;
        const __m256i v = x86_iq4nl_values32(x.qs + 16 * j);
        const __m256i q8 = x86_load(y.qs + 32 * j);
        sumi = _mm256_add_epi32(sumi, x86_scaled_lanes(_mm256_sign_epi8(v, v), _mm256_sign_epi8(q8, v),
                                                       _mm256_set1_epi16(static_cast<short>(ls))));
      }
      acc = x86_fma_lanes(x86_h2f(x.d) * y.d, sumi, acc);
    }
    float finish() const { return x86_hsum_lanes(acc); }
  };
};

// ---- rows ----

template <class K>
float lane_dot(const void* row, const void* act, int64_t n) {
  const auto* x = static_cast<const typename K::W*>(row);
  const auto* y = static_cast<const typename K::A*>(act);
  const int64_t nb = n / K::kBlock;
  typename K::State s(nb);
  for (int64_t i = 0; i < nb; ++i) s.step(x[i], y[i], i);
  return s.finish();
}

// Rows [r0, r1), four at a time (a remainder row by row), each exactly as lane_dot; the next four
// rows are prefetched block by block.
template <class K>
void lane_rows(const void* w, int64_t n, int64_t r0, int64_t r1, const ActivationBuffer& act, float* out) {
  using W = typename K::W;
  const size_t stride = ggml_row_bytes(K::kType, n);
  const auto* base = static_cast<const uint8_t*>(w);
  const auto* y = reinterpret_cast<const typename K::A*>(act.bytes.data());
  const int64_t nb = n / K::kBlock;
  int64_t r = r0;
  for (; r + 4 <= r1; r += 4) {
    const W* x[4];
    for (int k = 0; k < 4; ++k) x[k] = reinterpret_cast<const W*>(base + static_cast<size_t>(r + k) * stride);
    const uint8_t* next = base + static_cast<size_t>(r + 4) * stride;
    typename K::State s0(nb), s1(nb), s2(nb), s3(nb);
    for (int64_t i = 0; i < nb; ++i) {
      for (int k = 0; k < 4; ++k)
        _mm_prefetch(reinterpret_cast<const char*>(next + static_cast<size_t>(k) * stride + static_cast<size_t>(i) * sizeof(W)),
                     _MM_HINT_T1);
      s0.step(x[0][i], y[i], i);
      s1.step(x[1][i], y[i], i);
      s2.step(x[2][i], y[i], i);
      s3.step(x[3][i], y[i], i);
    }
    out[r - r0] = s0.finish();
    out[r - r0 + 1] = s1.finish();
    out[r - r0 + 2] = s2.finish();
    out[r - r0 + 3] = s3.finish();
  }
  for (; r < r1; ++r) out[r - r0] = lane_dot<K>(base + static_cast<size_t>(r) * stride, y, n);
}

template <class K>
detail::TypeKernels x86_type_kernels(const detail::TypeKernels* portable) {
  return detail::TypeKernels{portable->dequantize, lane_dot<K>, lane_rows<K>};
}

// The kernels of `type` in this file's instruction set, or nullptr.
inline const detail::TypeKernels* x86_lane_kernels(GgmlType type) {
  static const detail::TypeKernels q4_1 = x86_type_kernels<KQ4_1>(detail::blocks32_portable(GgmlType::Q4_1));
  static const detail::TypeKernels q5_0 = x86_type_kernels<KQ5_0>(detail::blocks32_portable(GgmlType::Q5_0));
  static const detail::TypeKernels q5_1 = x86_type_kernels<KQ5_1>(detail::blocks32_portable(GgmlType::Q5_1));
  static const detail::TypeKernels iq4_nl = x86_type_kernels<KIQ4_NL>(detail::blocks32_portable(GgmlType::IQ4_NL));
  static const detail::TypeKernels q2_k = x86_type_kernels<KQ2_K>(detail::kquants_portable(GgmlType::Q2_K));
  static const detail::TypeKernels q3_k = x86_type_kernels<KQ3_K>(detail::kquants_portable(GgmlType::Q3_K));
  static const detail::TypeKernels q5_k = x86_type_kernels<KQ5_K>(detail::kquants_portable(GgmlType::Q5_K));
  static const detail::TypeKernels iq4_xs = x86_type_kernels<KIQ4_XS>(detail::kquants_portable(GgmlType::IQ4_XS));
  switch (type) {
    case GgmlType::Q4_1: return &q4_1;
    case GgmlType::Q5_0: return &q5_0;
    case GgmlType::Q5_1: return &q5_1;
    case GgmlType::IQ4_NL: return &iq4_nl;
    case GgmlType::Q2_K: return &q2_k;
    case GgmlType::Q3_K: return &q3_k;
    case GgmlType::Q5_K: return &q5_k;
    case GgmlType::IQ4_XS: return &iq4_xs;
    default: return nullptr;
  }
}

}  // namespace
}  // namespace kakeya::engine
