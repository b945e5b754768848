// AVX2 + FMA + F16C kernels (this file is compiled with -mavx2 -mfma -mf16c; it is only entered
// through detail::avx2_kernels() after cpu_features().can_run_avx2()).
//
// Agreement with the portable kernels:
//   Q4_K, Q6_K: bit-identical (exact integer super-block sums, the same scalar f32 combination).
//   Q4_0: bit-identical (one fma chain per row, ggml's repacked x86 Q4_0 rounding).
//   Q8_0, F32, F16, BF16: same products, f32 accumulated in 8 lanes (as ggml's AVX2 path),
//   so results differ from the portable order only by float rounding.
//   Activation conversion and dequantization: bit-identical.

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <limits>
#include <vector>

#include "engine/cpu/cpu_features.h"
#include "engine/cpu/quant.h"
#include "engine/cpu/quant_internal.h"

#if defined(__clang__)
#pragma clang fp contract(off)
#endif

namespace kakeya::engine {

namespace {

inline float h2f(uint16_t h) { return _cvtsh_ss(h); }

inline float hsum_ps(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

inline int32_t hsum_epi32(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_unpackhi_epi64(s, s));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
  return _mm_cvtsi128_si32(s);
}

// 32 signed int8 pairs -> 8 int32 lane sums (exact; |x| <= 128, |y| <= 127).
inline __m256i dot_i8_i32(__m256i x, __m256i y) {
  const __m256i ax = _mm256_sign_epi8(x, x);
  const __m256i sy = _mm256_sign_epi8(y, x);
  const __m256i p16 = _mm256_maddubs_epi16(ax, sy);
  return _mm256_madd_epi16(p16, _mm256_set1_epi16(1));
}

// ---- f32 / f16 / bf16 ----

inline __m256 load_f16(const uint16_t* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}
inline __m256 load_f32(const float* p) { return _mm256_loadu_ps(p); }

// dot_dense in three parts, so that dot_f32_rows can sum eight rows' lanes at once with the same
// adds: four 8-lane f32 FMA accumulators over 32-element steps, 8-element steps into the first,
// the accumulators' sum (acc0 + acc1) + (acc2 + acc3) (dot_lanes); its horizontal sum (hsum_ps);
// the last n % 8 elements scalar (dot_tail).
template <typename T, __m256 (*Load)(const T*)>
__attribute__((always_inline)) inline __m256 dot_lanes(const T* w, const T* a, int64_t n) {
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps(), acc2 = _mm256_setzero_ps(),
         acc3 = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    acc0 = _mm256_fmadd_ps(Load(w + i), Load(a + i), acc0);
    acc1 = _mm256_fmadd_ps(Load(w + i + 8), Load(a + i + 8), acc1);
    acc2 = _mm256_fmadd_ps(Load(w + i + 16), Load(a + i + 16), acc2);
    acc3 = _mm256_fmadd_ps(Load(w + i + 24), Load(a + i + 24), acc3);
  }
  for (; i + 8 <= n; i += 8) acc0 = _mm256_fmadd_ps(Load(w + i), Load(a + i), acc0);
  return _mm256_add_ps(_mm256_add_ps(acc0, acc1), _mm256_add_ps(acc2, acc3));
}

template <typename T, float (*Scalar)(T)>
float dot_tail(float s, const T* w, const T* a, int64_t n) {
  for (int64_t i = n / 8 * 8; i < n; ++i) s += Scalar(w[i]) * Scalar(a[i]);
  return s;
}

template <typename T, __m256 (*Load)(const T*), float (*Scalar)(T)>
float dot_dense(const T* w, const T* a, int64_t n) {
  return dot_tail<T, Scalar>(hsum_ps(dot_lanes<T, Load>(w, a, n)), w, a, n);
}

// out[r] = hsum_ps(v[r]) for r < 8, each by the same three adds (the two 128-bit halves lane by
// lane, then lanes 0 + 2 and 1 + 3, then those two), eight rows per instruction: rows are paired
// into the halves of a register and shuffled so that each add takes the same lanes hsum_ps does.
inline void hsum8_ps(const __m256 v[8], float* out) {
  __m256 half[4];  // [lo + hi of row 2p | of row 2p + 1]
  for (int p = 0; p < 4; ++p)
    half[p] = _mm256_add_ps(_mm256_permute2f128_ps(v[2 * p], v[2 * p + 1], 0x20),
                            _mm256_permute2f128_ps(v[2 * p], v[2 * p + 1], 0x31));
  __m256 pair[2];  // lanes 0 + 2, 1 + 3: [row 4p (2), row 4p + 2 (2) | row 4p + 1 (2), row 4p + 3 (2)]
  for (int p = 0; p < 2; ++p)
    pair[p] = _mm256_add_ps(_mm256_shuffle_ps(half[2 * p], half[2 * p + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                            _mm256_shuffle_ps(half[2 * p], half[2 * p + 1], _MM_SHUFFLE(3, 2, 3, 2)));
  // [rows 0, 2, 4, 6 | rows 1, 3, 5, 7], then in row order.
  const __m256 sum = _mm256_add_ps(_mm256_shuffle_ps(pair[0], pair[1], _MM_SHUFFLE(2, 0, 2, 0)),
                                   _mm256_shuffle_ps(pair[0], pair[1], _MM_SHUFFLE(3, 1, 3, 1)));
  _mm256_storeu_ps(out, _mm256_permutevar8x32_ps(sum, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)));
}

inline float id_f32(float x) { return x; }
inline float bf16_scalar(uint16_t h) { return bf16_to_fp32(h); }

// BF16 rows against BF16 activations, both widened 16 at a time by interleaving them with zero
// halves (a bf16 is the high half of its f32): _mm256_unpacklo_epi16 gives elements 0-3 and 8-11
// of the 16, unpackhi 4-7 and 12-15, two shuffles per operand where cvtepu16 + shift per 8 take
// four. Four 8-lane f32 FMA accumulators over 32-element steps (each 16 as lo then hi), a
// 16-element step after them, the rest scalar, then the accumulators' sum as dot_dense. One
// thread on the 2-core AMD EPYC VM, 256 rows × 2048 from cache: 29 -> 52 GB/s. (Widening the
// activations to f32 once per call instead read 15 GB/s from memory on 5632-column rows, whose
// 22 KiB of f32 activations leave L1 to the weights, against 31 for this.)
inline __m256 bf16_lo(__m256i v) { return _mm256_castsi256_ps(_mm256_unpacklo_epi16(_mm256_setzero_si256(), v)); }
inline __m256 bf16_hi(__m256i v) { return _mm256_castsi256_ps(_mm256_unpackhi_epi16(_mm256_setzero_si256(), v)); }
inline __m256i load_u16x16(const uint16_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }

float dot_bf16(const uint16_t* w, const uint16_t* a, int64_t n) {
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps(), acc2 = _mm256_setzero_ps(),
         acc3 = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m256i w0 = load_u16x16(w + i), w1 = load_u16x16(w + i + 16);
    const __m256i a0 = load_u16x16(a + i), a1 = load_u16x16(a + i + 16);
    acc0 = _mm256_fmadd_ps(bf16_lo(w0), bf16_lo(a0), acc0);
    acc1 = _mm256_fmadd_ps(bf16_hi(w0), bf16_hi(a0), acc1);
    acc2 = _mm256_fmadd_ps(bf16_lo(w1), bf16_lo(a1), acc2);
    acc3 = _mm256_fmadd_ps(bf16_hi(w1), bf16_hi(a1), acc3);
  }
  if (i + 16 <= n) {
    const __m256i w0 = load_u16x16(w + i), a0 = load_u16x16(a + i);
    acc0 = _mm256_fmadd_ps(bf16_lo(w0), bf16_lo(a0), acc0);
    acc1 = _mm256_fmadd_ps(bf16_hi(w0), bf16_hi(a0), acc1);
    i += 16;
  }
  float s = hsum_ps(_mm256_add_ps(_mm256_add_ps(acc0, acc1), _mm256_add_ps(acc2, acc3)));
  for (; i < n; ++i) s += bf16_scalar(w[i]) * bf16_scalar(a[i]);
  return s;
}

// ---- Q8_0 / Q4_0 against Q8_0 activations ----

float dot_q8_0(const BlockQ8_0* x, const BlockQ8_0* y, int64_t nb) {
  __m256 acc = _mm256_setzero_ps();
  for (int64_t i = 0; i < nb; ++i) {
    const __m256i qx = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[i].qs));
    const __m256i qy = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y[i].qs));
    const __m256 d = _mm256_set1_ps(h2f(x[i].d) * h2f(y[i].d));
    acc = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(dot_i8_i32(qx, qy)), acc);
  }
  return hsum_ps(acc);
}

// Q4_0: one fused multiply-add chain per output row over blocks, s = fma(sumi_b, dw·da, s), as
// ggml-cpu's repacked x86 Q4_0 kernels (q4_0_8x8_q8_0 gemv/gemm) round; see quant.cpp.
// The 8 int32 lanes of one block's exact integer dot product.
inline __m256i q4_0_block_lanes(const BlockQ4_0& x, __m256i qy) {
  const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x.qs));
  // low lane: low nibbles (elements 0..15); high lane: high nibbles (16..31).
  const __m256i both = _mm256_set_m128i(_mm_srli_epi16(packed, 4), packed);
  const __m256i qx = _mm256_sub_epi8(_mm256_and_si256(both, _mm256_set1_epi8(0x0F)), _mm256_set1_epi8(8));
  return dot_i8_i32(qx, qy);
}

float dot_q4_0(const BlockQ4_0* x, const BlockQ8_0* y, int64_t nb) {
  __m128 s = _mm_setzero_ps();
  for (int64_t i = 0; i < nb; ++i) {
    const __m256i qy = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y[i].qs));
    const float sumi = static_cast<float>(hsum_epi32(q4_0_block_lanes(x[i], qy)));
    s = _mm_fmadd_ss(_mm_set_ss(sumi), _mm_set_ss(h2f(x[i].d) * h2f(y[i].d)), s);
  }
  return _mm_cvtss_f32(s);
}

// Rows [r0, r1) of a Q4_0 matrix, eight rows at a time, each output lane its own row's fma chain
// (bit-identical to dot_q4_0 row by row). Per block, rows k and k+4 share one 256-bit vector
// (low half row k, high half row k+4) against the activation halves broadcast to both halves,
// and the exact integer sums are reduced in int16: with unsigned nibbles (0..15) a sum of 16
// products is at most 16·15·128 = 30720. The 8·Σqy correction for the nibble offset is the same
// for every row (8 · act.block_sums[b]) and subtracted after the reduction.

void rows_q4_0(const void* w, int64_t n, int64_t r0, int64_t r1, const ActivationBuffer& act, float* y) {
  const int64_t nb = n / 32;
  const size_t stride = ggml_row_bytes(GgmlType::Q4_0, n);
  const auto* base = static_cast<const uint8_t*>(w);
  const auto* a = reinterpret_cast<const BlockQ8_0*>(act.bytes.data());
  const __m256i low4 = _mm256_set1_epi8(0x0F);
  const __m256i ones16 = _mm256_set1_epi16(1);
  for (int64_t r = r0; r < r1; r += 8) {
    // A last group of fewer than 8 rows repeats its last row in the spare lanes (not stored).
    const int64_t live = std::min<int64_t>(8, r1 - r);
    const __m256i store_mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int32_t>(live)),
                                                  _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    const BlockQ4_0* x[8];
    for (int k = 0; k < 8; ++k) {
      const int64_t row = r + std::min<int64_t>(k, live - 1);
      x[k] = reinterpret_cast<const BlockQ4_0*>(base + static_cast<size_t>(row) * stride);
    }
    __m256 acc = _mm256_setzero_ps();
    // Rows are only ~1 KiB long, too short for the hardware prefetcher to get ahead of eight
    // interleaved row streams: prefetch the next group, spread over this loop
    // (8 rows of 18 bytes per block; three prefetches at most 64 bytes apart touch every line).
    // A prefetch never faults, so the rows past r1, or past the matrix, need no bounds check;
    // the ones past r1 are usually the caller's next tile or another thread's range.
    const uint8_t* pf = base + static_cast<size_t>(r + 8) * stride;
    for (int64_t b = 0; b < nb; ++b) {
      const uint8_t* p = pf + static_cast<size_t>(b) * (8 * sizeof(BlockQ4_0));
      _mm_prefetch(reinterpret_cast<const char*>(p), _MM_HINT_T0);
      _mm_prefetch(reinterpret_cast<const char*>(p + 64), _MM_HINT_T0);
      _mm_prefetch(reinterpret_cast<const char*>(p + 128), _MM_HINT_T0);
      const auto* qy = reinterpret_cast<const __m128i*>(a[b].qs);
      const __m256i qlo = _mm256_broadcastsi128_si256(_mm_loadu_si128(qy));
      const __m256i qhi = _mm256_broadcastsi128_si256(_mm_loadu_si128(qy + 1));
      // int16 lanes, each the sum of 4 nibble·qy products, of rows k (low half) and k + 4 (high half)
      auto pair = [&](int k) {
        const __m256i packed = _mm256_loadu2_m128i(reinterpret_cast<const __m128i*>(x[k + 4][b].qs),
                                                   reinterpret_cast<const __m128i*>(x[k][b].qs));
        const __m256i lo = _mm256_and_si256(packed, low4);
        const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(packed, 4), low4);
        return _mm256_add_epi16(_mm256_maddubs_epi16(lo, qlo), _mm256_maddubs_epi16(hi, qhi));
      };
      // int16 pairs per row (rows 0..3 in the low half, 4..7 in the high half) -> int32 rows 0..7
      const __m256i t = _mm256_hadd_epi16(_mm256_hadd_epi16(pair(0), pair(1)), _mm256_hadd_epi16(pair(2), pair(3)));
      const __m256i sumi =
          _mm256_sub_epi32(_mm256_madd_epi16(t, ones16), _mm256_set1_epi32(8 * act.block_sums[static_cast<size_t>(b)]));
      const __m256 dw = _mm256_cvtph_ps(_mm_setr_epi16(
          static_cast<short>(x[0][b].d), static_cast<short>(x[1][b].d), static_cast<short>(x[2][b].d),
          static_cast<short>(x[3][b].d), static_cast<short>(x[4][b].d), static_cast<short>(x[5][b].d),
          static_cast<short>(x[6][b].d), static_cast<short>(x[7][b].d)));
      acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sumi), _mm256_mul_ps(dw, _mm256_set1_ps(h2f(a[b].d))), acc);
    }
    _mm256_maskstore_ps(y + (r - r0), store_mask, acc);
  }
}

// Rows [r0, r1) of a Q8_0 matrix, four rows at a time: the activation block and its scale are
// loaded once for the four rows, and each row keeps dot_q8_0's own 8-lane accumulator and
// operation order, so the result is bit-identical to dot_q8_0 row by row.
void rows_q8_0(const void* w, int64_t n, int64_t r0, int64_t r1, const ActivationBuffer& act, float* y) {
  const int64_t nb = n / 32;
  const size_t stride = ggml_row_bytes(GgmlType::Q8_0, n);
  const auto* base = static_cast<const uint8_t*>(w);
  const auto* a = reinterpret_cast<const BlockQ8_0*>(act.bytes.data());
  for (int64_t r = r0; r < r1; r += 4) {
    // A last group of fewer than 4 rows repeats its last row in the spare slots (not stored).
    const int64_t live = std::min<int64_t>(4, r1 - r);
    const BlockQ8_0* x[4];
    for (int k = 0; k < 4; ++k) {
      const int64_t row = r + std::min<int64_t>(k, live - 1);
      x[k] = reinterpret_cast<const BlockQ8_0*>(base + static_cast<size_t>(row) * stride);
    }
    __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
    // Prefetch the next group spread over this loop, as in rows_q4_0 (4 rows of 34 bytes per block).
    const uint8_t* pf = base + static_cast<size_t>(r + 4) * stride;
    for (int64_t b = 0; b < nb; ++b) {
      const uint8_t* p = pf + static_cast<size_t>(b) * (4 * sizeof(BlockQ8_0));
      _mm_prefetch(reinterpret_cast<const char*>(p), _MM_HINT_T0);
      _mm_prefetch(reinterpret_cast<const char*>(p + 64), _MM_HINT_T0);
      _mm_prefetch(reinterpret_cast<const char*>(p + 128), _MM_HINT_T0);
      const __m256i qy = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a[b].qs));
      const float da = h2f(a[b].d);
      for (int k = 0; k < 4; ++k) {
        const __m256i qx = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[k][b].qs));
        const __m256 d = _mm256_set1_ps(h2f(x[k][b].d) * da);
        acc[k] = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(dot_i8_i32(qx, qy)), acc[k]);
      }
    }
    for (int k = 0; k < live; ++k) y[r - r0 + k] = hsum_ps(acc[k]);
  }
}

// ---- Packed (row-interleaved) Q4_0 / Q8_0 matrices (layout in quant.h) ----

inline int32_t load_i32(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// Stores the lanes of the 8 rows starting at row0 that fall in [r0, r1) to y[row - r0].
inline void store_rows8(__m256 v, int64_t row0, int64_t r0, int64_t r1, float* y) {
  if (row0 >= r0 && row0 + 8 <= r1) {
    _mm256_storeu_ps(y + (row0 - r0), v);
    return;
  }
  alignas(32) float tmp[8];
  _mm256_store_ps(tmp, v);
  for (int64_t r = std::max(r0, row0); r < std::min(r1, row0 + 8); ++r) y[r - r0] = tmp[r - row0];
}

// Prefetch distance of the packed kernels, into L2 (T1), as in quant_avx512.cpp: from memory on one
// thread of the Xeon measured (AVX2 set, kakeya_kernels_bench, alternating) packed Q4_0 read 12.2
// -> 14.7 GB/s and Q8_0 12.5 -> 15.2 against 16 KiB ahead into L1 (T0).
constexpr size_t kPackedPrefetchBytes = 2048;

// Whether the packed kernels prefetch at all: not on AMD CPUs, whose hardware prefetcher follows
// the groups' one stream. One thread from memory on the 2-core AMD EPYC (Zen 4) VM
// (kakeya_kernels_bench, 60 matrices of 5632×2048, three alternating runs): packed Q4_0
// 18.3-19.5 -> 29.0-31.7 GB/s, Q8_0 19.7-31.0 -> 31.1 (the VM's bus swings); two threads level at
// 31-37; 1 KiB ahead read as none, 4 and 8 KiB far less (7.7-20 GB/s).
inline bool packed_prefetch() {
  static const bool on = !cpu_features().amd();
  return on;
}

// Eight rows (half of a 16-row group) per pass; for each of the 4 chunks of a block, one 32-byte
// load holds 4 bytes of each of the 8 rows: maddubs against the broadcast activation bytes gives
// int16 pair sums per row, summed over the chunks (at most 8·2·15·128 = 30720, no overflow), and
// one madd makes the exact int32 block sum of each row. Per row then s = fma(sumi, dw·da, s),
// the same chain as dot_q4_0.
void packed_q4_0(const uint8_t* packed, int64_t n, int64_t r0, int64_t r1, const ActivationBuffer& act,
                 float* y) {
  const int64_t nb = n / 32;
  const size_t gbytes = detail::packed_group_bytes(GgmlType::Q4_0, n);
  const auto* a = reinterpret_cast<const BlockQ8_0*>(act.bytes.data());
  const __m256i low4 = _mm256_set1_epi8(0x0F);
  const __m256i ones16 = _mm256_set1_epi16(1);
  const bool prefetch = packed_prefetch();
  for (int64_t g = r0 / kPackRows; g * kPackRows < r1; ++g) {
    const uint8_t* group = packed + static_cast<size_t>(g) * gbytes;
    __m256 acc[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()};  // rows 0..7, 8..15 of the group
    for (int64_t b = 0; b < nb; ++b) {
      const uint8_t* q = group + detail::packed_quants_offset(GgmlType::Q4_0, b);
      const auto* scales = reinterpret_cast<const uint16_t*>(group + detail::packed_scales_offset(GgmlType::Q4_0, b));
      if (prefetch) {
        for (int c = 0; c < 4; ++c) _mm_prefetch(reinterpret_cast<const char*>(q + kPackedPrefetchBytes + 64 * c), _MM_HINT_T1);
        if (b % 2 == 0) _mm_prefetch(reinterpret_cast<const char*>(q + kPackedPrefetchBytes + 256), _MM_HINT_T1);
      }
      const int8_t* qy = a[b].qs;
      __m256i s16[2] = {_mm256_setzero_si256(), _mm256_setzero_si256()};
      for (int c = 0; c < 4; ++c) {
        const __m256i ylo = _mm256_set1_epi32(load_i32(qy + 4 * c));
        const __m256i yhi = _mm256_set1_epi32(load_i32(qy + 16 + 4 * c));
        for (int h = 0; h < 2; ++h) {
          const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q + 64 * c + 32 * h));
          s16[h] = _mm256_add_epi16(s16[h], _mm256_maddubs_epi16(_mm256_and_si256(v, low4), ylo));
          s16[h] = _mm256_add_epi16(s16[h], _mm256_maddubs_epi16(_mm256_and_si256(_mm256_srli_epi16(v, 4), low4), yhi));
        }
      }
      const __m256 da = _mm256_set1_ps(h2f(a[b].d));
      const __m256i corr = _mm256_set1_epi32(8 * act.block_sums[static_cast<size_t>(b)]);  // nibbles stored unsigned
      for (int h = 0; h < 2; ++h) {
        const __m256i sumi = _mm256_sub_epi32(_mm256_madd_epi16(s16[h], ones16), corr);
        const __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(scales + 8 * h)));
        acc[h] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sumi), _mm256_mul_ps(dw, da), acc[h]);
      }
    }
    store_rows8(acc[0], g * kPackRows, r0, r1, y);
    store_rows8(acc[1], g * kPackRows + 8, r0, r1, y);
  }
}

// Returns v unchanged, but keeps the compiler from fusing the multiply that produced it with a
// later add (the portable Q8_0 kernel rounds the product before adding it).
inline __m256 keep_rounded(__m256 v) {
  __asm__("" : "+x"(v));
  return v;
}

// Eight rows per pass as in packed_q4_0; signed weights use the sign trick of dot_i8_i32, so
// pair sums (at most 2·128·127) are widened to int32 per chunk. Per row s += sumi·(dw·da),
// multiply and add rounded separately: bit-identical to the portable dot_q8_0.
void packed_q8_0(const uint8_t* packed, int64_t n, int64_t r0, int64_t r1, const ActivationBuffer& act,
                 float* y) {
  const int64_t nb = n / 32;
  const size_t gbytes = detail::packed_group_bytes(GgmlType::Q8_0, n);
  const auto* a = reinterpret_cast<const BlockQ8_0*>(act.bytes.data());
  const __m256i ones16 = _mm256_set1_epi16(1);
  const bool prefetch = packed_prefetch();
  for (int64_t g = r0 / kPackRows; g * kPackRows < r1; ++g) {
    const uint8_t* group = packed + static_cast<size_t>(g) * gbytes;
    __m256 acc[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()};
    for (int64_t b = 0; b < nb; ++b) {
      const uint8_t* q = group + detail::packed_quants_offset(GgmlType::Q8_0, b);
      const auto* scales = reinterpret_cast<const uint16_t*>(group + detail::packed_scales_offset(GgmlType::Q8_0, b));
      if (prefetch) {
        for (int c = 0; c < 8; ++c) _mm_prefetch(reinterpret_cast<const char*>(q + kPackedPrefetchBytes + 64 * c), _MM_HINT_T1);
        if (b % 2 == 0) _mm_prefetch(reinterpret_cast<const char*>(q + kPackedPrefetchBytes + 512), _MM_HINT_T1);
      }
      const int8_t* qy = a[b].qs;
      __m256i sumi[2] = {_mm256_setzero_si256(), _mm256_setzero_si256()};
      for (int c = 0; c < 8; ++c) {
        const __m256i yb = _mm256_set1_epi32(load_i32(qy + 4 * c));
        for (int h = 0; h < 2; ++h) {
          const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q + 64 * c + 32 * h));
          const __m256i p16 = _mm256_maddubs_epi16(_mm256_sign_epi8(v, v), _mm256_sign_epi8(yb, v));
          sumi[h] = _mm256_add_epi32(sumi[h], _mm256_madd_epi16(p16, ones16));
        }
      }
      const __m256 da = _mm256_set1_ps(h2f(a[b].d));
      for (int h = 0; h < 2; ++h) {
        const __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(scales + 8 * h)));
        const __m256 p = keep_rounded(_mm256_mul_ps(_mm256_cvtepi32_ps(sumi[h]), _mm256_mul_ps(dw, da)));
        acc[h] = _mm256_add_ps(acc[h], p);
      }
    }
    store_rows8(acc[0], g * kPackRows, r0, r1, y);
    store_rows8(acc[1], g * kPackRows + 8, r0, r1, y);
  }
}

void avx2_matvec_packed(GgmlType type, const uint8_t* packed, int64_t n, int64_t r0, int64_t r1,
                        const ActivationBuffer& act, float* y) {
  if (type == GgmlType::Q4_0) return packed_q4_0(packed, n, r0, r1, act, y);
  packed_q8_0(packed, n, r0, r1, act, y);
}

// ---- K-quants against Q8_K activations (bit-identical to the portable kernels) ----

// The scale/min words of a Q4_K header unpacked to bytes: [scales 0..3, scales 4..7, mins 0..3,
// mins 4..7], all 6-bit (q4k_scale_min's mapping, done on 32-bit words), built in a register
// (through stack bytes, an 8-byte load of two 4-byte stores stalls store-to-load forwarding).
inline __m128i q4k_scales_mins(const uint8_t* packed) {
  constexpr uint32_t k6 = 0x3F3F3F3Fu, k4 = 0x0F0F0F0Fu, k2 = 0x03030303u;
  uint32_t w[3];
  std::memcpy(w, packed, 12);
  const uint32_t s_lo = w[0] & k6;
  const uint32_t m_lo = w[1] & k6;
  const uint32_t s_hi = (w[2] & k4) | (((w[0] >> 6) & k2) << 4);
  const uint32_t m_hi = ((w[2] >> 4) & k4) | (((w[1] >> 6) & k2) << 4);
  return _mm_set_epi32(static_cast<int>(m_hi), static_cast<int>(m_lo), static_cast<int>(s_hi), static_cast<int>(s_lo));
}

// VPSHUFB indices that give every int16 lane of a 128-bit lane the int16 scale k (low lane) and
// k + 1 (high lane) of a vector holding 8 int16 scales in each 128-bit lane.
inline __m256i scale_pair_index(int k) {
  const __m128i lo = _mm_set1_epi16(static_cast<int16_t>((2 * k) | ((2 * k + 1) << 8)));
  const __m128i hi = _mm_set1_epi16(static_cast<int16_t>((2 * k + 2) | ((2 * k + 3) << 8)));
  return _mm256_set_m128i(hi, lo);
}

// a·b, each lane rounded to f32, without letting the compiler fuse the multiply into a later add.
inline __m128 mul_rounded(__m128 a, __m128 b) {
  __m128 v = _mm_mul_ps(a, b);
  __asm__("" : "+x"(v));
  return v;
}

// Q4_K's quants hold elements 64j + l (low nibble) and 64j + 32 + l (high nibble) in byte 32j + l.
// dot_q4_k takes each 16-byte half of those 32 bytes broadcast to both 128-bit lanes, the low
// nibbles in the low lane and the high nibbles in the high lane, so one vector holds 16 elements
// of sub-block 2j and 16 of sub-block 2j + 1. q4k_reorder gives the activations in that order, per
// super-block and j: [64j .. +16) ++ [64j + 32 .. +16), then [64j + 16 .. +16) ++ [64j + 48 .. +16).
// Returns a thread-local buffer of nb·256 bytes, valid until this thread's next call.
const int8_t* q4k_reorder(const BlockQ8_K* y, int64_t nb) {
  thread_local std::vector<int8_t> t;
  t.resize(static_cast<size_t>(nb) * 256);
  for (int64_t i = 0; i < nb; ++i) {
    for (int j = 0; j < 4; ++j) {
      const __m256i a0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y[i].qs + 64 * j));
      const __m256i a1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y[i].qs + 64 * j + 32));
      auto* d = reinterpret_cast<__m256i*>(t.data() + i * 256 + 64 * j);
      _mm256_storeu_si256(d, _mm256_permute2x128_si256(a0, a1, 0x20));
      _mm256_storeu_si256(d + 1, _mm256_permute2x128_si256(a0, a1, 0x31));
    }
  }
  return t.data();
}

// Adds the terms of super-blocks [0, count) to s, in order, as the portable kernels do: s +=
// round(d_i·Σq_i) − round(dmin_i·Σm_i), with d_i = h2f(header d)·da_i and dmin_i likewise (dmin
// absent: the Σm term is left out, as Q6_K has none). tq[i] / tm[i] hold 4 int32 lanes whose sum is
// Σq_i / Σm_i (exact). `d` / `dmin` point at the header halves of the first block, `stride` bytes
// apart; `da` at the first activation scale, `da_stride` bytes apart. Four blocks at a time the
// totals are reduced together and the products taken in one vector (each lane rounded as the scalar
// product); only the adds to s are scalar.
inline float add_kquant_terms(float s, int64_t count, const __m128i* tq, const __m128i* tm, const uint8_t* d,
                              const uint8_t* dmin, size_t stride, const uint8_t* da, size_t da_stride) {
  const auto half_at = [](const uint8_t* p) {
    uint16_t h;
    std::memcpy(&h, p, 2);
    return h;
  };
  const auto f32_at = [](const uint8_t* p) {
    float f;
    std::memcpy(&f, p, 4);
    return f;
  };
  int64_t i = 0;
  for (; i + 4 <= count; i += 4) {
    const size_t o = static_cast<size_t>(i) * stride, oa = static_cast<size_t>(i) * da_stride;
    const __m128 a = _mm_setr_ps(f32_at(da + oa), f32_at(da + oa + da_stride), f32_at(da + oa + 2 * da_stride),
                                 f32_at(da + oa + 3 * da_stride));
    const auto halves = [&](const uint8_t* p) {
      return _mm_cvtph_ps(_mm_setr_epi16(static_cast<int16_t>(half_at(p + o)),
                                         static_cast<int16_t>(half_at(p + o + stride)),
                                         static_cast<int16_t>(half_at(p + o + 2 * stride)),
                                         static_cast<int16_t>(half_at(p + o + 3 * stride)), 0, 0, 0, 0));
    };
    const __m128i q = _mm_hadd_epi32(_mm_hadd_epi32(tq[i], tq[i + 1]), _mm_hadd_epi32(tq[i + 2], tq[i + 3]));
    __m128 t = mul_rounded(_mm_cvtepi32_ps(q), _mm_mul_ps(halves(d), a));
    if (dmin != nullptr) {
      const __m128i m = _mm_hadd_epi32(_mm_hadd_epi32(tm[i], tm[i + 1]), _mm_hadd_epi32(tm[i + 2], tm[i + 3]));
      t = _mm_sub_ps(t, mul_rounded(_mm_cvtepi32_ps(m), _mm_mul_ps(halves(dmin), a)));
    }
    s += _mm_cvtss_f32(t);
    s += _mm_cvtss_f32(_mm_movehdup_ps(t));
    s += _mm_cvtss_f32(_mm_movehl_ps(t, t));
    s += _mm_cvtss_f32(_mm_shuffle_ps(t, t, 3));
  }
  for (; i < count; ++i) {
    const size_t o = static_cast<size_t>(i) * stride;
    const float a = f32_at(da + static_cast<size_t>(i) * da_stride);
    __m128i q = _mm_hadd_epi32(tq[i], tq[i]);
    q = _mm_hadd_epi32(q, q);
    float t = round_f32((h2f(half_at(d + o)) * a) * static_cast<float>(_mm_cvtsi128_si32(q)));
    if (dmin != nullptr) {
      __m128i m = _mm_hadd_epi32(tm[i], tm[i]);
      m = _mm_hadd_epi32(m, m);
      t -= round_f32((h2f(half_at(dmin + o)) * a) * static_cast<float>(_mm_cvtsi128_si32(m)));
    }
    s += t;
  }
  return s;
}

// Super-blocks per pass of the K-quant kernels: their integer totals are kept (on the stack) and
// combined by add_kquant_terms after the pass, away from the integer work.
constexpr int64_t kKChunk = 16;

// Bit-identical to the portable dot_q4_k: the same exact integer totals per super-block (Σq = Σ_j
// scale_j·<q_j, a_j>, Σm = Σ_j min_j·sum_j), then s += round(d·Σq) − round(dmin·Σm) in order
// (add_kquant_terms). `ar` holds y's quants as q4k_reorder writes them. Per 64 elements, VPMADDUBSW
// of the two half vectors (16 elements of each sub-block, pair sums |.| <= 2·15·128) are added in
// int16 (|.| <= 7680) and VPMADDWD takes both sub-blocks' scales at once, picked with VPSHUFB from
// the scales widened to int16 in a register; Σm from the bsums, as ggml's AVX2 kernel.
float dot_q4_k(const BlockQ4_K* x, const BlockQ8_K* y, const int8_t* ar, int64_t nb) {
  const __m256i low4 = _mm256_set1_epi8(0x0F);
  const __m256i high_lane_by_4 = _mm256_setr_epi32(0, 0, 0, 0, 4, 4, 4, 4);
  float s = 0;
  for (int64_t c = 0; c < nb; c += kKChunk) {
    const int64_t count = std::min(kKChunk, nb - c);
    __m128i tq[kKChunk], tm[kKChunk];
    for (int64_t k = 0; k < count; ++k) {
      const int64_t i = c + k;
      const __m256i sm = _mm256_cvtepu8_epi16(q4k_scales_mins(x[i].scales));  // [scales | mins] int16
      // Σm lanes: min_j · (sum of the 32 activations of sub-block j), from the 16 bsums.
      const __m256i bsums = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y[i].bsums));
      const __m128i q8s = _mm_hadd_epi16(_mm256_castsi256_si128(bsums), _mm256_extracti128_si256(bsums, 1));
      tm[k] = _mm_madd_epi16(_mm256_extracti128_si256(sm, 1), q8s);
      const __m256i scales = _mm256_permute2x128_si256(sm, sm, 0x00);
      __m256i sumi = _mm256_setzero_si256();
      const uint8_t* q4 = x[i].qs;
      const int8_t* a = ar + i * 256;
#pragma GCC unroll 4
      for (int j = 0; j < 4; ++j) {
        const auto half = [&](int h) {
          const __m256i bits =
              _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(q4 + 32 * j + 16 * h)));
          const __m256i q = _mm256_and_si256(_mm256_srlv_epi32(bits, high_lane_by_4), low4);
          return _mm256_maddubs_epi16(q, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a + 64 * j + 32 * h)));
        };
        const __m256i p16 = _mm256_add_epi16(half(0), half(1));
        sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(p16, _mm256_shuffle_epi8(scales, scale_pair_index(2 * j))));
      }
      tq[k] = _mm_add_epi32(_mm256_castsi256_si128(sumi), _mm256_extracti128_si256(sumi, 1));
    }
    const auto* h = reinterpret_cast<const uint8_t*>(x + c);
    s = add_kquant_terms(s, count, tq, tm, h + offsetof(BlockQ4_K, d), h + offsetof(BlockQ4_K, dmin), sizeof(BlockQ4_K),
                         reinterpret_cast<const uint8_t*>(y + c) + offsetof(BlockQ8_K, d), sizeof(BlockQ8_K));
  }
  return s;
}

// Bit-identical to the portable dot_q6_k: the exact integer total per super-block, then s +=
// round(d·da·Σ) in order. The quants are taken as stored (q + 32, unsigned; VPMADDUBSW pair sums
// |.| <= 2·63·128) and 32·Σ_k scale_k·bsum_k is subtracted once per super-block, as the AVX-512
// kernel does. Each half's 8 scales are widened to int16 once and picked per 32-element group with
// VPSHUFB (scale 2g for its first 16 elements, 2g + 1 for the others).
float dot_q6_k(const BlockQ6_K* x, const BlockQ8_K* y, int64_t nb) {
  const __m256i low4 = _mm256_set1_epi8(0x0F);
  const __m256i bits45 = _mm256_set1_epi8(0x30);
  float s = 0;
  for (int64_t c = 0; c < nb; c += kKChunk) {
    const int64_t count = std::min(kKChunk, nb - c);
    __m128i tq[kKChunk];
    for (int64_t k = 0; k < count; ++k) {
      const int64_t i = c + k;
      const __m256i sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x[i].scales)));
      // 32·Σ_k scale_k·bsum_k in 8 int32 lanes (|32·scale| <= 4096 fits int16).
      const __m256i offset = _mm256_madd_epi16(_mm256_slli_epi16(sc16, 5),
                                               _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y[i].bsums)));
      __m256i sumi = _mm256_setzero_si256();
#pragma GCC unroll 2
      for (int half = 0; half < 2; ++half) {
        const uint8_t* ql = x[i].ql + 64 * half;
        const uint8_t* qh = x[i].qh + 32 * half;
        const int8_t* q8 = y[i].qs + 128 * half;
        const __m256i sc =
            half == 0 ? _mm256_permute2x128_si256(sc16, sc16, 0x00) : _mm256_permute2x128_si256(sc16, sc16, 0x11);
        const __m256i l0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ql));
        const __m256i l1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ql + 32));
        const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qh));
        // Bits 4-5 of byte k: qh bits 0-1, 2-3, 4-5, 6-7 for the four groups (the 16-bit shifts
        // carry bits across bytes only into the bits the mask clears).
        __m256i q[4];
        q[0] = _mm256_or_si256(_mm256_and_si256(l0, low4), _mm256_and_si256(_mm256_slli_epi16(h, 4), bits45));
        q[1] = _mm256_or_si256(_mm256_and_si256(l1, low4), _mm256_and_si256(_mm256_slli_epi16(h, 2), bits45));
        q[2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), low4), _mm256_and_si256(h, bits45));
        q[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), low4),
                               _mm256_and_si256(_mm256_srli_epi16(h, 2), bits45));
#pragma GCC unroll 4
        for (int g = 0; g < 4; ++g) {
          const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q8 + 32 * g));
          sumi = _mm256_add_epi32(
              sumi, _mm256_madd_epi16(_mm256_maddubs_epi16(q[g], a), _mm256_shuffle_epi8(sc, scale_pair_index(2 * g))));
        }
      }
      sumi = _mm256_sub_epi32(sumi, offset);
      tq[k] = _mm_add_epi32(_mm256_castsi256_si128(sumi), _mm256_extracti128_si256(sumi, 1));
    }
    s = add_kquant_terms(s, count, tq, nullptr, reinterpret_cast<const uint8_t*>(x + c) + offsetof(BlockQ6_K, d),
                         nullptr, sizeof(BlockQ6_K), reinterpret_cast<const uint8_t*>(y + c) + offsetof(BlockQ8_K, d),
                         sizeof(BlockQ8_K));
  }
  return s;
}

// ---- activations ----

// One block of 32 activations to Q8_0's qs (ggml's AVX2 quantize_row_q8_0: amax by max_ps,
// q = round-to-nearest-even(x·127/amax)) and *d = amax/127 in f32 (stored as fp16 by the
// callers); returns the 8 int32 lanes of the quants before packing (their total is Σq).
__m256i quantize_block_q8(const float* x, float* d, int8_t* qs) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  __m256 v[4];
  __m256 amax = _mm256_setzero_ps();
  for (int k = 0; k < 4; ++k) {
    v[k] = _mm256_loadu_ps(x + 8 * k);
    amax = _mm256_max_ps(amax, _mm256_andnot_ps(sign, v[k]));
  }
  __m128 m4 = _mm_max_ps(_mm256_extractf128_ps(amax, 1), _mm256_castps256_ps128(amax));
  m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
  m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
  const float max_abs = _mm_cvtss_f32(m4);
  *d = max_abs / 127.f;
  const __m256 mul = _mm256_set1_ps(max_abs != 0.0f ? 127.f / max_abs : 0.0f);
  __m256i q[4];
  for (int k = 0; k < 4; ++k)
    q[k] = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(v[k], mul), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  // Pack 4×8 int32 -> 32 int8 in element order (packs interleave 128-bit lanes; fix with a permute).
  const __m256i p01 = _mm256_packs_epi32(q[0], q[1]);
  const __m256i p23 = _mm256_packs_epi32(q[2], q[3]);
  const __m256i p = _mm256_packs_epi16(p01, p23);
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(qs), _mm256_permutevar8x32_epi32(p, order));
  return _mm256_add_epi32(_mm256_add_epi32(q[0], q[1]), _mm256_add_epi32(q[2], q[3]));
}

void quantize_q8_0(const float* x, BlockQ8_0* y, int64_t n) {
  for (int64_t i = 0; i < n / 32; ++i, x += 32) {
    float d;
    quantize_block_q8(x, &d, y[i].qs);
    y[i].d = fp32_to_fp16(d);
  }
}

// Q8_1: s = fp16(d·Σq) with d the f32 amax/127 before its fp16 rounding (as ggml's AVX2 path).
void quantize_q8_1(const float* x, BlockQ8_1* y, int64_t n) {
  for (int64_t i = 0; i < n / 32; ++i, x += 32) {
    float d;
    const int32_t sum = hsum_epi32(quantize_block_q8(x, &d, y[i].qs));
    y[i].d = fp32_to_fp16(d);
    y[i].s = fp32_to_fp16(d * static_cast<float>(sum));
  }
}

// Q8_K (ggml quantize_row_q8_K_ref, bit-identical to detail::quantize_row_q8_k): per 256 values,
// max = the first value of largest magnitude (NaNs skipped, as the scalar `ax > amax` skips them),
// q = min(127, round-half-even(x·(-127/max))), bsums of 16, d = 1/iscale.
void quantize_q8_k(const float* x, BlockQ8_K* y, int64_t n) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  for (int64_t i = 0; i < n / 256; ++i, x += 256) {
    __m256 amax8 = _mm256_setzero_ps();
    // max_ps returns its second operand when either is NaN: amax8 second keeps NaNs out.
    for (int k = 0; k < 32; ++k) amax8 = _mm256_max_ps(_mm256_andnot_ps(sign, _mm256_loadu_ps(x + 8 * k)), amax8);
    __m128 m4 = _mm_max_ps(_mm256_extractf128_ps(amax8, 1), _mm256_castps256_ps128(amax8));
    m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
    m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
    const float amax = _mm_cvtss_f32(m4);
    if (amax == 0.0f) {
      y[i].d = 0.0f;
      std::memset(y[i].qs, 0, sizeof y[i].qs);
      std::memset(y[i].bsums, 0, sizeof y[i].bsums);
      continue;
    }
    float max = 0.0f;
    const __m256 target = _mm256_set1_ps(amax);
    for (int k = 0; k < 32; ++k) {
      const int hit = _mm256_movemask_ps(_mm256_cmp_ps(_mm256_andnot_ps(sign, _mm256_loadu_ps(x + 8 * k)), target, _CMP_EQ_OQ));
      if (hit != 0) {
        max = x[8 * k + __builtin_ctz(static_cast<unsigned>(hit))];
        break;
      }
    }
    const float iscale = -127.f / max;
    const __m256 mul = _mm256_set1_ps(iscale);
    const __m256i top = _mm256_set1_epi32(127);
    const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    for (int g = 0; g < 8; ++g) {  // 32 values: two bsums
      __m256i q[4];
      for (int k = 0; k < 4; ++k) {
        const __m256 v = _mm256_mul_ps(_mm256_loadu_ps(x + 32 * g + 8 * k), mul);
        // nearest_int of the default NaN is 0 (its mantissa trick), VCVTPS2DQ's INT_MIN: zero NaN lanes.
        const __m256i ordered = _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_ORD_Q));
        q[k] = _mm256_and_si256(_mm256_min_epi32(_mm256_cvtps_epi32(v), top), ordered);
      }
      const __m256i p = _mm256_packs_epi16(_mm256_packs_epi32(q[0], q[1]), _mm256_packs_epi32(q[2], q[3]));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(y[i].qs + 32 * g), _mm256_permutevar8x32_epi32(p, order));
      y[i].bsums[2 * g] = static_cast<int16_t>(hsum_epi32(_mm256_add_epi32(q[0], q[1])));
      y[i].bsums[2 * g + 1] = static_cast<int16_t>(hsum_epi32(_mm256_add_epi32(q[2], q[3])));
    }
    y[i].d = 1.0f / iscale;
  }
}

// f32 -> bf16, eight lanes: fp32_to_bf16's bits (round to nearest even on the integer bits, NaN
// quieted keeping its sign and top payload bits), not vcvtneps2bf16's, which flushes denormals.
inline __m256i bf16x8(__m256 v) {
  const __m256i u = _mm256_castps_si256(v);
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
  const __m256i rounded = _mm256_srli_epi32(_mm256_add_epi32(u, _mm256_add_epi32(_mm256_set1_epi32(0x7FFF), lsb)), 16);
  const __m256i quiet = _mm256_or_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(64));
  const __m256i nan =
      _mm256_cmpgt_epi32(_mm256_and_si256(u, _mm256_set1_epi32(0x7FFFFFFF)), _mm256_set1_epi32(0x7F800000));
  return _mm256_blendv_epi8(rounded, quiet, nan);
}

// BF16 activations for BF16 weights' kernels, 16 a step (each lane's 32 bits hold its bf16 in the low
// half, so an unsigned pack keeps it; the pack interleaves 128-bit halves, which the permute undoes).
void bf16_activations(const float* x, int64_t n, uint16_t* d) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256i packed = _mm256_packus_epi32(bf16x8(_mm256_loadu_ps(x + i)), bf16x8(_mm256_loadu_ps(x + i + 8)));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + i), _mm256_permute4x64_epi64(packed, 0xD8));
  }
  for (; i < n; ++i) d[i] = fp32_to_bf16(x[i]);
}

void avx2_quantize_activations(GgmlType weight_type, const float* x, int64_t n, ActivationBuffer& out) {
  const GgmlType format = vec_dot_type(weight_type);
  switch (format) {
    case GgmlType::F16:
    case GgmlType::BF16:
    case GgmlType::Q8_0:
    case GgmlType::Q8_1:
    case GgmlType::Q8_K: break;
    default:
      detail::portable_kernels().quantize_activations(weight_type, x, n, out);
      return;
  }
  out.vec_dot_type = format;
  out.n = n;
  out.bytes.resize(detail::activation_bytes(weight_type, n));
  uint8_t* bytes = out.bytes.data();
  if (format == GgmlType::F16) {
    auto* d = reinterpret_cast<uint16_t*>(bytes);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
      _mm_storeu_si128(reinterpret_cast<__m128i*>(d + i), _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT));
    for (; i < n; ++i) d[i] = fp32_to_fp16(x[i]);
  } else if (format == GgmlType::BF16) {
    bf16_activations(x, n, reinterpret_cast<uint16_t*>(bytes));
  } else if (format == GgmlType::Q8_0) {
    quantize_q8_0(x, reinterpret_cast<BlockQ8_0*>(bytes), n);
    detail::fill_block_sums(out);
  } else if (format == GgmlType::Q8_1) {
    quantize_q8_1(x, reinterpret_cast<BlockQ8_1*>(bytes), n);
  } else {
    quantize_q8_k(x, reinterpret_cast<BlockQ8_K*>(bytes), n);
  }
}

// ---- f32 helpers for attention ----

// Eight rows at a time share one horizontal sum (hsum8_ps): each row's result is bit for bit
// dot_dense's, which the rows left over run (attention_per_token's figures include this).
void avx2_dot_f32_rows(const float* q, const float* k, size_t stride, size_t rows, int64_t n, float* out) {
  size_t r = 0;
  for (; r + 8 <= rows; r += 8) {
    __m256 lanes[8];
    for (size_t j = 0; j < 8; ++j) lanes[j] = dot_lanes<float, load_f32>(q, k + (r + j) * stride, n);
    hsum8_ps(lanes, out + r);
    if (n % 8 != 0)
      for (size_t j = 0; j < 8; ++j) out[r + j] = dot_tail<float, id_f32>(out[r + j], q, k + (r + j) * stride, n);
  }
  for (; r < rows; ++r) out[r] = dot_dense<float, load_f32, id_f32>(q, k + r * stride, n);
}

// ---- SwiGLU ----

// exp_f32 (quant.h) on 8 lanes: portable_exp_f32's operations, lane by lane (lanes out of
// range or NaN compute garbage that the last three blends replace, as the scalar form returns
// early).
__m256 exp8(__m256 x) {
  using detail::kExpPoly;
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(detail::kLog2e)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fmadd_ps(n, _mm256_set1_ps(-detail::kLn2Hi), x);
  r = _mm256_fmadd_ps(n, _mm256_set1_ps(detail::kLn2Lo), r);
  __m256 p = _mm256_set1_ps(kExpPoly[0]);
  for (int i = 1; i < 6; ++i) p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kExpPoly[i]));
  p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), r);
  p = _mm256_add_ps(p, _mm256_set1_ps(1.0f));
  const __m256i bits = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  __m256 e = _mm256_mul_ps(p, _mm256_castsi256_ps(bits));
  e = _mm256_blendv_ps(e, _mm256_setzero_ps(), _mm256_cmp_ps(x, _mm256_set1_ps(detail::kExpF32Min), _CMP_LT_OQ));
  e = _mm256_blendv_ps(e, _mm256_set1_ps(std::numeric_limits<float>::infinity()),
                       _mm256_cmp_ps(x, _mm256_set1_ps(detail::kExpF32Max), _CMP_GT_OQ));
  return _mm256_blendv_ps(e, x, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
}

void avx2_swiglu_f32(float* gate, const float* up, int64_t n) {
  const __m256 sign = _mm256_set1_ps(-0.0f), one = _mm256_set1_ps(1.0f);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(gate + i);
    const __m256 e = exp8(_mm256_xor_ps(v, sign));
    _mm256_storeu_ps(gate + i, _mm256_mul_ps(_mm256_div_ps(v, _mm256_add_ps(one, e)), _mm256_loadu_ps(up + i)));
  }
  if (i < n) detail::portable_kernels().swiglu_f32(gate + i, up + i, n - i);
}

void avx2_scale_f32(float* x, int64_t n, float s) {
  const __m256 vs = _mm256_set1_ps(s);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(x + i, _mm256_mul_ps(_mm256_loadu_ps(x + i), vs));
  for (; i < n; ++i) x[i] *= s;
}

// Partial sums s0..s3 in `lo`, s4..s7 in `hi` (quant.h's order); a last partial vector adds +0 in
// its missing lanes (which leaves every partial sum as it was).
double avx2_exp_sum_f32(float* row, int64_t n, float shift) {
  const __m256 vs = _mm256_set1_ps(shift);
  __m256d lo = _mm256_setzero_pd(), hi = _mm256_setzero_pd();
  auto add = [&](__m256 e) {
    lo = _mm256_add_pd(lo, _mm256_cvtps_pd(_mm256_castps256_ps128(e)));
    hi = _mm256_add_pd(hi, _mm256_cvtps_pd(_mm256_extractf128_ps(e, 1)));
  };
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 e = exp8(_mm256_sub_ps(_mm256_loadu_ps(row + i), vs));
    _mm256_storeu_ps(row + i, e);
    add(e);
  }
  if (i < n) {
    alignas(32) float tail[8] = {};
    std::copy(row + i, row + n, tail);
    _mm256_store_ps(tail, exp8(_mm256_sub_ps(_mm256_load_ps(tail), vs)));
    std::copy(tail, tail + (n - i), row + i);
    std::fill(tail + (n - i), tail + 8, 0.0f);
    add(_mm256_load_ps(tail));
  }
  const __m256d a = _mm256_add_pd(lo, hi);  // s0+s4, s1+s5, s2+s6, s3+s7
  const __m128d b = _mm_add_pd(_mm256_castpd256_pd128(a), _mm256_extractf128_pd(a, 1));  // (s0+s4)+(s2+s6), ...
  return _mm_cvtsd_f64(b) + _mm_cvtsd_f64(_mm_unpackhi_pd(b, b));
}

// ---- dispatch ----

// q4k_ar: Q4_K activations as q4k_reorder writes them (reordered here when null).
template <GgmlType T>
inline float row_dot(const void* row, const void* a, int64_t n, const int8_t* q4k_ar = nullptr) {
  if constexpr (T == GgmlType::F32) {
    return dot_dense<float, load_f32, id_f32>(static_cast<const float*>(row), static_cast<const float*>(a), n);
  } else if constexpr (T == GgmlType::F16) {
    return dot_dense<uint16_t, load_f16, fp16_to_fp32>(static_cast<const uint16_t*>(row),
                                                       static_cast<const uint16_t*>(a), n);
  } else if constexpr (T == GgmlType::BF16) {
    return dot_bf16(static_cast<const uint16_t*>(row), static_cast<const uint16_t*>(a), n);
  } else if constexpr (T == GgmlType::Q8_0) {
    return dot_q8_0(static_cast<const BlockQ8_0*>(row), static_cast<const BlockQ8_0*>(a), n / 32);
  } else if constexpr (T == GgmlType::Q4_0) {
    return dot_q4_0(static_cast<const BlockQ4_0*>(row), static_cast<const BlockQ8_0*>(a), n / 32);
  } else if constexpr (T == GgmlType::Q4_K) {
    const auto* y = static_cast<const BlockQ8_K*>(a);
    return dot_q4_k(static_cast<const BlockQ4_K*>(row), y, q4k_ar != nullptr ? q4k_ar : q4k_reorder(y, n / 256), n / 256);
  } else {
    return dot_q6_k(static_cast<const BlockQ6_K*>(row), static_cast<const BlockQ8_K*>(a), n / 256);
  }
}

// Row-major rows as two streams: row r0 + i of the first half of [r0, r1), then row r0 + h + i of
// the second, each prefetching its successor into L2 (T1) before it is computed. From memory on
// one thread (5632×2048 matrices, 615-690 MB per sweep, the Xeon VM of bench/README.md) this reads
// F16 12.2 GB/s, BF16 12.6, Q4_K 11.4 and Q6_K 9.7, against 9.6, 7.2, 7.8 and 7.5 for one stream
// prefetching the row two ahead into L1 (T0). The rows' results do not depend on the order.
// On AMD CPUs F16, BF16, Q4_K and Q6_K rows are read one at a time instead, with no software
// prefetch, as the AVX-512 set reads F16/BF16 on AMD before Zen 5 (Dense16Order::kOneRow; this set
// keeps one row on every AMD CPU, not re-measured on Zen 5). One thread from memory
// on the 2-core AMD EPYC (Zen 4) VM (kakeya_kernels_bench, 60 matrices of 5632×2048, alternating):
// F16 19.1-19.2 -> 32.4 GB/s, BF16 24.2-24.5 -> 30.8 (with dot_bf16); Q6_K 15.6 -> 24.9, Q4_K
// 17.2 -> 17.8 (with the kernels above; software prefetch 1-8 KiB ahead of one row read less).
template <GgmlType T>
void rows_dot(const void* w, int64_t n, int64_t r0, int64_t r1, const ActivationBuffer& act, float* y) {
  const size_t stride = ggml_row_bytes(T, n);
  const auto* base = static_cast<const uint8_t*>(w);
  const void* a = act.bytes.data();
  const int8_t* q4k_ar = nullptr;
  if constexpr (T == GgmlType::Q4_K) q4k_ar = q4k_reorder(static_cast<const BlockQ8_K*>(a), n / 256);
  const auto row = [&](int64_t r) {
    if (r + 1 < r1) {
      const uint8_t* pf = base + static_cast<size_t>(r + 1) * stride;
      for (size_t off = 0; off < stride; off += 64) _mm_prefetch(reinterpret_cast<const char*>(pf + off), _MM_HINT_T1);
    }
    y[r - r0] = row_dot<T>(base + static_cast<size_t>(r) * stride, a, n, q4k_ar);
  };
  if constexpr (T == GgmlType::F16 || T == GgmlType::BF16 || T == GgmlType::Q4_K || T == GgmlType::Q6_K) {
    static const bool one_row = cpu_features().amd();
    if (one_row) {
      for (int64_t r = r0; r < r1; ++r) y[r - r0] = row_dot<T>(base + static_cast<size_t>(r) * stride, a, n, q4k_ar);
      return;
    }
  }
  const int64_t count = r1 - r0;
  const int64_t h = (count + 1) / 2;
  for (int64_t i = 0; i < count / 2; ++i) {
    row(r0 + i);
    row(r0 + h + i);
  }
  if (count % 2 != 0) row(r0 + h - 1);
}

float avx2_vec_dot(GgmlType type, const void* row, const ActivationBuffer& act) {
  const void* a = act.bytes.data();
  switch (type) {
    case GgmlType::F32: return row_dot<GgmlType::F32>(row, a, act.n);
    case GgmlType::F16: return row_dot<GgmlType::F16>(row, a, act.n);
    case GgmlType::BF16: return row_dot<GgmlType::BF16>(row, a, act.n);
    case GgmlType::Q8_0: return row_dot<GgmlType::Q8_0>(row, a, act.n);
    case GgmlType::Q4_0: return row_dot<GgmlType::Q4_0>(row, a, act.n);
    case GgmlType::Q4_K: return row_dot<GgmlType::Q4_K>(row, a, act.n);
    case GgmlType::Q6_K: return row_dot<GgmlType::Q6_K>(row, a, act.n);
    default: break;
  }
  const detail::TypeKernels* k = detail::lanes_avx2(type);  // nullptr only for activation formats
  return k != nullptr ? k->dot(row, a, act.n) : 0.0f;
}

void avx2_matvec(GgmlType type, const void* w, int64_t n, int64_t r0, int64_t r1, const ActivationBuffer& act,
                 float* y) {
  switch (type) {
    case GgmlType::F32: return rows_dot<GgmlType::F32>(w, n, r0, r1, act, y);
    case GgmlType::F16: return rows_dot<GgmlType::F16>(w, n, r0, r1, act, y);
    case GgmlType::BF16: return rows_dot<GgmlType::BF16>(w, n, r0, r1, act, y);
    case GgmlType::Q8_0: return rows_q8_0(w, n, r0, r1, act, y);
    case GgmlType::Q4_0: return rows_q4_0(w, n, r0, r1, act, y);
    case GgmlType::Q4_K: return rows_dot<GgmlType::Q4_K>(w, n, r0, r1, act, y);
    case GgmlType::Q6_K: return rows_dot<GgmlType::Q6_K>(w, n, r0, r1, act, y);
    default:
      if (const detail::TypeKernels* k = detail::lanes_avx2(type)) k->matvec(w, n, r0, r1, act, y);
      return;
  }
}

// 16 int8 -> 16 floats times d, stored at y (two 8-lane stores).
inline void store_scaled_i8x16(__m128i q, __m256 d, float* y) {
  _mm256_storeu_ps(y, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q)), d));
  _mm256_storeu_ps(y + 8, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(q, 8))), d));
}

void avx2_dequantize_row(GgmlType type, const void* src, float* dst, int64_t n) {
  // Q4_0 and Q8_0: each value is one exact int -> f32 conversion and one multiply by d, as in
  // the portable kernels, so the results are bit-identical.
  if (type == GgmlType::Q4_0) {
    const auto* x = static_cast<const BlockQ4_0*>(src);
    for (int64_t i = 0; i < n / 32; ++i) {
      const __m256 d = _mm256_set1_ps(h2f(x[i].d));
      const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x[i].qs));
      const __m128i lo = _mm_sub_epi8(_mm_and_si128(packed, _mm_set1_epi8(0x0F)), _mm_set1_epi8(8));
      const __m128i hi = _mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(packed, 4), _mm_set1_epi8(0x0F)), _mm_set1_epi8(8));
      store_scaled_i8x16(lo, d, dst + i * 32);
      store_scaled_i8x16(hi, d, dst + i * 32 + 16);
    }
    return;
  }
  if (type == GgmlType::Q8_0) {
    const auto* x = static_cast<const BlockQ8_0*>(src);
    for (int64_t i = 0; i < n / 32; ++i) {
      const __m256 d = _mm256_set1_ps(h2f(x[i].d));
      store_scaled_i8x16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x[i].qs)), d, dst + i * 32);
      store_scaled_i8x16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x[i].qs + 16)), d, dst + i * 32 + 16);
    }
    return;
  }
  if (type == GgmlType::F16) {
    const auto* s = static_cast<const uint16_t*>(src);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(dst + i, load_f16(s + i));
    for (; i < n; ++i) dst[i] = fp16_to_fp32(s[i]);
    return;
  }
  detail::portable_kernels().dequantize_row(type, src, dst, n);
}

}  // namespace

namespace detail {

const QuantKernels& avx2_kernels() {
  static const QuantKernels k{avx2_dequantize_row, avx2_quantize_activations, avx2_vec_dot, avx2_matvec,
                              avx2_matvec_packed, avx2_dot_f32_rows, avx2_swiglu_f32, avx2_exp_sum_f32,
                              avx2_scale_f32};
  return k;
}

}  // namespace detail

}  // namespace kakeya::engine
