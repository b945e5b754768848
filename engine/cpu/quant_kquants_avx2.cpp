// AVX2 + FMA + F16C dot products of Q2_K, Q3_K, Q5_K and IQ4_XS against Q8_K activations;
// compiled with -mavx2 -mfma -mf16c and entered only through detail::kquants_avx2() after
// cpu_features().can_run_avx2(). Per super-block the exact int32 lanes come from maddubs (quants
// x activations, int16 pairs) and madd (x the sub-block scale) and accumulate as
// acc = fma(scale, lanes, acc): the rounding of quant_lanes.h, bit-identical to the portable
// kernels (quant_kquants.cpp), whose dequantization this set shares.

#include <cmath>

#include "engine/cpu/quant_internal.h"
#include "engine/cpu/quant_x86.h"

#if defined(__clang__)
#pragma clang fp contract(off)
#endif

namespace kakeya::engine {
namespace {

inline __m256i load256(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }

// int16 scales for a 32-byte vector whose bytes 0..15 take scale `lo` and 16..31 scale `hi`.
inline __m256i scale_pair(int lo, int hi) {
  return _mm256_set_m128i(_mm_set1_epi16(static_cast<short>(hi)), _mm_set1_epi16(static_cast<short>(lo)));
}

// Q2_K / Q3_K share the layout of their 2-bit quants: vector l of half h holds elements
// 128h + 32l + b (bits 2l of qs[32h + b]), sub-blocks 8h + 2l (b < 16) and 8h + 2l + 1.

float dot_q2_k(const void* row, const void* act, int64_t n) {
  const auto* x = static_cast<const BlockQ2_K*>(row);
  const auto* y = static_cast<const BlockQ8_K*>(act);
  const __m256i m3 = _mm256_set1_epi8(3);
  __m256 acc = _mm256_setzero_ps();
  for (int64_t i = 0; i < n / 256; ++i) {
    const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x[i].scales));
    const __m256i mins = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(packed, 4), _mm_set1_epi8(0x0F)));
    const __m256i min_lanes = _mm256_madd_epi16(mins, load256(y[i].bsums));
    acc = x86_fma_lanes(-y[i].d * x86_h2f(x[i].dmin), min_lanes, acc);
    __m256i sumi = _mm256_setzero_si256();
    for (int h = 0; h < 2; ++h) {
      const __m256i bits = load256(x[i].qs + 32 * h);
      for (int l = 0; l < 4; ++l) {
        const __m256i q = _mm256_and_si256(_mm256_srli_epi16(bits, 2 * l), m3);
        const __m256i p16 = _mm256_maddubs_epi16(q, load256(y[i].qs + 128 * h + 32 * l));
        const int j = 8 * h + 2 * l;
        sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(p16, scale_pair(x[i].scales[j] & 0x0F, x[i].scales[j + 1] & 0x0F)));
      }
    }
    acc = x86_fma_lanes(y[i].d * x86_h2f(x[i].d), sumi, acc);
  }
  return x86_hsum_lanes(acc);
}

// Q3_K scale j (6 bits, minus 32): low 4 bits in the low (j < 8) or high nibble of scales[j % 8],
// high 2 bits at bits 2(j / 4) of scales[8 + j % 4].
inline int q3k_scale(const uint8_t* s, int j) {
  const int low = j < 8 ? s[j] & 0x0F : s[j - 8] >> 4;
  return (low | (((s[8 + j % 4] >> (2 * (j / 4))) & 3) << 4)) - 32;
}

float dot_q3_k(const void* row, const void* act, int64_t n) {
  const auto* x = static_cast<const BlockQ3_K*>(row);
  const auto* y = static_cast<const BlockQ8_K*>(act);
  const __m256i m3 = _mm256_set1_epi8(3);
  const __m256i four = _mm256_set1_epi8(4);
  __m256 acc = _mm256_setzero_ps();
  for (int64_t i = 0; i < n / 256; ++i) {
    const __m256i hmask = load256(x[i].hmask);
    __m256i sumi = _mm256_setzero_si256();
    for (int h = 0; h < 2; ++h) {
      const __m256i bits = load256(x[i].qs + 32 * h);
      for (int l = 0; l < 4; ++l) {
        const __m256i q = _mm256_and_si256(_mm256_srli_epi16(bits, 2 * l), m3);
        // 4 where the high bit (bit 4h + l of hmask[b]) is clear: the quant is q - 4 there.
        const __m256i bit = _mm256_set1_epi8(static_cast<char>(1 << (4 * h + l)));
        const __m256i sub = _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(hmask, bit), _mm256_setzero_si256()), four);
        const __m256i q8 = load256(y[i].qs + 128 * h + 32 * l);
        const __m256i p16 = _mm256_sub_epi16(_mm256_maddubs_epi16(q, q8), _mm256_maddubs_epi16(sub, q8));
        const int j = 8 * h + 2 * l;
        sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(p16, scale_pair(q3k_scale(x[i].scales, j), q3k_scale(x[i].scales, j + 1))));
      }
    }
    acc = x86_fma_lanes(y[i].d * x86_h2f(x[i].d), sumi, acc);
  }
  return x86_hsum_lanes(acc);
}

// Q5_K: vector 2p of super-block chunk p holds elements 64p + b (low nibbles of qs[32p + b], 5th
// bit 2p of qh[b]), vector 2p + 1 elements 64p + 32 + b (high nibbles, bit 2p + 1); sub-block j
// of 32 elements takes scale j. The mins go to one scalar per super-block.
float dot_q5_k(const void* row, const void* act, int64_t n) {
  const auto* x = static_cast<const BlockQ5_K*>(row);
  const auto* y = static_cast<const BlockQ8_K*>(act);
  const __m256i m4 = _mm256_set1_epi8(0x0F);
  const __m256i b5 = _mm256_set1_epi8(0x10);
  __m256 acc = _mm256_setzero_ps();
  float summs = 0.0f;
  for (int64_t i = 0; i < n / 256; ++i) {
    uint8_t sc[8], mn[8];
    for (int j = 0; j < 8; ++j) q4k_scale_min(j, x[i].scales, &sc[j], &mn[j]);
    int32_t mins = 0;
    for (int j = 0; j < 8; ++j) mins += mn[j] * (y[i].bsums[2 * j] + y[i].bsums[2 * j + 1]);
    summs = std::fma(-y[i].d * x86_h2f(x[i].dmin), static_cast<float>(mins), summs);
    const __m256i qh = load256(x[i].qh);
    __m256i sumi = _mm256_setzero_si256();
    for (int p = 0; p < 4; ++p) {
      const __m256i bits = load256(x[i].qs + 32 * p);
      for (int half = 0; half < 2; ++half) {
        const int j = 2 * p + half;
        const __m256i low = _mm256_and_si256(half == 0 ? bits : _mm256_srli_epi16(bits, 4), m4);
        const __m256i high = _mm256_and_si256(_mm256_slli_epi16(_mm256_srli_epi16(qh, j), 4), b5);
        const __m256i p16 = _mm256_maddubs_epi16(_mm256_or_si256(low, high), load256(y[i].qs + 32 * j));
        sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(p16, _mm256_set1_epi16(sc[j])));
      }
    }
    acc = x86_fma_lanes(y[i].d * x86_h2f(x[i].d), sumi, acc);
  }
  return x86_hsum_lanes(acc) + summs;
}

// IQ4_XS: sub-block j (32 elements: codebook values of the nibbles of qs[16j..16j + 15]) with the
// 6-bit scale j minus 32.
float dot_iq4_xs(const void* row, const void* act, int64_t n) {
  const auto* x = static_cast<const BlockIQ4_XS*>(row);
  const auto* y = static_cast<const BlockQ8_K*>(act);
  __m256 acc = _mm256_setzero_ps();
  for (int64_t i = 0; i < n / 256; ++i) {
    __m256i sumi = _mm256_setzero_si256();
    for (int j = 0; j < 8; ++j) {
      const int ls = (((x[i].scales_l[j / 2] >> (4 * (j % 2))) & 0x0F) | (((x[i].scales_h >> (2 * j)) & 3) << 4)) - 32;
      const __m256i v = x86_iq4nl_values32(x[i].qs + 16 * j);
      const __m256i q8 = load256(y[i].qs + 32 * j);
      const __m256i p16 = _mm256_maddubs_epi16(_mm256_sign_epi8(v, v), _mm256_sign_epi8(q8, v));
      sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(p16, _mm256_set1_epi16(static_cast<short>(ls))));
    }
    acc = x86_fma_lanes(x86_h2f(x[i].d) * y[i].d, sumi, acc);
  }
  return x86_hsum_lanes(acc);
}

detail::TypeKernels with_dot(GgmlType type, float (*dot)(const void*, const void*, int64_t)) {
  return detail::TypeKernels{detail::kquants_portable(type)->dequantize, dot};
}

}  // namespace

namespace detail {

const TypeKernels* kquants_avx2(GgmlType type) {
  static const TypeKernels q2_k = with_dot(GgmlType::Q2_K, dot_q2_k);
  static const TypeKernels q3_k = with_dot(GgmlType::Q3_K, dot_q3_k);
  static const TypeKernels q5_k = with_dot(GgmlType::Q5_K, dot_q5_k);
  static const TypeKernels iq4_xs = with_dot(GgmlType::IQ4_XS, dot_iq4_xs);
  switch (type) {
    case GgmlType::Q2_K: return &q2_k;
    case GgmlType::Q3_K: return &q3_k;
    case GgmlType::Q5_K: return &q5_k;
    case GgmlType::IQ4_XS: return &iq4_xs;
    default: return nullptr;
  }
}

}  // namespace detail
}  // namespace kakeya::engine
