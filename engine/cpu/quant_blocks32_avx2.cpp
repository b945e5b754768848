// AVX2 + FMA + F16C dot products of Q4_1, Q5_1 (against Q8_1), Q5_0 and IQ4_NL (against Q8_0);
// compiled with -mavx2 -mfma -mf16c and entered only through detail::blocks32_avx2() after
// cpu_features().can_run_avx2(). Each block's exact int32 lanes come from maddubs + madd and
// accumulate as acc = fma(scale, lanes, acc): the rounding of quant_lanes.h, bit-identical to the
// portable kernels (quant_blocks32.cpp), whose dequantization this set shares.

#include <cmath>

#include "engine/cpu/quant_internal.h"
#include "engine/cpu/quant_x86.h"

#if defined(__clang__)
#pragma clang fp contract(off)
#endif

namespace kakeya::engine {
namespace {

// Signed quants of a block as bytes, in element order.
inline __m256i quants(const BlockQ5_0& b) {
  // q5 - 16: the nibble, with 0xF0 (-16) or-ed in where the 5th bit is clear.
  return _mm256_or_si256(x86_nibbles32(b.qs), _mm256_andnot_si256(x86_bits_to_bytes(b.qh), _mm256_set1_epi8(static_cast<char>(0xF0))));
}
inline __m256i quants(const BlockIQ4_NL& b) { return x86_iq4nl_values32(b.qs); }
// Unsigned quants (the min is applied through the activations' block sum).
inline __m256i quants(const BlockQ4_1& b) { return x86_nibbles32(b.qs); }
inline __m256i quants(const BlockQ5_1& b) {
  return _mm256_or_si256(x86_nibbles32(b.qs), _mm256_and_si256(x86_bits_to_bytes(b.qh), _mm256_set1_epi8(0x10)));
}

inline __m256i block_lanes(const BlockQ5_0& x, const BlockQ8_0& y) {
  return x86_lanes_s8s8(quants(x), _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y.qs)));
}
inline __m256i block_lanes(const BlockIQ4_NL& x, const BlockQ8_0& y) {
  return x86_lanes_s8s8(quants(x), _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y.qs)));
}

float dot_q5_0(const void* row, const void* act, int64_t n) {
  const auto* x = static_cast<const BlockQ5_0*>(row);
  const auto* y = static_cast<const BlockQ8_0*>(act);
  __m256 acc = _mm256_setzero_ps();
  for (int64_t i = 0; i < n / 32; ++i) acc = x86_fma_lanes(x86_h2f(x[i].d) * x86_h2f(y[i].d), block_lanes(x[i], y[i]), acc);
  return x86_hsum_lanes(acc);
}

// Even and odd blocks in two accumulators, an odd last block by one scalar fma (quant_blocks32.cpp).
float dot_iq4_nl(const void* row, const void* act, int64_t n) {
  const auto* x = static_cast<const BlockIQ4_NL*>(row);
  const auto* y = static_cast<const BlockQ8_0*>(act);
  const int64_t nb = n / 32;
  __m256 even = _mm256_setzero_ps(), odd = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 1 < nb; i += 2) {
    even = x86_fma_lanes(x86_h2f(x[i].d) * x86_h2f(y[i].d), block_lanes(x[i], y[i]), even);
    odd = x86_fma_lanes(x86_h2f(x[i + 1].d) * x86_h2f(y[i + 1].d), block_lanes(x[i + 1], y[i + 1]), odd);
  }
  float s = x86_hsum_lanes(_mm256_add_ps(even, odd));
  if (i < nb) s = std::fma(x86_h2f(x[i].d) * x86_h2f(y[i].d), static_cast<float>(x86_hsum_i32(block_lanes(x[i], y[i]))), s);
  return s;
}

template <typename B>
float dot_q8_1(const void* row, const void* act, int64_t n) {
  const auto* x = static_cast<const B*>(row);
  const auto* y = static_cast<const BlockQ8_1*>(act);
  __m256 acc = _mm256_setzero_ps();
  float summs = 0.0f;
  for (int64_t i = 0; i < n / 32; ++i) {
    summs = std::fma(x86_h2f(x[i].m), x86_h2f(y[i].s), summs);
    const __m256i qy = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y[i].qs));
    acc = x86_fma_lanes(x86_h2f(x[i].d) * x86_h2f(y[i].d), x86_lanes_u8s8(quants(x[i]), qy), acc);
  }
  return x86_hsum_lanes(acc) + summs;
}

detail::TypeKernels with_dot(GgmlType type, float (*dot)(const void*, const void*, int64_t)) {
  return detail::TypeKernels{detail::blocks32_portable(type)->dequantize, dot};
}

}  // namespace

namespace detail {

const TypeKernels* blocks32_avx2(GgmlType type) {
  static const TypeKernels q4_1 = with_dot(GgmlType::Q4_1, dot_q8_1<BlockQ4_1>);
  static const TypeKernels q5_0 = with_dot(GgmlType::Q5_0, dot_q5_0);
  static const TypeKernels q5_1 = with_dot(GgmlType::Q5_1, dot_q8_1<BlockQ5_1>);
  static const TypeKernels iq4_nl = with_dot(GgmlType::IQ4_NL, dot_iq4_nl);
  switch (type) {
    case GgmlType::Q4_1: return &q4_1;
    case GgmlType::Q5_0: return &q5_0;
    case GgmlType::Q5_1: return &q5_1;
    case GgmlType::IQ4_NL: return &iq4_nl;
    default: return nullptr;
  }
}

}  // namespace detail
}  // namespace kakeya::engine
