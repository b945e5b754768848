#pragma once
// x86 GEMM kernels (gemm.h), written once over a vector trait V and instantiated by gemm_avx2.cpp
// (V = Vec256: 8 lanes, maddubs + madd) and gemm_avx512.cpp (V = Vec512: 16 lanes, VNNI).
// Everything here has internal linkage (an anonymous namespace), so each file keeps the copy
// compiled with its own -m flags (see quant_lanes_x86.h for why that matters).
//
// Micro-kernels are outer products: lanes run across L = V::kLanes output ROWS, and each of MR
// tokens broadcasts its activation against them, so a micro-kernel keeps an L·NR × MR tile of
// outputs in registers and needs no horizontal sums.
//   * float (F32/F16/BF16 weights, attention): a panel of 2L rows × kKc values of k is converted
//     to f32 and transposed ([k][2L], L×L register transposes) once per panel and reused for every
//     token; activations are converted to f32 blocks of [tokens][kKc]. Weight matrices with
//     tokens_in_lanes() tokens instead run with the lanes across 2L TOKENS
//     (float_weights_gemm_tokens): the activations are transposed, the weights are not.
//   * packed Q4_0 / Q8_0 (quant.h layout: one 64-byte line = the same 4 bytes of 16 rows): the
//     weights are already in micro-kernel layout; row-major ones are packed a group at a time.
//     Per block and token: the exact int32 block sum (dot_u8s8 over 4-byte chunks, the nibble or
//     sign offset as the start value), then the decode kernels' f32 step.
//   * Q4_K / Q6_K: a tile of L rows × kSuperBlocks super-blocks is converted to bytes in the
//     same chunk-interleaved layout plus per-row scale vectors (int32 scales for vpmulld, int16
//     pairs of mins / scales for vpdpwssd), then per super-block and token the exact integer
//     super-block sums and the decode kernels' scalar combination, lane by lane.
#include <immintrin.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "engine/cpu/gemm.h"
#include "engine/cpu/gemm_internal.h"
#include "engine/cpu/quant.h"
#include "engine/cpu/quant_internal.h"

#if defined(__clang__)
#pragma clang fp contract(off)
#endif

// Fully unrolls a loop over the MR tokens of a micro-kernel, so its accumulators stay in
// registers: GCC 12 at -O2 keeps a 12-iteration loop rolled and the accumulator array in memory
// (a load and a store around every FMA: 15% of the core's FMA peak for F16 weights). The
// arithmetic, and so every result bit, is the same either way.
#define KAKEYA_UNROLL_TOKENS _Pragma("GCC unroll 16")
// The same for the 4 or 8 weight chunks of a packed or K-quant block: rolled, GCC keeps the chunk
// array on the stack and reloads it for every token (perf: a third of the packed GEMM's cycles).
#define KAKEYA_UNROLL_CHUNKS _Pragma("GCC unroll 8")

namespace kakeya::engine {
namespace {

inline int32_t x86_load_i32(const void* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// ---- the 256-bit and 512-bit vector traits ----

struct Vec256 {
  static constexpr int kLanes = 8;
  static constexpr int kFloatTokens = 6;   // float micro-kernel: 2 × 6 accumulators of 16 registers
  static constexpr int kPackedTokens = 4;  // packed Q4_0 / Q8_0
  static constexpr int kKquantTokens = 2;  // Q4_K / Q6_K
  static constexpr bool kChunksOuter = false;  // see block_sums
  using F = __m256;
  using I = __m256i;
  static F fzero() { return _mm256_setzero_ps(); }
  static F load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, F v) { _mm256_storeu_ps(p, v); }
  static F set1(float v) { return _mm256_set1_ps(v); }
  static F fmadd(F a, F b, F c) { return _mm256_fmadd_ps(a, b, c); }
  static F mul(F a, F b) { return _mm256_mul_ps(a, b); }
  static F add(F a, F b) { return _mm256_add_ps(a, b); }
  static F sub(F a, F b) { return _mm256_sub_ps(a, b); }
  static F cvt(I v) { return _mm256_cvtepi32_ps(v); }
  // Keeps the compiler from fusing the operation that produced v with a later add.
  static F keep(F v) {
    __asm__("" : "+x"(v));
    return v;
  }
  static F f16(const uint16_t* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
  static F bf16(const uint16_t* p) {
    const __m256i v = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(v, 16));
  }
  static I izero() { return _mm256_setzero_si256(); }
  static I iload(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }
  static void istore(void* p, I v) { _mm256_storeu_si256(static_cast<__m256i*>(p), v); }
  static I iset1(int32_t v) { return _mm256_set1_epi32(v); }
  static I bset1(int8_t v) { return _mm256_set1_epi8(v); }
  static I iadd(I a, I b) { return _mm256_add_epi32(a, b); }
  static I isub(I a, I b) { return _mm256_sub_epi32(a, b); }
  static I imullo(I a, I b) { return _mm256_mullo_epi32(a, b); }
  static I islli(I a, int n) { return _mm256_slli_epi32(a, n); }
  static I band(I a, I b) { return _mm256_and_si256(a, b); }
  static I bxor(I a, I b) { return _mm256_xor_si256(a, b); }
  static I srli16(I a, int n) { return _mm256_srli_epi16(a, n); }
  // acc + Σ of the 4 products u8·s8 in each 32-bit lane. REQUIRES: each pair of products sums to
  // at most 32767 in magnitude (maddubs saturates): unsigned values up to 127.
  static I dot_u8s8(I acc, I u, I s) {
    return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1)));
  }
  // acc + the 2 products of int16 pairs in each 32-bit lane.
  static I dot_s16(I acc, I a, I b) { return _mm256_add_epi32(acc, _mm256_madd_epi16(a, b)); }
  // Signed bytes: s8_operand(w) once per weight vector, then acc + Σ of the 4 products w·a in
  // each 32-bit lane (the sign trick of ggml's AVX2 code: |w| · (a with w's sign), exact for
  // |a| <= 127); the sums start from kS8Start·Σa.
  static constexpr int32_t kS8Start = 0;
  static I s8_operand(I w) { return w; }
  static I dot_s8s8(I acc, I w, I a) {
    const I p = _mm256_maddubs_epi16(_mm256_sign_epi8(w, w), _mm256_sign_epi8(a, w));
    return _mm256_add_epi32(acc, _mm256_madd_epi16(p, _mm256_set1_epi16(1)));
  }
  static void transpose(F r[8]) {
    const F t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
    const F t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
    const F t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);
    const F t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
    const F s0 = _mm256_shuffle_ps(t0, t2, 0x44), s1 = _mm256_shuffle_ps(t0, t2, 0xEE);
    const F s2 = _mm256_shuffle_ps(t1, t3, 0x44), s3 = _mm256_shuffle_ps(t1, t3, 0xEE);
    const F s4 = _mm256_shuffle_ps(t4, t6, 0x44), s5 = _mm256_shuffle_ps(t4, t6, 0xEE);
    const F s6 = _mm256_shuffle_ps(t5, t7, 0x44), s7 = _mm256_shuffle_ps(t5, t7, 0xEE);
    r[0] = _mm256_permute2f128_ps(s0, s4, 0x20);
    r[1] = _mm256_permute2f128_ps(s1, s5, 0x20);
    r[2] = _mm256_permute2f128_ps(s2, s6, 0x20);
    r[3] = _mm256_permute2f128_ps(s3, s7, 0x20);
    r[4] = _mm256_permute2f128_ps(s0, s4, 0x31);
    r[5] = _mm256_permute2f128_ps(s1, s5, 0x31);
    r[6] = _mm256_permute2f128_ps(s2, s6, 0x31);
    r[7] = _mm256_permute2f128_ps(s3, s7, 0x31);
  }
  static F as_f(I v) { return _mm256_castsi256_ps(v); }
  static I as_i(F v) { return _mm256_castps_si256(v); }
};

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VNNI__)
struct Vec512 {
  static constexpr int kLanes = 16;
  static constexpr int kFloatTokens = 8;    // 2 × 8 accumulators: with 12 GCC 12 spilled some to the stack (-30%)
  static constexpr int kPackedTokens = 8;
  static constexpr int kKquantTokens = 8;
  static constexpr bool kChunksOuter = true;  // see block_sums
  using F = __m512;
  using I = __m512i;
  static F fzero() { return _mm512_setzero_ps(); }
  static F load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, F v) { _mm512_storeu_ps(p, v); }
  static F set1(float v) { return _mm512_set1_ps(v); }
  static F fmadd(F a, F b, F c) { return _mm512_fmadd_ps(a, b, c); }
  static F mul(F a, F b) { return _mm512_mul_ps(a, b); }
  static F add(F a, F b) { return _mm512_add_ps(a, b); }
  static F sub(F a, F b) { return _mm512_sub_ps(a, b); }
  static F cvt(I v) { return _mm512_cvtepi32_ps(v); }
  static F keep(F v) {
    __asm__("" : "+v"(v));
    return v;
  }
  static F f16(const uint16_t* p) { return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))); }
  static F bf16(const uint16_t* p) {
    const __m512i v = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    return _mm512_castsi512_ps(_mm512_slli_epi32(v, 16));
  }
  static I izero() { return _mm512_setzero_si512(); }
  static I iload(const void* p) { return _mm512_loadu_si512(p); }
  static void istore(void* p, I v) { _mm512_storeu_si512(p, v); }
  static I iset1(int32_t v) { return _mm512_set1_epi32(v); }
  static I bset1(int8_t v) { return _mm512_set1_epi8(v); }
  static I iadd(I a, I b) { return _mm512_add_epi32(a, b); }
  static I isub(I a, I b) { return _mm512_sub_epi32(a, b); }
  static I imullo(I a, I b) { return _mm512_mullo_epi32(a, b); }
  static I islli(I a, int n) { return _mm512_slli_epi32(a, static_cast<unsigned>(n)); }
  static I band(I a, I b) { return _mm512_and_si512(a, b); }
  static I bxor(I a, I b) { return _mm512_xor_si512(a, b); }
  static I srli16(I a, int n) { return _mm512_srli_epi16(a, static_cast<unsigned>(n)); }
  static I dot_u8s8(I acc, I u, I s) { return _mm512_dpbusd_epi32(acc, u, s); }
  static I dot_s16(I acc, I a, I b) { return _mm512_dpwssd_epi32(acc, a, b); }
  // Signed bytes as w + 128 (unsigned) · a, the sums starting from −128·Σa (the decode kernels' form).
  static constexpr int32_t kS8Start = -128;
  static I s8_operand(I w) { return _mm512_xor_si512(w, _mm512_set1_epi8(static_cast<char>(0x80))); }
  static I dot_s8s8(I acc, I w, I a) { return _mm512_dpbusd_epi32(acc, w, a); }
  // The loops are unrolled (KAKEYA_UNROLL_TOKENS) so that t and u stay in registers: rolled,
  // GCC 12 kept them on the stack, a store and a load around every shuffle. One thread, F16
  // panels of 64 rows in cache, in one process: the pack took 0.153-0.155 of the 128-token
  // micro-kernel time rolled, 0.085-0.088 unrolled; the whole F16 GEMM (1408 × 2048 from memory)
  // 0-2% faster, within this VM's noise. Data movement only: every result bit is the same.
  __attribute__((always_inline)) static void transpose(F r[16]) {
    F t[16], u[16];
    KAKEYA_UNROLL_TOKENS
    for (int i = 0; i < 8; ++i) {
      t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
      t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    KAKEYA_UNROLL_TOKENS
    for (int i = 0; i < 4; ++i) {
      u[4 * i + 0] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], 0x44);
      u[4 * i + 1] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], 0xEE);
      u[4 * i + 2] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0x44);
      u[4 * i + 3] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0xEE);
    }
    // u[4q + j] lane l = column 4l + j of rows 4q..4q+3.
    KAKEYA_UNROLL_TOKENS
    for (int j = 0; j < 4; ++j) {
      const F x0 = _mm512_shuffle_f32x4(u[j], u[4 + j], 0x88), y0 = _mm512_shuffle_f32x4(u[j], u[4 + j], 0xDD);
      const F x1 = _mm512_shuffle_f32x4(u[8 + j], u[12 + j], 0x88), y1 = _mm512_shuffle_f32x4(u[8 + j], u[12 + j], 0xDD);
      r[j] = _mm512_shuffle_f32x4(x0, x1, 0x88);
      r[8 + j] = _mm512_shuffle_f32x4(x0, x1, 0xDD);
      r[4 + j] = _mm512_shuffle_f32x4(y0, y1, 0x88);
      r[12 + j] = _mm512_shuffle_f32x4(y0, y1, 0xDD);
    }
  }
  static F as_f(I v) { return _mm512_castsi512_ps(v); }
  static I as_i(F v) { return _mm512_castps_si512(v); }
};
#endif

// Stores lanes [0, live) of v to p (the rest of the L values at p are left alone).
template <class V>
inline void store_first(float* p, typename V::F v, int live) {
  if (live == V::kLanes) {
    V::store(p, v);
    return;
  }
  alignas(64) float tmp[V::kLanes];
  V::store(tmp, v);
  std::memcpy(p, tmp, static_cast<size_t>(live) * sizeof(float));
}
template <class V>
inline typename V::F load_first(const float* p, int live) {
  if (live == V::kLanes) return V::load(p);
  alignas(64) float tmp[V::kLanes] = {};
  std::memcpy(tmp, p, static_cast<size_t>(live) * sizeof(float));
  return V::load(tmp);
}

// ================================ float GEMM ================================

constexpr int64_t kKc = 256;  // k values per panel (a 2L × kKc f32 panel: 32 KiB on AVX-512)

// Activation sources: f32 blocks [m][kc] for rows [0, m), columns [k0, k0 + kc).
struct F32Matrix {  // contiguous f32 rows, `ld` apart
  const float* p;
  size_t ld;
  const float* block(int64_t, int64_t k0, int64_t, GemmScratch&, size_t* lda) const {
    *lda = ld;
    return p + k0;
  }
};
struct ActRows {  // ActivationBuffers of F32, F16 or BF16 values (quantize_activations)
  const ActivationBuffer* acts;
  template <class V>
  static void convert(GgmlType t, const uint8_t* src, int64_t n, float* dst) {
    constexpr int L = V::kLanes;
    if (t == GgmlType::F32) {
      std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
      return;
    }
    // One loop per type: with the type tested inside, GCC 12 converted every vector both ways
    // and selected.
    const auto* h = reinterpret_cast<const uint16_t*>(src);
    int64_t i = 0;
    if (t == GgmlType::F16) {
      for (; i + L <= n; i += L) V::store(dst + i, V::f16(h + i));
      for (; i < n; ++i) dst[i] = fp16_to_fp32(h[i]);
    } else {
      for (; i + L <= n; i += L) V::store(dst + i, V::bf16(h + i));
      for (; i < n; ++i) dst[i] = bf16_to_fp32(h[i]);
    }
  }
  // Values [k0, k0 + kc) of one token's activations, as f32.
  template <class V>
  static void convert_token(const ActivationBuffer& a, int64_t k0, int64_t kc, float* dst) {
    const size_t elem = a.vec_dot_type == GgmlType::F32 ? 4 : 2;
    convert<V>(a.vec_dot_type, a.bytes.data() + static_cast<size_t>(k0) * elem, kc, dst);
  }
};
template <class V>
struct ActBlock {
  const ActivationBuffer* acts;
  const float* block(int64_t m, int64_t k0, int64_t kc, GemmScratch& s, size_t* lda) const {
    float* out = s.get<float>(1, static_cast<size_t>(m * kKc));
    for (int64_t i = 0; i < m; ++i) ActRows::convert_token<V>(acts[i], k0, kc, out + i * kKc);
    *lda = kKc;
    return out;
  }
};

// Asks for the cache lines of [p, p + bytes) in L2 (prefetcht1; prefetches never fault).
// An asm volatile statement, not _mm_prefetch: built with _mm_prefetch (__builtin_prefetch, which
// GCC treats as having no effect), gemm_avx2.o and gemm_avx512.o held no prefetch instruction at
// all (objdump), though the GEMMs here ask for their next panels: GCC 12 -O2 had dropped them by
// the end of its interprocedural passes (-fdump-tree-all), this loop being a function with no
// effect. A volatile asm is one, so every prefetch asked for is issued.
inline void prefetch_l2(const void* p, size_t bytes) {
  const uintptr_t begin = reinterpret_cast<uintptr_t>(p);
  for (uintptr_t line = begin & ~uintptr_t{63}; line < begin + bytes; line += 64)
    asm volatile("prefetcht1 (%0)" : : "r"(line));
}

// The next weight panel of a GEMM that walks panels of `width` rows over [0, n) within a k block
// [k0, k0 + kc) of [0, k), then the next block: the panel after (j0, k0) is (j0 + width, k0), or
// (0, k0 + kc) after the last one (none after the last block). Its rows are prefetched into L2
// spread over the current panel's token tiles, a few after each (next_rows / tiles, rounded up),
// so that its pack finds them there instead of waiting on memory.
struct NextPanel {
  int64_t j = 0, k0 = 0, rows = 0;  // rows [j, j + rows) at k block k0; rows 0: none
  int64_t per_tile = 0, fetched = 0;
  NextPanel(int64_t j0, int64_t width, int64_t n, int64_t k0_now, int64_t kc, int64_t k, int64_t tokens,
            int64_t mr) {
    const bool last = j0 + width >= n;
    j = last ? 0 : j0 + width;
    k0 = last ? k0_now + kc : k0_now;
    rows = k0 < k ? std::min(width, n - j) : 0;
    const int64_t tiles = std::max<int64_t>(1, (tokens + mr - 1) / mr);
    per_tile = (rows + tiles - 1) / tiles;
  }
  // After a token tile: fetch_row(j + i) for this tile's share of the rows.
  template <class F>
  void after_tile(const F& fetch_row) {
    for (int64_t r = 0; r < per_tile && fetched < rows; ++r, ++fetched) fetch_row(j + fetched);
  }
};

// Weight (B) sources: pack(j0, nj, k0, kc, panel) writes panel[kk·2L + jj] = B(j0 + jj, k0 + kk)
// for jj < 2L (0 for jj >= nj), kk < kc; prefetch(j, k0, kc) asks for B(j, k0 .. k0 + kc) in L2
// (a no-op where that is not one run of memory).
template <class V, typename T>
struct RowsOf {  // B(j, k) = p[j·ld + k], T = float (f32), uint16_t with F16 or BF16 values
  const T* p;
  size_t ld;
  bool bf16 = false;
  typename V::F load_row(const T* q, int64_t n) const {
    constexpr int L = V::kLanes;
    if constexpr (std::is_same_v<T, float>) {
      return n == L ? V::load(q) : load_first<V>(q, static_cast<int>(n));
    } else {
      if (n == L) return bf16 ? V::bf16(q) : V::f16(q);
      alignas(64) uint16_t tmp[L] = {};
      std::memcpy(tmp, q, static_cast<size_t>(n) * sizeof(uint16_t));
      return bf16 ? V::bf16(tmp) : V::f16(tmp);
    }
  }
  void prefetch(int64_t j, int64_t k0, int64_t kc) const {
    prefetch_l2(p + static_cast<size_t>(j) * ld + static_cast<size_t>(k0), static_cast<size_t>(kc) * sizeof(T));
  }
  void pack(int64_t j0, int64_t nj, int64_t k0, int64_t kc, float* panel) const {
    constexpr int L = V::kLanes;
    for (int64_t jj0 = 0; jj0 < 2 * L; jj0 += L) {
      for (int64_t kk0 = 0; kk0 < kc; kk0 += L) {
        const int64_t nk = std::min<int64_t>(L, kc - kk0);
        typename V::F r[L];
        KAKEYA_UNROLL_TOKENS
        for (int i = 0; i < L; ++i) {
          const int64_t j = jj0 + i;
          r[i] = j < nj ? load_row(p + static_cast<size_t>(j0 + j) * ld + static_cast<size_t>(k0 + kk0), nk)
                        : V::fzero();
        }
        V::transpose(r);
        if (nk == L) {
          KAKEYA_UNROLL_TOKENS
          for (int q = 0; q < L; ++q) V::store(panel + (kk0 + q) * 2 * L + jj0, r[q]);
        } else {
          for (int64_t q = 0; q < nk; ++q) V::store(panel + (kk0 + q) * 2 * L + jj0, r[q]);
        }
      }
    }
  }
};
template <class V>
struct ColsF32 {  // B(j, k) = p[k·ld + j]
  const float* p;
  size_t ld;
  void prefetch(int64_t, int64_t, int64_t) const {}
  void pack(int64_t j0, int64_t nj, int64_t k0, int64_t kc, float* panel) const {
    constexpr int L = V::kLanes;
    for (int64_t kk = 0; kk < kc; ++kk) {
      const float* row = p + static_cast<size_t>(k0 + kk) * ld + static_cast<size_t>(j0);
      float* out = panel + kk * 2 * L;
      if (nj == 2 * L) {
        V::store(out, V::load(row));
        V::store(out + L, V::load(row + L));
      } else {
        V::store(out, nj >= L ? V::load(row) : load_first<V>(row, static_cast<int>(nj)));
        V::store(out + L, nj > L ? load_first<V>(row + L, static_cast<int>(nj - L)) : V::fzero());
      }
    }
  }
};

// C[i][0, nj) (+)= Σ_kk a[i][kk] · panel[kk][·] for MR tokens; alpha applied when `last`.
template <class V, int MR>
void float_micro(int64_t kc, const float* a, size_t lda, const float* panel, float* c, size_t ldc, int64_t nj,
                 bool first, bool last, float alpha) {
  constexpr int L = V::kLanes;
  using F = typename V::F;
  F acc[MR][2];
  const int live0 = static_cast<int>(std::min<int64_t>(L, nj)), live1 = static_cast<int>(std::max<int64_t>(0, nj - L));
  KAKEYA_UNROLL_TOKENS
  for (int i = 0; i < MR; ++i) {
    float* ci = c + static_cast<size_t>(i) * ldc;
    acc[i][0] = first ? V::fzero() : load_first<V>(ci, live0);
    acc[i][1] = first || live1 == 0 ? V::fzero() : load_first<V>(ci + L, live1);
  }
  for (int64_t kk = 0; kk < kc; ++kk) {
    const F b0 = V::load(panel + kk * 2 * L), b1 = V::load(panel + kk * 2 * L + L);
    KAKEYA_UNROLL_TOKENS
    for (int i = 0; i < MR; ++i) {
      const F ai = V::set1(a[static_cast<size_t>(i) * lda + static_cast<size_t>(kk)]);
      acc[i][0] = V::fmadd(ai, b0, acc[i][0]);
      acc[i][1] = V::fmadd(ai, b1, acc[i][1]);
    }
  }
  const F va = V::set1(alpha);
  KAKEYA_UNROLL_TOKENS
  for (int i = 0; i < MR; ++i) {
    float* ci = c + static_cast<size_t>(i) * ldc;
    if (last && alpha != 1.0f) {
      acc[i][0] = V::mul(acc[i][0], va);
      acc[i][1] = V::mul(acc[i][1], va);
    }
    store_first<V>(ci, acc[i][0], live0);
    if (live1 > 0) store_first<V>(ci + L, acc[i][1], live1);
  }
}

// The micro-kernel for `mr` (< MR) tokens: instantiations 1..MR.
template <class V, int MR>
void float_micro_n(int mr, int64_t kc, const float* a, size_t lda, const float* panel, float* c, size_t ldc,
                   int64_t nj, bool first, bool last, float alpha) {
  if constexpr (MR > 0) {
    if (mr == MR) return float_micro<V, MR>(kc, a, lda, panel, c, ldc, nj, first, last, alpha);
    float_micro_n<V, MR - 1>(mr, kc, a, lda, panel, c, ldc, nj, first, last, alpha);
  }
}

template <class V, class A, class B>
void float_gemm(int64_t m, int64_t n, int64_t k, float alpha, const A& a, const B& b, float* c, size_t ldc,
                GemmScratch& s) {
  constexpr int L = V::kLanes, MR = V::kFloatTokens;
  if (k == 0) {
    for (int64_t i = 0; i < m; ++i) std::fill_n(c + static_cast<size_t>(i) * ldc, n, 0.0f);
    return;
  }
  float* panel = s.get<float>(0, static_cast<size_t>(kKc * 2 * L));
  for (int64_t k0 = 0; k0 < k; k0 += kKc) {
    const int64_t kc = std::min(kKc, k - k0);
    size_t lda = 0;
    const float* ab = a.block(m, k0, kc, s, &lda);
    for (int64_t j0 = 0; j0 < n; j0 += 2 * L) {
      const int64_t nj = std::min<int64_t>(2 * L, n - j0);
      b.pack(j0, nj, k0, kc, panel);
      NextPanel next(j0, 2 * L, n, k0, kc, k, m, MR);
      const int64_t next_kc = std::min(kKc, k - next.k0);
      for (int64_t i0 = 0; i0 < m; i0 += MR) {
        const int mr = static_cast<int>(std::min<int64_t>(MR, m - i0));
        float_micro_n<V, MR>(mr, kc, ab + static_cast<size_t>(i0) * lda, lda, panel,
                             c + static_cast<size_t>(i0) * ldc + static_cast<size_t>(j0), ldc, nj, k0 == 0,
                             k0 + kc == k, alpha);
        next.after_tile([&](int64_t j) { b.prefetch(j, next.k0, next_kc); });
      }
    }
  }
}

template <class V>
void x86_gemm_f32(int64_t m, int64_t n, int64_t k, float alpha, const float* a, size_t lda, const float* b, size_t ldb,
                  bool b_rows, float* c, size_t ldc, GemmScratch& s) {
  if (b_rows) {
    float_gemm<V>(m, n, k, alpha, F32Matrix{a, lda}, RowsOf<V, float>{b, ldb}, c, ldc, s);
  } else {
    float_gemm<V>(m, n, k, alpha, F32Matrix{a, lda}, ColsF32<V>{b, ldb}, c, ldc, s);
  }
}

// ================== float weights, tokens in lanes (blocks of 2L tokens and more) ==================
//
// The F32/F16/BF16 weight GEMM for blocks of tokens_in_lanes() tokens: the same products summed in the
// same order as float_gemm (one fma chain over k per output, starting from 0: every output bit is
// the same), with the operands' roles turned. Lanes run across TOKENS: the activations are
// transposed once per k block into token tiles (token_tiles: [tile][kk][2L], 2L tokens a tile),
// shared by every weight row of the call, and each of NR = V::kFloatTokens weight rows broadcasts
// its value against a tile. The weight panel is then NR rows × kc values widened to f32 where they
// lie (F32 rows are read in place, with no panel), with no transpose: float_gemm transposes every
// 2L-row panel (L×L register transposes), 12% of a one-thread F16 pp128 profile's samples on the
// Intel Xeon VM (16% of the GEMM's), mostly waiting on the 2L rows' strided loads. The outputs
// are accumulated in a transposed frame (ct [rows][tokens], whole vectors) and transposed into y
// as the last k block finishes them.
// Alternating in one process on the Intel Xeon VM, one thread, 2048-wide F16 weights from memory
// (101 matrices cycled), best of 200 calls: 1408 rows × 128 tokens 1.06-1.08x the rows-in-lanes
// kernel, × 256 tokens 1.01x, × 64 tokens 1.03x; BF16 by FMA 1.06x, by vdpbf16ps 1.02x.

// Whether a block of m tokens runs with the tokens in the lanes: whole tiles of 2L tokens, or a
// last tile at least three-quarters full, or exactly one half tile (a last tile with fewer tokens
// computes too many empty lanes: 40 tokens on AVX-512 ran 0.93x the rows-in-lanes kernel).
template <class V>
constexpr bool tokens_in_lanes(int64_t m) {
  constexpr int64_t L = V::kLanes;
  const int64_t r = m % (2 * L);
  return m >= 2 * L && (r == 0 || r == L || 2 * r >= 3 * L);
}

// 32-bit words w(t, kk) of tokens t < m, kk < kc, into tiles[t / 2L][kk][t % 2L] (tile stride
// kKc · 2L; the words of tokens past m, up to the next multiple of L, are 0). row(t, dst) writes
// token t's kc words to dst. tmp: L · kKc words of scratch. Words are moved, never computed on, so
// any bit pattern (a pair of bf16 values) passes unchanged.
template <class V, class Row>
void token_tiles(int64_t m, int64_t kc, const Row& row, float* tiles, float* tmp) {
  constexpr int L = V::kLanes;
  const int64_t kcl = (kc + L - 1) / L * L;
  for (int64_t t0 = 0; t0 < m; t0 += L) {
    for (int64_t i = 0; i < L; ++i) {
      float* dst = tmp + i * kcl;
      if (t0 + i < m) {
        row(t0 + i, dst);
        std::fill(dst + kc, dst + kcl, 0.0f);
      } else {
        std::fill_n(dst, kcl, 0.0f);
      }
    }
    float* tile = tiles + (t0 / (2 * L)) * kKc * 2 * L + (t0 / L % 2) * L;
    for (int64_t kk0 = 0; kk0 < kc; kk0 += L) {
      typename V::F r[L];
      KAKEYA_UNROLL_TOKENS
      for (int i = 0; i < L; ++i) r[i] = V::load(tmp + i * kcl + kk0);
      V::transpose(r);
      const int64_t nk = std::min<int64_t>(L, kc - kk0);
      for (int64_t q = 0; q < nk; ++q) V::store(tile + (kk0 + q) * 2 * L, r[static_cast<int>(q)]);
    }
  }
}

// y[t·ldy + j] = ct[j·ldc + t] for j < n, t < m (ct: whole vectors of L tokens, ldc a multiple of L).
template <class V>
void store_transposed(const float* ct, size_t ldc, int64_t n, int64_t m, float* y, size_t ldy) {
  constexpr int L = V::kLanes;
  for (int64_t j0 = 0; j0 < n; j0 += L) {
    const int live = static_cast<int>(std::min<int64_t>(L, n - j0));
    for (int64_t t0 = 0; t0 < m; t0 += L) {
      typename V::F r[L];
      KAKEYA_UNROLL_TOKENS
      for (int i = 0; i < L; ++i) r[i] = i < live ? V::load(ct + static_cast<size_t>(j0 + i) * ldc + t0) : V::fzero();
      V::transpose(r);
      const int64_t nt = std::min<int64_t>(L, m - t0);
      for (int64_t q = 0; q < nt; ++q)
        store_first<V>(y + static_cast<size_t>(t0 + q) * ldy + static_cast<size_t>(j0), r[static_cast<int>(q)], live);
    }
  }
}

// Stores ct's rows into y (store_transposed) in groups of L as the last k block finishes them,
// while they are still in cache (at the end, 3% of a one-thread F16 pp512 profile).
template <class V>
struct TransposedStore {
  const float* ct;
  size_t ldc;
  int64_t n, m;
  float* y;
  size_t ldy;
  int64_t done = 0;
  // Rows [0, rows) of ct hold their final values.
  void upto(int64_t rows) {
    constexpr int64_t L = V::kLanes;
    rows = std::min(rows, n);
    while (done + L <= rows || (done < rows && rows == n)) {
      const int64_t nr = std::min(L, n - done);
      store_transposed<V>(ct + static_cast<size_t>(done) * ldc, ldc, nr, m, y + done, ldy);
      done += nr;
    }
  }
};

// ct[r·ldc + v·L + lane] (+)= Σ_kk panel[r·ldp + kk] · tile[kk·2L + v·L + lane] for NR rows and TV
// token vectors.
template <class V, int NR, int TV>
void float_micro_tokens(int64_t kc, const float* tile, const float* panel, size_t ldp, float* ct, size_t ldc,
                        bool first) {
  constexpr int L = V::kLanes;
  using F = typename V::F;
  F acc[NR][TV];
  KAKEYA_UNROLL_TOKENS
  for (int r = 0; r < NR; ++r)
    for (int v = 0; v < TV; ++v) acc[r][v] = first ? V::fzero() : V::load(ct + static_cast<size_t>(r) * ldc + v * L);
  for (int64_t kk = 0; kk < kc; ++kk) {
    F x[TV];
    for (int v = 0; v < TV; ++v) x[v] = V::load(tile + kk * 2 * L + v * L);
    KAKEYA_UNROLL_TOKENS
    for (int r = 0; r < NR; ++r) {
      const F wr = V::set1(panel[r * ldp + kk]);
      for (int v = 0; v < TV; ++v) acc[r][v] = V::fmadd(wr, x[v], acc[r][v]);
    }
  }
  KAKEYA_UNROLL_TOKENS
  for (int r = 0; r < NR; ++r)
    for (int v = 0; v < TV; ++v) V::store(ct + static_cast<size_t>(r) * ldc + v * L, acc[r][v]);
}

// What the tokens-in-lanes kernels share: per k block, the token tiles (token_tiles); per panel of
// NR weight rows, its micro-kernel over every tile, TV = 2 vectors of tokens or 1 for a last half
// tile; the outputs accumulated in ct [rows rounded up to NR][tokens rounded up to L] and stored
// into y as the last k block finishes each group of rows. Scratch slots 1-3 (0 is the caller's
// panel).
template <class V, int NR>
struct TokensInLanes {
  static constexpr int L = V::kLanes;
  int64_t m, n, mp, n_tiles;
  float *tiles, *ct, *tmp;
  size_t ldc;
  TransposedStore<V> out;
  TokensInLanes(int64_t m_, int64_t n_, float* y, size_t ldy, GemmScratch& s)
      : m(m_),
        n(n_),
        mp((m_ + L - 1) / L * L),
        n_tiles((m_ + 2 * L - 1) / (2 * L)),
        tiles(s.get<float>(1, static_cast<size_t>(n_tiles * kKc * 2 * L))),
        ct(s.get<float>(2, static_cast<size_t>((n_ + NR - 1) / NR * NR * mp))),
        tmp(s.get<float>(3, static_cast<size_t>(L * kKc))),
        ldc(static_cast<size_t>(mp)),
        out{ct, ldc, n_, m_, y, ldy} {}
  // The panel of rows [j0, j0 + NR), `width` words each, as the micro-kernels read it: rows `ld`
  // words apart from `p`. `in_place` (nullptr: none) is row j0's first word where the weights
  // already lie in that form, their rows `in_place_ld` words apart: used when all NR rows lie
  // below n. Otherwise row(j, dst) fills the rows below n into `buf` (`stride` words apart) and
  // the rest are zeros.
  template <class T>
  struct Panel {
    const T* p;
    size_t ld;
  };
  template <class T, class Row>
  Panel<T> panel(T* buf, size_t stride, const T* in_place, size_t in_place_ld, int64_t j0, int64_t width,
                 const Row& row) const {
    if (in_place != nullptr && j0 + NR <= n) return {in_place, in_place_ld};
    for (int64_t r = 0; r < NR; ++r) {
      T* dst = buf + static_cast<size_t>(r) * stride;
      if (j0 + r < n) {
        row(j0 + r, dst);
      } else {
        std::fill_n(dst, width, T{});
      }
    }
    return {buf, stride};
  }
  // micro(tile, c, full) for the tiles of panel j0 (c: its outputs in ct, ldc apart; full: 2L
  // tokens, else L), after_tile() after each; then the rows finished when `last_k_block`.
  template <class Micro, class AfterTile>
  void panel_tiles(int64_t j0, bool last_k_block, const Micro& micro, const AfterTile& after_tile) {
    for (int64_t i = 0; i < n_tiles; ++i) {
      micro(tiles + i * kKc * 2 * L, ct + static_cast<size_t>(j0) * ldc + static_cast<size_t>(i * 2 * L),
            mp - i * 2 * L >= 2 * L);
      after_tile();
    }
    if (last_k_block) out.upto(j0 + NR);
  }
};

template <class V>
void float_weights_gemm_tokens(const GemmWeights& w, int64_t r0, int64_t r1, const ActivationBuffer* acts, int64_t m,
                               float* y, size_t ldy, GemmScratch& s) {
  constexpr int L = V::kLanes, NR = V::kFloatTokens;
  const int64_t n = r1 - r0, k = w.n;
  const size_t stride = ggml_row_bytes(w.type, k), elem = w.type == GgmlType::F32 ? 4 : 2;
  const uint8_t* first = w.rows + static_cast<size_t>(r0) * stride;
  float* panel = s.get<float>(0, static_cast<size_t>(NR * kKc));
  TokensInLanes<V, NR> f(m, n, y, ldy, s);
  for (int64_t k0 = 0; k0 < k; k0 += kKc) {
    const int64_t kc = std::min(kKc, k - k0);
    token_tiles<V>(
        m, kc, [&](int64_t t, float* dst) { ActRows::convert_token<V>(acts[t], k0, kc, dst); }, f.tiles, f.tmp);
    for (int64_t j0 = 0; j0 < n; j0 += NR) {
      // F32 rows are read where they lie, but for a last panel past the rows; F16 and BF16 ones
      // are widened into the panel. Reading F32 rows in place instead of copying each panel ran
      // 1.05-1.09x at 128 tokens and 1.14-1.20x at 64, about 1.0x at 512 (one process
      // alternating, Intel Xeon VM, one thread, 2048 x 2048 weights in L3 and from memory).
      // Padding the copied panel's rows off multiples of 4 KiB (against load/store aliasing)
      // changed nothing for F16.
      const float* in_place =
          w.type == GgmlType::F32 ? reinterpret_cast<const float*>(first + static_cast<size_t>(j0) * stride) + k0
                                  : nullptr;
      const auto pw = f.panel(panel, kKc, in_place, stride / 4, j0, kc, [&](int64_t j, float* dst) {
        ActRows::convert<V>(w.type, first + static_cast<size_t>(j) * stride + static_cast<size_t>(k0) * elem, kc, dst);
      });
      NextPanel next(j0, NR, n, k0, kc, k, m, 2 * L);
      const size_t next_bytes = static_cast<size_t>(std::min(kKc, k - next.k0)) * elem;
      f.panel_tiles(
          j0, k0 + kc == k,
          [&](const float* tile, float* c, bool full) {
            if (full) {
              float_micro_tokens<V, NR, 2>(kc, tile, pw.p, pw.ld, c, f.ldc, k0 == 0);
            } else {
              float_micro_tokens<V, NR, 1>(kc, tile, pw.p, pw.ld, c, f.ldc, k0 == 0);
            }
          },
          [&] {
            next.after_tile([&](int64_t j) {
              prefetch_l2(first + static_cast<size_t>(j) * stride + static_cast<size_t>(next.k0) * elem, next_bytes);
            });
          });
    }
  }
}

// F32 / F16 / BF16 weights against their decode activations.
template <class V>
void float_weights_gemm(const GemmWeights& w, int64_t r0, int64_t r1, const ActivationBuffer* acts, int64_t n_tokens,
                        float* y, size_t ldy, GemmScratch& s) {
  if (w.n > 0 && tokens_in_lanes<V>(n_tokens)) return float_weights_gemm_tokens<V>(w, r0, r1, acts, n_tokens, y, ldy, s);
  const size_t stride = ggml_row_bytes(w.type, w.n);
  const uint8_t* first = w.rows + static_cast<size_t>(r0) * stride;
  const ActBlock<V> a{acts};
  if (w.type == GgmlType::F32) {
    float_gemm<V>(n_tokens, r1 - r0, w.n, 1.0f, a, RowsOf<V, float>{reinterpret_cast<const float*>(first), stride / 4},
                  y, ldy, s);
  } else {
    const RowsOf<V, uint16_t> b{reinterpret_cast<const uint16_t*>(first), stride / 2, w.type == GgmlType::BF16};
    float_gemm<V>(n_tokens, r1 - r0, w.n, 1.0f, a, b, y, ldy, s);
  }
}

// ======================= integer sums of the quantized kernels =======================

// For every token i < MR of a micro-kernel: s = start(i), s = dot(s, c, i) for each chunk c < C of
// the block, then finish(s, i). The sums are exact int32, so the order changes only the schedule,
// never a bit of the result. With V::kChunksOuter (AVX-512, 32 registers) the tokens are the inner
// loop: MR independent vpdpbusd chains in flight, where token by token each sum is a chain of C
// dependent instructions of 5 cycles each (pp128 on one thread, alternating: Q8_0 127 -> 143-147
// tok/s, Q4_0 145-149 -> 162-170, Q4_K 118-123 -> 132-135). AVX2 keeps the token-outer order:
// with 16 registers the MR sums the other order holds spill (packed Q4_0 GEMM -13%).
template <class V, int MR, int C, class Start, class Dot, class Finish>
__attribute__((always_inline)) inline void block_sums(Start start, Dot dot, Finish finish) {
  using I = typename V::I;
  if constexpr (V::kChunksOuter) {
    I s[MR];
    KAKEYA_UNROLL_TOKENS
    for (int i = 0; i < MR; ++i) s[i] = start(i);
    KAKEYA_UNROLL_CHUNKS
    for (int c = 0; c < C; ++c) {
      KAKEYA_UNROLL_TOKENS
      for (int i = 0; i < MR; ++i) s[i] = dot(s[i], c, i);
    }
    KAKEYA_UNROLL_TOKENS
    for (int i = 0; i < MR; ++i) finish(s[i], i);
  } else {
    KAKEYA_UNROLL_TOKENS
    for (int i = 0; i < MR; ++i) {
      I si = start(i);
      KAKEYA_UNROLL_CHUNKS
      for (int c = 0; c < C; ++c) si = dot(si, c, i);
      finish(si, i);
    }
  }
}

// ============================ packed Q4_0 / Q8_0 ============================

// Per token and block: the activation scale as f32 and the start value of the block's int32 sum
// (−8·Σqy for Q4_0's unsigned nibbles; V::kS8Start·Σqy for Q8_0).
struct Q8Blocks {
  float* da;
  int32_t* start;
};
template <class V>
Q8Blocks q8_block_terms(GgmlType type, const ActivationBuffer* acts, int64_t n_tokens, int64_t nb, GemmScratch& s) {
  Q8Blocks t{s.get<float>(2, static_cast<size_t>(n_tokens * nb)), s.get<int32_t>(3, static_cast<size_t>(n_tokens * nb))};
  const int32_t offset = type == GgmlType::Q4_0 ? -8 : V::kS8Start;
  for (int64_t i = 0; i < n_tokens; ++i) {
    const auto* blocks = reinterpret_cast<const BlockQ8_0*>(acts[i].bytes.data());
    for (int64_t b = 0; b < nb; ++b) {
      t.da[i * nb + b] = _cvtsh_ss(blocks[b].d);
      t.start[i * nb + b] = offset * acts[i].block_sums[static_cast<size_t>(b)];
    }
  }
  return t;
}

// One L-row slice (`half` of a 16-row packed group) for MR tokens: out[i] = the rows' values for
// token i, each row's f32 chain exactly as the decode kernels compute it.
template <class V, GgmlType T, int MR>
void packed_micro(const uint8_t* group, int half, int64_t nb, const ActivationBuffer* const* acts, const float* da,
                  const int32_t* start, typename V::F* out) {
  using F = typename V::F;
  using I = typename V::I;
  constexpr int L = V::kLanes;
  F acc[MR];
  KAKEYA_UNROLL_TOKENS
  for (int i = 0; i < MR; ++i) acc[i] = V::fzero();
  const BlockQ8_0* a[MR];
  KAKEYA_UNROLL_TOKENS
  for (int i = 0; i < MR; ++i) a[i] = reinterpret_cast<const BlockQ8_0*>(acts[i]->bytes.data());
  const size_t lane_off = static_cast<size_t>(half) * L * 4;
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* q = group + detail::packed_quants_offset(T, b) + lane_off;
    const F dw = V::f16(reinterpret_cast<const uint16_t*>(group + detail::packed_scales_offset(T, b)) + half * L);
    if constexpr (T == GgmlType::Q4_0) {
      const I low4 = V::bset1(0x0F);
      I lo[4], hi[4];
      KAKEYA_UNROLL_CHUNKS
      for (int c = 0; c < 4; ++c) {
        const I v = V::iload(q + 64 * c);
        lo[c] = V::band(v, low4);
        hi[c] = V::band(V::srli16(v, 4), low4);
      }
      block_sums<V, MR, 4>(
          [&](int i) { return V::iset1(start[i * nb + b]); },
          [&](I si, int c, int i) {
            si = V::dot_u8s8(si, lo[c], V::iset1(x86_load_i32(a[i][b].qs + 4 * c)));
            return V::dot_u8s8(si, hi[c], V::iset1(x86_load_i32(a[i][b].qs + 16 + 4 * c)));
          },
          [&](I si, int i) { acc[i] = V::fmadd(V::cvt(si), V::mul(dw, V::set1(da[i * nb + b])), acc[i]); });
    } else {
      I w[8];
      KAKEYA_UNROLL_CHUNKS
      for (int c = 0; c < 8; ++c) w[c] = V::s8_operand(V::iload(q + 64 * c));
      block_sums<V, MR, 8>(
          [&](int i) { return V::iset1(start[i * nb + b]); },
          [&](I si, int c, int i) { return V::dot_s8s8(si, w[c], V::iset1(x86_load_i32(a[i][b].qs + 4 * c))); },
          [&](I si, int i) {
            const F p = V::keep(V::mul(V::cvt(si), V::mul(dw, V::set1(da[i * nb + b]))));
            acc[i] = V::add(acc[i], p);
          });
    }
  }
  KAKEYA_UNROLL_TOKENS
  for (int i = 0; i < MR; ++i) out[i] = acc[i];
}

template <class V, GgmlType T, int MR>
void packed_micro_n(int mr, const uint8_t* group, int half, int64_t nb, const ActivationBuffer* const* acts,
                    const float* da, const int32_t* start, typename V::F* out) {
  if constexpr (MR > 0) {
    if (mr == MR) return packed_micro<V, T, MR>(group, half, nb, acts, da, start, out);
    packed_micro_n<V, T, MR - 1>(mr, group, half, nb, acts, da, start, out);
  }
}

// The packed group of Q4_0/Q8_0 rows [g0, g0 + 16): read in place when the matrix is packed (g0 a
// multiple of 16), else rows [g0, min(g0 + 16, r1)) of the row-major matrix packed into `own`
// (packed_group_bytes long).
inline const uint8_t* packed_group_at(const GemmWeights& w, int64_t g0, int64_t r1, uint8_t* own) {
  if (w.packed != nullptr) return w.packed + static_cast<size_t>(g0 / kPackRows) * detail::packed_group_bytes(w.type, w.n);
  pack_rows(w.type, w.rows + static_cast<size_t>(g0) * ggml_row_bytes(w.type, w.n), w.n,
            std::min<int64_t>(kPackRows, r1 - g0), own);
  return own;
}

// Rows [r0, r1) of a Q4_0/Q8_0 matrix: packed groups read in place, or row-major rows packed here
// a group at a time (groups then start at r0).
template <class V, GgmlType T>
void packed_gemm(const GemmWeights& w, int64_t r0, int64_t r1, const ActivationBuffer* acts, int64_t n_tokens,
                 float* y, size_t ldy, GemmScratch& s) {
  constexpr int L = V::kLanes, MR = V::kPackedTokens;
  const int64_t nb = w.n / 32;
  const size_t gbytes = detail::packed_group_bytes(T, w.n);
  const Q8Blocks terms = q8_block_terms<V>(T, acts, n_tokens, nb, s);
  const ActivationBuffer* tok[MR];
  uint8_t* own = w.packed == nullptr ? s.get<uint8_t>(4, gbytes) : nullptr;
  // Group g covers rows [base + 16g, base + 16g + 16).
  const int64_t base = w.packed != nullptr ? r0 / kPackRows * kPackRows : r0;
  for (int64_t g0 = base; g0 < r1; g0 += kPackRows) {
    const uint8_t* group = packed_group_at(w, g0, r1, own);
    for (int half = 0; half < kPackRows / L; ++half) {
      const int64_t row0 = g0 + half * L;
      const int64_t lo = std::max(r0, row0), hi = std::min(r1, row0 + L);  // rows of this slice to store
      if (lo >= hi) continue;
      for (int64_t t0 = 0; t0 < n_tokens; t0 += MR) {
        const int mr = static_cast<int>(std::min<int64_t>(MR, n_tokens - t0));
        for (int i = 0; i < mr; ++i) tok[i] = acts + t0 + i;
        typename V::F out[MR];
        packed_micro_n<V, T, MR>(mr, group, half, nb, tok, terms.da + t0 * nb, terms.start + t0 * nb, out);
        for (int i = 0; i < mr; ++i) {
          float* yrow = y + static_cast<size_t>(t0 + i) * ldy;
          if (lo == row0 && hi == row0 + L) {
            V::store(yrow + (row0 - r0), out[i]);
          } else {
            alignas(64) float tmp[L];
            V::store(tmp, out[i]);
            for (int64_t r = lo; r < hi; ++r) yrow[r - r0] = tmp[r - row0];
          }
        }
      }
    }
  }
}

// ============================== Q4_K / Q6_K ==============================

constexpr int64_t kSuperBlocks = 4;  // super-blocks per converted tile (L rows × 1024 values)

// Per-row bytes of one super-block in chunk order (dword c = elements 4c..4c+3, as u8 values),
// then transposed into tile[c][L] dwords for L rows.
template <class V>
void transpose_chunks(const uint32_t* rows /*[L][64]*/, uint32_t* tile /*[64][L]*/) {
  constexpr int L = V::kLanes;
  for (int c0 = 0; c0 < 64; c0 += L) {
    typename V::F r[L];
    for (int i = 0; i < L; ++i) r[i] = V::load(reinterpret_cast<const float*>(rows + i * 64 + c0));
    V::transpose(r);
    for (int c = 0; c < L; ++c) V::store(reinterpret_cast<float*>(tile + (c0 + c) * L), r[c]);
  }
}

// Converted tiles, per super-block s of the tile (all [..][L] per-row vectors):
//   Q4_K: q [64][L] u8×4 (nibbles 0..15), sc [8][L] i32, mins [4][L] (i16 m_2p | m_2p+1 << 16),
//         d [L] f32, dmin [L] f32
//   Q6_K: q [64][L] u8×4 (0..63), sc [16][L] i32, scp [8][L] (i16 sc_2p | sc_2p+1 << 16), d [L] f32
template <int L>
struct Q4kTile {
  static constexpr size_t kWords = 64 * L + 8 * L + 4 * L + L + L;  // 32-bit words per super-block
  static uint32_t* q(uint32_t* t) { return t; }
  static uint32_t* sc(uint32_t* t) { return t + 64 * L; }
  static uint32_t* mins(uint32_t* t) { return t + 72 * L; }
  static float* d(uint32_t* t) { return reinterpret_cast<float*>(t + 76 * L); }
  static float* dmin(uint32_t* t) { return reinterpret_cast<float*>(t + 77 * L); }
};
template <int L>
struct Q6kTile {
  static constexpr size_t kWords = 64 * L + 16 * L + 8 * L + L;
  static uint32_t* q(uint32_t* t) { return t; }
  static uint32_t* sc(uint32_t* t) { return t + 64 * L; }
  static uint32_t* scp(uint32_t* t) { return t + 80 * L; }
  static float* d(uint32_t* t) { return reinterpret_cast<float*>(t + 88 * L); }
};

inline uint32_t i16_pair(int lo, int hi) {
  return static_cast<uint32_t>(static_cast<uint16_t>(lo)) | (static_cast<uint32_t>(static_cast<uint16_t>(hi)) << 16);
}

// One row's super-block in chunk order (64 dwords) and its scale words (tile column i).
template <class V>
void q4k_row(const BlockQ4_K& x, uint32_t* chunks, uint32_t* tile, int i) {
  constexpr int L = V::kLanes;
  using T = Q4kTile<L>;
  const __m256i low4 = _mm256_set1_epi8(0x0F);
  for (int j2 = 0; j2 < 4; ++j2) {
    const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.qs + 32 * j2));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(chunks + 16 * j2), _mm256_and_si256(b, low4));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(chunks + 16 * j2 + 8), _mm256_and_si256(_mm256_srli_epi16(b, 4), low4));
  }
  for (int j = 0; j < 8; ++j) {
    uint8_t sc, m;
    q4k_scale_min(j, x.scales, &sc, &m);
    T::sc(tile)[j * L + i] = sc;
    if (j % 2 == 0) {
      uint8_t sc2, m2;
      q4k_scale_min(j + 1, x.scales, &sc2, &m2);
      T::mins(tile)[(j / 2) * L + i] = i16_pair(m, m2);
    }
  }
  T::d(tile)[i] = _cvtsh_ss(x.d);
  T::dmin(tile)[i] = _cvtsh_ss(x.dmin);
}

template <class V>
void q6k_row(const BlockQ6_K& x, uint32_t* chunks, uint32_t* tile, int i) {
  constexpr int L = V::kLanes;
  using T = Q6kTile<L>;
  const __m256i low4 = _mm256_set1_epi8(0x0F), low2 = _mm256_set1_epi8(0x03);
  for (int h = 0; h < 2; ++h) {
    const __m256i l0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.ql + 64 * h));
    const __m256i l1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.ql + 64 * h + 32));
    const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.qh + 32 * h));
    const __m256i q[4] = {
        _mm256_or_si256(_mm256_and_si256(l0, low4), _mm256_slli_epi16(_mm256_and_si256(qh, low2), 4)),
        _mm256_or_si256(_mm256_and_si256(l1, low4), _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2), low2), 4)),
        _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), low4),
                        _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 4), low2), 4)),
        _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), low4),
                        _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 6), low2), 4))};
    for (int g = 0; g < 4; ++g) _mm256_storeu_si256(reinterpret_cast<__m256i*>(chunks + 32 * h + 8 * g), q[g]);
  }
  for (int g = 0; g < 16; ++g) T::sc(tile)[g * L + i] = static_cast<uint32_t>(static_cast<int32_t>(x.scales[g]));
  for (int p = 0; p < 8; ++p) T::scp(tile)[p * L + i] = i16_pair(x.scales[2 * p], x.scales[2 * p + 1]);
  T::d(tile)[i] = _cvtsh_ss(x.d);
}

// Converts rows [row0, row0 + live) × super-blocks [sb0, sb0 + ns) into `tile` (rows >= live zero).
template <class V, GgmlType T>
void kquant_tile(const uint8_t* rows, size_t stride, int64_t row0, int live, int64_t sb0, int64_t ns, uint32_t* tile,
                 uint32_t* chunks) {
  constexpr int L = V::kLanes;
  constexpr size_t words = T == GgmlType::Q4_K ? Q4kTile<L>::kWords : Q6kTile<L>::kWords;
  constexpr size_t block = T == GgmlType::Q4_K ? sizeof(BlockQ4_K) : sizeof(BlockQ6_K);
  for (int64_t s = 0; s < ns; ++s) {
    uint32_t* t = tile + static_cast<size_t>(s) * words;
    if (live < L) {  // (each live row writes all of its words)
      std::memset(t, 0, words * 4);
      std::memset(chunks, 0, static_cast<size_t>(L) * 64 * 4);
    }
    for (int i = 0; i < live; ++i) {
      const uint8_t* blk = rows + static_cast<size_t>(row0 + i) * stride + static_cast<size_t>(sb0 + s) * block;
      if constexpr (T == GgmlType::Q4_K) {
        q4k_row<V>(*reinterpret_cast<const BlockQ4_K*>(blk), chunks + i * 64, t, i);
      } else {
        q6k_row<V>(*reinterpret_cast<const BlockQ6_K*>(blk), chunks + i * 64, t, i);
      }
    }
    transpose_chunks<V>(chunks, t);
  }
}

// Per token and super-block: the activation scale d, and for Q4_K the int16 pairs of sums per 32
// (Σ of sub-blocks 2p and 2p+1, from the Q8_K sums per 16).
struct Q8kTerms {
  float* d;
  uint32_t* pairs;  // [token][super-block][4]
};
inline Q8kTerms q8k_terms(const ActivationBuffer* acts, int64_t n_tokens, int64_t nsb, GemmScratch& s) {
  Q8kTerms t{s.get<float>(2, static_cast<size_t>(n_tokens * nsb)), s.get<uint32_t>(3, static_cast<size_t>(n_tokens * nsb * 4))};
  for (int64_t i = 0; i < n_tokens; ++i) {
    const auto* blocks = reinterpret_cast<const BlockQ8_K*>(acts[i].bytes.data());
    for (int64_t sb = 0; sb < nsb; ++sb) {
      const BlockQ8_K& a = blocks[sb];
      t.d[i * nsb + sb] = a.d;
      for (int p = 0; p < 4; ++p) {
        t.pairs[(i * nsb + sb) * 4 + p] =
            i16_pair(a.bsums[4 * p] + a.bsums[4 * p + 1], a.bsums[4 * p + 2] + a.bsums[4 * p + 3]);
      }
    }
  }
  return t;
}

// MR tokens over the ns super-blocks of a tile: acc[i] continues each row's f32 chain.
template <class V, GgmlType T, int MR>
void kquant_micro(const uint32_t* tile, int64_t ns, int64_t sb0, int64_t nsb, const ActivationBuffer* const* acts,
                  const Q8kTerms& terms, int64_t t0, typename V::F* acc) {
  using F = typename V::F;
  using I = typename V::I;
  constexpr int L = V::kLanes;
  for (int64_t s = 0; s < ns; ++s) {
    const int64_t sb = sb0 + s;
    const BlockQ8_K* a[MR];
    KAKEYA_UNROLL_TOKENS
    for (int i = 0; i < MR; ++i) a[i] = reinterpret_cast<const BlockQ8_K*>(acts[i]->bytes.data()) + sb;
    I sumq[MR];
    KAKEYA_UNROLL_TOKENS
    for (int i = 0; i < MR; ++i) sumq[i] = V::izero();
    if constexpr (T == GgmlType::Q4_K) {
      using Tl = Q4kTile<L>;
      uint32_t* t = const_cast<uint32_t*>(tile) + static_cast<size_t>(s) * Tl::kWords;
      for (int j = 0; j < 8; ++j) {
        I w[8];
        KAKEYA_UNROLL_CHUNKS
        for (int c = 0; c < 8; ++c) w[c] = V::iload(Tl::q(t) + (8 * j + c) * L);
        const I sc = V::iload(Tl::sc(t) + j * L);
        block_sums<V, MR, 8>(
            [&](int) { return V::izero(); },
            [&](I d, int c, int i) { return V::dot_u8s8(d, w[c], V::iset1(x86_load_i32(a[i]->qs + 32 * j + 4 * c))); },
            [&](I d, int i) { sumq[i] = V::iadd(sumq[i], V::imullo(d, sc)); });
      }
      const F dw = V::load(Tl::d(t)), dmw = V::load(Tl::dmin(t));
      I mins[4];
      KAKEYA_UNROLL_CHUNKS
      for (int p = 0; p < 4; ++p) mins[p] = V::iload(Tl::mins(t) + p * L);
      KAKEYA_UNROLL_TOKENS
      for (int i = 0; i < MR; ++i) {
        const uint32_t* pairs = terms.pairs + ((t0 + i) * nsb + sb) * 4;
        I summ = V::izero();
        KAKEYA_UNROLL_CHUNKS
        for (int p = 0; p < 4; ++p) summ = V::dot_s16(summ, mins[p], V::iset1(static_cast<int32_t>(pairs[p])));
        const F yd = V::set1(terms.d[(t0 + i) * nsb + sb]);
        const F d = V::mul(dw, yd), dmin = V::mul(dmw, yd);
        const F v = V::sub(V::keep(V::mul(d, V::cvt(sumq[i]))), V::keep(V::mul(dmin, V::cvt(summ))));
        acc[i] = V::add(acc[i], V::keep(v));
      }
    } else {
      using Tl = Q6kTile<L>;
      uint32_t* t = const_cast<uint32_t*>(tile) + static_cast<size_t>(s) * Tl::kWords;
      for (int g = 0; g < 16; ++g) {
        I w[4];
        KAKEYA_UNROLL_CHUNKS
        for (int c = 0; c < 4; ++c) w[c] = V::iload(Tl::q(t) + (4 * g + c) * L);
        const I sc = V::iload(Tl::sc(t) + g * L);
        block_sums<V, MR, 4>(
            [&](int) { return V::izero(); },
            [&](I d, int c, int i) { return V::dot_u8s8(d, w[c], V::iset1(x86_load_i32(a[i]->qs + 16 * g + 4 * c))); },
            [&](I d, int i) { sumq[i] = V::iadd(sumq[i], V::imullo(d, sc)); });
      }
      const F dw = V::load(Tl::d(t));
      KAKEYA_UNROLL_TOKENS
      for (int i = 0; i < MR; ++i) {
        // Σ_g sc_g·(dot_g − 32·Σa_g): the offset of the unsigned 6-bit values, from the sums per 16.
        I off = V::izero();
        KAKEYA_UNROLL_CHUNKS
        for (int p = 0; p < 8; ++p) off = V::dot_s16(off, V::iload(Tl::scp(t) + p * L), V::iset1(x86_load_i32(a[i]->bsums + 2 * p)));
        const I sum = V::isub(sumq[i], V::islli(off, 5));
        const F d = V::mul(dw, V::set1(terms.d[(t0 + i) * nsb + sb]));
        acc[i] = V::add(acc[i], V::keep(V::mul(d, V::cvt(sum))));
      }
    }
  }
}

template <class V, GgmlType T, int MR>
void kquant_micro_n(int mr, const uint32_t* tile, int64_t ns, int64_t sb0, int64_t nsb,
                    const ActivationBuffer* const* acts, const Q8kTerms& terms, int64_t t0, typename V::F* acc) {
  if constexpr (MR > 0) {
    if (mr == MR) return kquant_micro<V, T, MR>(tile, ns, sb0, nsb, acts, terms, t0, acc);
    kquant_micro_n<V, T, MR - 1>(mr, tile, ns, sb0, nsb, acts, terms, t0, acc);
  }
}

template <class V, GgmlType T>
void kquant_gemm(const GemmWeights& w, int64_t r0, int64_t r1, const ActivationBuffer* acts, int64_t n_tokens,
                 float* y, size_t ldy, GemmScratch& s) {
  constexpr int L = V::kLanes, MR = V::kKquantTokens;
  constexpr size_t words = T == GgmlType::Q4_K ? Q4kTile<L>::kWords : Q6kTile<L>::kWords;
  const int64_t nsb = w.n / kQK_K;
  const size_t stride = ggml_row_bytes(T, w.n);
  const Q8kTerms terms = q8k_terms(acts, n_tokens, nsb, s);
  uint32_t* tile = s.get<uint32_t>(0, words * kSuperBlocks);
  uint32_t* chunks = s.get<uint32_t>(1, static_cast<size_t>(L) * 64);
  const ActivationBuffer* tok[MR];
  for (int64_t row0 = r0; row0 < r1; row0 += L) {
    const int live = static_cast<int>(std::min<int64_t>(L, r1 - row0));
    for (int64_t sb0 = 0; sb0 < nsb; sb0 += kSuperBlocks) {
      const int64_t ns = std::min(kSuperBlocks, nsb - sb0);
      kquant_tile<V, T>(w.rows, stride, row0, live, sb0, ns, tile, chunks);
      // The next rows' same super-blocks into L2 during these token tiles (NextPanel over rows
      // [r0, r1) within this block of super-blocks only), for kquant_tile to read from cache.
      NextPanel next(row0 - r0, L, r1 - r0, sb0, ns, sb0 + ns, n_tokens, MR);
      const size_t block = ggml_block_bytes(T);
      for (int64_t t0 = 0; t0 < n_tokens; t0 += MR) {
        const int mr = static_cast<int>(std::min<int64_t>(MR, n_tokens - t0));
        next.after_tile([&](int64_t j) {
          prefetch_l2(w.rows + static_cast<size_t>(r0 + j) * stride + static_cast<size_t>(sb0) * block,
                      static_cast<size_t>(ns) * block);
        });
        typename V::F acc[MR];
        for (int i = 0; i < mr; ++i) {
          tok[i] = acts + t0 + i;
          acc[i] = sb0 == 0 ? V::fzero() : load_first<V>(y + static_cast<size_t>(t0 + i) * ldy + (row0 - r0), live);
        }
        kquant_micro_n<V, T, MR>(mr, tile, ns, sb0, nsb, tok, terms, t0, acc);
        for (int i = 0; i < mr; ++i) store_first<V>(y + static_cast<size_t>(t0 + i) * ldy + (row0 - r0), acc[i], live);
      }
    }
  }
}

// ================================ dispatch ================================

inline bool x86_has_kernel(GgmlType type) {
  switch (type) {
    case GgmlType::F32:
    case GgmlType::F16:
    case GgmlType::BF16:
    case GgmlType::Q4_0:
    case GgmlType::Q8_0:
    case GgmlType::Q4_K:
    case GgmlType::Q6_K: return true;
    default: return false;
  }
}

// The x86 sets' decode kernels sum Q8_0 rows read row-major in f32 lanes (quant_avx2.cpp) and
// the dense types in their own lane orders: only those differ from the GEMM's rounding.
inline bool x86_matches_decode(GgmlType type, bool packed) {
  switch (type) {
    case GgmlType::F32:
    case GgmlType::F16:
    case GgmlType::BF16: return false;
    case GgmlType::Q8_0: return packed;
    default: return true;  // Q4_0, Q4_K, Q6_K: exact; the others run the decode kernels
  }
}

// gemm() of a set: `floats` runs F32/F16/BF16 weights.
using FloatWeightsGemm = void (*)(const GemmWeights&, int64_t, int64_t, const ActivationBuffer*, int64_t, float*,
                                  size_t, GemmScratch&);
template <class V>
void x86_gemm(const QuantKernels& set, FloatWeightsGemm floats, const GemmWeights& w, int64_t r0, int64_t r1,
              const ActivationBuffer* acts, int64_t n_tokens, float* y, size_t ldy, bool decode_exact,
              GemmScratch& s) {
  if (r1 <= r0 || n_tokens <= 0) return;
  if (decode_exact && !x86_matches_decode(w.type, w.packed != nullptr)) {
    detail::gemm_by_decode(set, w, r0, r1, acts, n_tokens, y, ldy);
    return;
  }
  switch (w.type) {
    case GgmlType::F32:
    case GgmlType::F16:
    case GgmlType::BF16: return floats(w, r0, r1, acts, n_tokens, y, ldy, s);
    case GgmlType::Q4_0: return packed_gemm<V, GgmlType::Q4_0>(w, r0, r1, acts, n_tokens, y, ldy, s);
    case GgmlType::Q8_0: return packed_gemm<V, GgmlType::Q8_0>(w, r0, r1, acts, n_tokens, y, ldy, s);
    case GgmlType::Q4_K: return kquant_gemm<V, GgmlType::Q4_K>(w, r0, r1, acts, n_tokens, y, ldy, s);
    case GgmlType::Q6_K: return kquant_gemm<V, GgmlType::Q6_K>(w, r0, r1, acts, n_tokens, y, ldy, s);
    default: detail::gemm_by_decode(set, w, r0, r1, acts, n_tokens, y, ldy);
  }
}

}  // namespace
}  // namespace kakeya::engine
