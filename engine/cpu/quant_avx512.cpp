// AVX-512 F/BW/VL/VNNI kernels for packed (row-interleaved) Q4_0 and Q8_0 matrices and for F16
// mat-vec, plus the lane-exact types (Q4_1 ... IQ4_XS) through their VNNI build
// (quant_lanes_avx512.cpp); everything else is the AVX2 set. This file is compiled with -mavx512f -mavx512bw -mavx512vl
// -mavx512vnni (plus the AVX2 flags) and only entered through detail::avx512_kernels() after
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
#include <vector>

#include "engine/cpu/quant.h"
#include "engine/cpu/quant_internal.h"

#if defined(__clang__)
#pragma clang fp contract(off)
#endif
// GCC 12 reports its own _mm512_undefined_* placeholders (inside _mm512_cvtph_ps and friends) as
// maybe-uninitialized once inlined; the intrinsics overwrite every lane.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
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

// Software prefetch distance in bytes for a group streamed alone, into L2 (prefetcht1: on the
// Xeon measured, T0 prefetches held L1 fill buffers and read 10-15% slower than T1).
constexpr size_t kPrefetchBytes = 16384;

inline void prefetch_lines(const uint8_t* p, size_t bytes) {
  for (size_t off = 0; off < bytes; off += 64) _mm_prefetch(reinterpret_cast<const char*>(p + off), _MM_HINT_T1);
}

// Keeps the compiler from fusing the multiply that produced v with a later add.
inline __m512 keep_rounded(__m512 v) {
  __asm__("" : "+v"(v));
  return v;
}

// The packed mat-vec kernels stream G = 2 groups of 16 rows at once (two sequential memory
// streams, no software prefetch: one thread then reads about 8% faster than one stream with
// prefetching, near the core's plain read bandwidth), and a last odd group alone with prefetch.
// Every row's arithmetic is the same either way, so results do not depend on the grouping.
template <int G, class Block>
inline void packed_groups(const uint8_t* packed, size_t gbytes, int64_t nb, int64_t r0, int64_t r1, float* y,
                          size_t block_bytes, const Block& block) {
  int64_t g = r0 / kPackRows;
  const int64_t g_end = (r1 + kPackRows - 1) / kPackRows;
  for (; g + G <= g_end; g += G) {
    __m512 acc[G];
    for (int h = 0; h < G; ++h) acc[h] = _mm512_setzero_ps();
    for (int64_t b = 0; b < nb; ++b)
      for (int h = 0; h < G; ++h) acc[h] = block(packed + static_cast<size_t>(g + h) * gbytes, b, acc[h]);
    for (int h = 0; h < G; ++h) store_rows16(acc[h], (g + h) * kPackRows, r0, r1, y);
  }
  for (; g < g_end; ++g) {
    const uint8_t* group = packed + static_cast<size_t>(g) * gbytes;
    __m512 acc = _mm512_setzero_ps();
    for (int64_t b = 0; b < nb; ++b) {
      prefetch_lines(group + static_cast<size_t>(b) * block_bytes + kPrefetchBytes, block_bytes);
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
  packed_groups<2>(packed, gbytes, nb, r0, r1, y, 288, block);
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
  packed_groups<2>(packed, gbytes, nb, r0, r1, y, 544, block);
}

// F16 rows against F16 activations (ggml's vec_dot_type for F16): the activations are widened to
// f32 once per call, so each weight is converted once (16 per VCVTPH2PS) instead of both
// operands per product. The products are the same exact f16·f16 products as in the AVX2 kernel;
// only the f32 accumulation order differs (4 × 16 lanes).
void rows_f16(const void* w, int64_t n, int64_t r0, int64_t r1, const ActivationBuffer& act, float* y) {
  thread_local std::vector<float> xf;
  xf.resize(static_cast<size_t>(n));
  const auto* a = reinterpret_cast<const uint16_t*>(act.bytes.data());
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm512_storeu_ps(xf.data() + i, _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(a + i))));
  for (; i < n; ++i) xf[static_cast<size_t>(i)] = _cvtsh_ss(a[i]);
  const size_t stride = ggml_row_bytes(GgmlType::F16, n);
  const auto* base = static_cast<const uint8_t*>(w);
  for (int64_t r = r0; r < r1; ++r) {
    const auto* row = reinterpret_cast<const uint16_t*>(base + static_cast<size_t>(r) * stride);
    __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps(), acc2 = _mm512_setzero_ps(),
           acc3 = _mm512_setzero_ps();
    int64_t k = 0;
    for (; k + 64 <= n; k += 64) {
      acc0 = _mm512_fmadd_ps(_mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + k))),
                             _mm512_loadu_ps(xf.data() + k), acc0);
      acc1 = _mm512_fmadd_ps(_mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + k + 16))),
                             _mm512_loadu_ps(xf.data() + k + 16), acc1);
      acc2 = _mm512_fmadd_ps(_mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + k + 32))),
                             _mm512_loadu_ps(xf.data() + k + 32), acc2);
      acc3 = _mm512_fmadd_ps(_mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + k + 48))),
                             _mm512_loadu_ps(xf.data() + k + 48), acc3);
    }
    for (; k + 16 <= n; k += 16) {
      acc0 = _mm512_fmadd_ps(_mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + k))),
                             _mm512_loadu_ps(xf.data() + k), acc0);
    }
    float s = _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(acc0, acc1), _mm512_add_ps(acc2, acc3)));
    for (; k < n; ++k) s += _cvtsh_ss(row[k]) * xf[static_cast<size_t>(k)];
    y[r - r0] = s;
  }
}

void avx512_matvec(GgmlType type, const void* w, int64_t n, int64_t r0, int64_t r1, const ActivationBuffer& act,
                   float* y) {
  if (type == GgmlType::F16) return rows_f16(w, n, r0, r1, act, y);
  if (const detail::TypeKernels* k = detail::lanes_avx512(type)) return k->matvec(w, n, r0, r1, act, y);
  detail::avx2_kernels().matvec(type, w, n, r0, r1, act, y);
}

// One row: the same accumulation as avx512_matvec (matvec and vec_dot agree within a set).
float avx512_vec_dot(GgmlType type, const void* row, const ActivationBuffer& act) {
  if (const detail::TypeKernels* k = detail::lanes_avx512(type)) return k->dot(row, act.bytes.data(), act.n);
  if (type != GgmlType::F16) return detail::avx2_kernels().vec_dot(type, row, act);
  float y = 0.0f;
  rows_f16(row, act.n, 0, 1, act, &y);
  return y;
}

void avx512_matvec_packed(GgmlType type, const uint8_t* packed, int64_t n, int64_t r0, int64_t r1,
                          const ActivationBuffer& act, float* y) {
  if (type == GgmlType::Q4_0) return packed_q4_0(packed, n, r0, r1, act, y);
  packed_q8_0(packed, n, r0, r1, act, y);
}

}  // namespace

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
