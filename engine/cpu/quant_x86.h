#pragma once
// x86 helpers of the lane-exact kernels (quant_lanes.h) shared by the *_avx2.cpp and
// *_avx512.cpp kernel files. Everything here has internal linkage (an anonymous namespace), so
// each file keeps the copy compiled with its own -m flags: an inline function with external
// linkage could be merged by the linker into the AVX-512 copy and then run on AVX2-only CPUs.
// REQUIRES: compiled with at least -mavx2 -mfma -mf16c.
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "engine/cpu/quant.h"

namespace kakeya::engine {
namespace {

inline float x86_h2f(uint16_t h) { return _cvtsh_ss(h); }

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

// Exact int32 lanes of unsigned (0..127) x signed bytes: lane k = Σ of bytes 4k..4k+3.
inline __m256i x86_lanes_u8s8(__m256i u, __m256i s) {
  return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1));
}

// The same for signed x signed bytes (|x| <= 127): the sign of x moved onto y.
inline __m256i x86_lanes_s8s8(__m256i x, __m256i y) {
  return x86_lanes_u8s8(_mm256_sign_epi8(x, x), _mm256_sign_epi8(y, x));
}

// 32 IQ4_NL codebook values of a 16-byte nibble array (element order as x86_nibbles32).
inline __m256i x86_iq4nl_values32(const uint8_t* qs) {
  const __m256i book = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kIQ4NLValues)));
  return _mm256_shuffle_epi8(book, x86_nibbles32(qs));
}

// acc = fma(scale, float(lanes), acc), the per-block step of every lane-exact kernel.
inline __m256 x86_fma_lanes(float scale, __m256i lanes, __m256 acc) {
  return _mm256_fmadd_ps(_mm256_set1_ps(scale), _mm256_cvtepi32_ps(lanes), acc);
}

}  // namespace
}  // namespace kakeya::engine
