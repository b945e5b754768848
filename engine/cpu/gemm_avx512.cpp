// The AVX-512 GEMM set (gemm_x86.h with 16-lane vectors and VNNI byte products), plus BF16
// weights by vdpbf16ps on the CPUs where it outruns FMA (functions with that target attribute,
// entered only after cpu_features().avx512bf16). This file is compiled with AVX-512
// F/BW/VL/VNNI flags and entered only through detail::gemm_avx512*() after
// cpu_features().can_run_avx512().
// GCC 12 reports its own _mm512_undefined_* placeholders (inside _mm512_cvtph_ps and friends) as
// (maybe-)uninitialized once inlined; the intrinsics overwrite every lane.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

#include "engine/cpu/cpu_features.h"
#include "engine/cpu/gemm_x86.h"

namespace kakeya::engine {
namespace {

// ---- BF16 × BF16 by vdpbf16ps: acc += a[2p]·b[2p] + a[2p+1]·b[2p+1] per lane, products exact in
// f32 (8-bit significands), sums rounded to nearest even with denormals flushed (the
// instruction's definition). Panels hold pairs of k: panel[p][j] = (W[j][2p], W[j][2p+1]).

#define KAKEYA_BF16_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))

constexpr int64_t kPairsKc = kKc / 2;  // pairs of k per panel

// The dword panel of rows [j0, j0 + nj) (up to 32) × pairs [p0, p0 + np) of bf16 rows `w`
// (`ld` elements apart, `k` elements each; a missing second element of the last pair is 0).
void bf16_pack(const uint16_t* w, size_t ld, int64_t k, int64_t j0, int64_t nj, int64_t p0, int64_t np,
               uint32_t* panel) {
  for (int64_t jj0 = 0; jj0 < 32; jj0 += 16) {
    for (int64_t q0 = 0; q0 < np; q0 += 16) {
      const int64_t nq = std::min<int64_t>(16, np - q0);
      __m512 r[16];
      for (int i = 0; i < 16; ++i) {
        const int64_t j = jj0 + i;
        if (j >= nj) {
          r[i] = _mm512_setzero_ps();
          continue;
        }
        const uint16_t* src = w + static_cast<size_t>(j0 + j) * ld + static_cast<size_t>(2 * (p0 + q0));
        const int64_t elems = std::min<int64_t>(2 * nq, k - 2 * (p0 + q0));
        if (elems == 32) {
          r[i] = _mm512_loadu_ps(src);
        } else {
          alignas(64) uint16_t tmp[32] = {};
          std::memcpy(tmp, src, static_cast<size_t>(elems) * sizeof(uint16_t));
          r[i] = _mm512_load_ps(reinterpret_cast<const float*>(tmp));
        }
      }
      Vec512::transpose(r);
      for (int64_t q = 0; q < nq; ++q) _mm512_storeu_ps(reinterpret_cast<float*>(panel + (q0 + q) * 32 + jj0), r[q]);
    }
  }
}

template <int MR>
KAKEYA_BF16_TARGET void bf16_micro(int64_t np, const uint32_t* a, size_t lda, const uint32_t* panel, float* c,
                                   size_t ldc, int64_t nj, bool first) {
  __m512 acc[MR][2];
  const int live0 = static_cast<int>(std::min<int64_t>(16, nj)), live1 = static_cast<int>(std::max<int64_t>(0, nj - 16));
  KAKEYA_UNROLL_TOKENS
  for (int i = 0; i < MR; ++i) {
    float* ci = c + static_cast<size_t>(i) * ldc;
    acc[i][0] = first ? _mm512_setzero_ps() : load_first<Vec512>(ci, live0);
    acc[i][1] = first || live1 == 0 ? _mm512_setzero_ps() : load_first<Vec512>(ci + 16, live1);
  }
  for (int64_t p = 0; p < np; ++p) {
    const __m512bh b0 = (__m512bh)_mm512_loadu_si512(panel + p * 32);
    const __m512bh b1 = (__m512bh)_mm512_loadu_si512(panel + p * 32 + 16);
    KAKEYA_UNROLL_TOKENS
    for (int i = 0; i < MR; ++i) {
      const __m512bh ai = (__m512bh)_mm512_set1_epi32(static_cast<int>(a[static_cast<size_t>(i) * lda + static_cast<size_t>(p)]));
      acc[i][0] = _mm512_dpbf16_ps(acc[i][0], ai, b0);
      acc[i][1] = _mm512_dpbf16_ps(acc[i][1], ai, b1);
    }
  }
  KAKEYA_UNROLL_TOKENS
  for (int i = 0; i < MR; ++i) {
    float* ci = c + static_cast<size_t>(i) * ldc;
    store_first<Vec512>(ci, acc[i][0], live0);
    if (live1 > 0) store_first<Vec512>(ci + 16, acc[i][1], live1);
  }
}

template <int MR>
void bf16_micro_n(int mr, int64_t np, const uint32_t* a, size_t lda, const uint32_t* panel, float* c, size_t ldc,
                  int64_t nj, bool first) {
  if constexpr (MR > 0) {
    if (mr == MR) return bf16_micro<MR>(np, a, lda, panel, c, ldc, nj, first);
    bf16_micro_n<MR - 1>(mr, np, a, lda, panel, c, ldc, nj, first);
  }
}

// ct[r·ldc + v·16 + lane] (+)= Σ_p vdpbf16ps(panel pair [r][p], tile pair [p][v·16 + lane]) for
// Vec512::kFloatTokens rows and TV vectors of 16 tokens (tokens in the lanes, see below). The
// panel's rows of np pairs lie `ldp` pairs apart: a copy, or the weight rows where they lie
// (loaded by memcpy: the words are bf16 data).
template <int TV>
KAKEYA_BF16_TARGET void bf16_micro_tokens(int64_t np, const uint32_t* tile, const uint32_t* panel, size_t ldp,
                                          float* ct, size_t ldc, bool first) {
  constexpr int NR = Vec512::kFloatTokens;
  __m512 acc[NR][TV];
  KAKEYA_UNROLL_TOKENS
  for (int r = 0; r < NR; ++r)
    for (int v = 0; v < TV; ++v)
      acc[r][v] = first ? _mm512_setzero_ps() : _mm512_loadu_ps(ct + static_cast<size_t>(r) * ldc + v * 16);
  for (int64_t p = 0; p < np; ++p) {
    __m512bh x[TV];
    for (int v = 0; v < TV; ++v) x[v] = (__m512bh)_mm512_loadu_si512(tile + p * 32 + v * 16);
    KAKEYA_UNROLL_TOKENS
    for (int r = 0; r < NR; ++r) {
      const __m512bh wr = (__m512bh)_mm512_set1_epi32(x86_load_i32(panel + r * ldp + p));
      for (int v = 0; v < TV; ++v) acc[r][v] = _mm512_dpbf16_ps(acc[r][v], wr, x[v]);
    }
  }
  KAKEYA_UNROLL_TOKENS
  for (int r = 0; r < NR; ++r)
    for (int v = 0; v < TV; ++v) _mm512_storeu_ps(ct + static_cast<size_t>(r) * ldc + v * 16, acc[r][v]);
}

// BF16 weights by vdpbf16ps for blocks of tokens_in_lanes() tokens, with the tokens in the lanes
// (gemm_x86.h, float_weights_gemm_tokens): token tiles of activation pairs ([tile][p][32]), panels
// of kFloatTokens weight rows × kPairsKc pairs broadcast from the weight rows where they lie (no
// copy, no transpose; a copy only for a last panel past the rows or an odd k), the outputs
// accumulated transposed. Reading the rows in place instead of copying each panel first ran
// 1.01-1.04x (1.05-1.07x at 64 tokens, where a panel serves two token tiles) alternating in one
// process on the Intel Xeon VM, one thread, 2048-wide weights in and out of cache. Each output
// takes the same vdpbf16ps steps in the same order as bf16_dp_gemm's (the instruction's two
// products are exact and the operands only swap sources), so every bit is the same.
void bf16_dp_gemm_tokens(const GemmWeights& w, int64_t r0, int64_t r1, const ActivationBuffer* acts, int64_t m,
                         float* y, size_t ldy, GemmScratch& s) {
  constexpr int NR = Vec512::kFloatTokens;
  const int64_t k = w.n, n = r1 - r0, n_pairs = (k + 1) / 2;
  const auto* rows = reinterpret_cast<const uint16_t*>(w.rows) + static_cast<size_t>(r0) * static_cast<size_t>(k);
  uint32_t* panel = s.get<uint32_t>(0, static_cast<size_t>(NR * kPairsKc));
  TokensInLanes<Vec512, NR> f(m, n, y, ldy, s);
  for (int64_t p0 = 0; p0 < n_pairs; p0 += kPairsKc) {
    const int64_t np = std::min(kPairsKc, n_pairs - p0);
    const size_t elems = static_cast<size_t>(std::min<int64_t>(2 * np, k - 2 * p0));
    // np pairs from a row of bf16 values, the missing second element of a last pair 0.
    auto copy_pairs = [&](const void* src, void* dst) {
      std::memset(static_cast<uint8_t*>(dst) + (np - 1) * 4, 0, 4);
      std::memcpy(dst, src, elems * 2);
    };
    token_tiles<Vec512>(
        m, np, [&](int64_t t, float* dst) { copy_pairs(acts[t].bytes.data() + static_cast<size_t>(4 * p0), dst); },
        f.tiles, f.tmp);
    for (int64_t j0 = 0; j0 < n; j0 += NR) {
      // Whole panels of even-length rows are read where they lie (a row's pairs are already
      // adjacent, as the micro-kernel broadcasts them); odd-length rows (a last pair to pad
      // with 0) are copied.
      const uint32_t* in_place =
          k % 2 == 0 ? reinterpret_cast<const uint32_t*>(rows + static_cast<size_t>(j0) * static_cast<size_t>(k) +
                                                         static_cast<size_t>(2 * p0))
                     : nullptr;
      const auto pw =
          f.panel(panel, kPairsKc, in_place, static_cast<size_t>(k / 2), j0, np, [&](int64_t j, uint32_t* dst) {
            copy_pairs(rows + static_cast<size_t>(j) * static_cast<size_t>(k) + static_cast<size_t>(2 * p0), dst);
          });
      NextPanel next(j0, NR, n, p0, kPairsKc, n_pairs, m, 32);
      const size_t next_bytes = next.rows > 0 ? static_cast<size_t>(std::min(kPairsKc, n_pairs - next.k0)) * 4 : 0;
      f.panel_tiles(
          j0, p0 + np == n_pairs,
          [&](const float* tile, float* c, bool full) {
            const auto* pairs = reinterpret_cast<const uint32_t*>(tile);
            if (full) {
              bf16_micro_tokens<2>(np, pairs, pw.p, pw.ld, c, f.ldc, p0 == 0);
            } else {
              bf16_micro_tokens<1>(np, pairs, pw.p, pw.ld, c, f.ldc, p0 == 0);
            }
          },
          [&] {
            next.after_tile([&](int64_t j) {
              prefetch_l2(rows + static_cast<size_t>(j) * static_cast<size_t>(k) + static_cast<size_t>(2 * next.k0),
                          next_bytes);
            });
          });
    }
  }
}

// BF16 weights against the BF16 activations of the decode path.
void bf16_dp_gemm(const GemmWeights& w, int64_t r0, int64_t r1, const ActivationBuffer* acts, int64_t n_tokens,
                  float* y, size_t ldy, GemmScratch& s) {
  if (w.n > 0 && tokens_in_lanes<Vec512>(n_tokens)) return bf16_dp_gemm_tokens(w, r0, r1, acts, n_tokens, y, ldy, s);
  constexpr int MR = Vec512::kFloatTokens;
  const int64_t k = w.n, n = r1 - r0;
  const auto* rows = reinterpret_cast<const uint16_t*>(w.rows) + static_cast<size_t>(r0) * static_cast<size_t>(k);
  uint32_t* panel = s.get<uint32_t>(0, static_cast<size_t>(kPairsKc * 32));
  uint32_t* ab = s.get<uint32_t>(1, static_cast<size_t>(n_tokens * kPairsKc));
  const int64_t n_pairs = (k + 1) / 2;
  for (int64_t p0 = 0; p0 < n_pairs; p0 += kPairsKc) {
    const int64_t np = std::min(kPairsKc, n_pairs - p0);
    // Activation pairs [p0, p0 + np) of every token, contiguous, zero-padded past k.
    for (int64_t i = 0; i < n_tokens; ++i) {
      uint32_t* dst = ab + i * kPairsKc;
      const int64_t elems = std::min<int64_t>(2 * np, k - 2 * p0);
      std::memset(dst, 0, static_cast<size_t>(np) * 4);
      std::memcpy(dst, acts[i].bytes.data() + static_cast<size_t>(4 * p0), static_cast<size_t>(elems) * 2);
    }
    for (int64_t j0 = 0; j0 < n; j0 += 32) {
      const int64_t nj = std::min<int64_t>(32, n - j0);
      bf16_pack(rows, static_cast<size_t>(k), k, j0, nj, p0, np, panel);
      // The next panel's weights into L2 during this one's token tiles (NextPanel, in pairs of k).
      NextPanel next(j0, 32, n, p0, kPairsKc, n_pairs, n_tokens, MR);
      const size_t next_bytes = next.rows > 0 ? static_cast<size_t>(std::min(kPairsKc, n_pairs - next.k0)) * 4 : 0;
      for (int64_t i0 = 0; i0 < n_tokens; i0 += MR) {
        const int mr = static_cast<int>(std::min<int64_t>(MR, n_tokens - i0));
        bf16_micro_n<MR>(mr, np, ab + i0 * kPairsKc, kPairsKc, panel, y + static_cast<size_t>(i0) * ldy + j0, ldy, nj,
                         p0 == 0);
        next.after_tile([&](int64_t j) {
          const uint16_t* at = rows + static_cast<size_t>(j) * static_cast<size_t>(k) + static_cast<size_t>(2 * next.k0);
          prefetch_l2(at, next_bytes);
        });
      }
    }
  }
}

// F32/F16/BF16 weights: widened to f32 and multiplied by FMA, except BF16 by vdpbf16ps when
// kBf16Dot (REQUIRES: cpu_features().avx512bf16).
template <bool kBf16Dot>
void avx512_floats(const GemmWeights& w, int64_t r0, int64_t r1, const ActivationBuffer* acts, int64_t n_tokens,
                   float* y, size_t ldy, GemmScratch& s) {
  if (kBf16Dot && w.type == GgmlType::BF16) return bf16_dp_gemm(w, r0, r1, acts, n_tokens, y, ldy, s);
  float_weights_gemm<Vec512>(w, r0, r1, acts, n_tokens, y, ldy, s);
}

template <bool kBf16Dot>
void avx512_gemm(const GemmWeights& w, int64_t r0, int64_t r1, const ActivationBuffer* acts, int64_t n_tokens,
                 float* y, size_t ldy, bool decode_exact, GemmScratch& s) {
  x86_gemm<Vec512>(quant_kernels(KernelIsa::Avx512), avx512_floats<kBf16Dot>, w, r0, r1, acts, n_tokens, y, ldy,
                   decode_exact, s);
}

}  // namespace

namespace detail {

const GemmKernels& gemm_avx512_fma() {
  static const GemmKernels k{x86_has_kernel, x86_matches_decode, avx512_gemm<false>, x86_gemm_f32<Vec512>, "fma"};
  return k;
}

const GemmKernels& gemm_avx512_bf16_dot() {
  static const GemmKernels k{x86_has_kernel, x86_matches_decode, avx512_gemm<true>, x86_gemm_f32<Vec512>,
                             "vdpbf16ps"};
  return k;
}

// vdpbf16ps runs the BF16 GEMM on AMD CPUs with AVX512-BF16 (Zen 4 and later), where it issues at
// the FMA rate with two products per lane: bench/roofline.h on the 2-core EPYC VM measured
// vdpbf16ps zmm at 231.8 GOP/s against 115.4 for vfmadd231ps, one core. Elsewhere BF16 is widened
// to f32 and run by FMA: on the Intel Xeon VM measured, vdpbf16ps peaked at half the FMA rate
// (110 vs 236 GOP/s per core) and BF16 prefill of synth TinyLlama ran 41 tok/s through it against
// 52-53 through FMA. A fixed rule rather than a timing at start-up, so that the choice (and the
// rounding it brings) is the same in every run on a machine.
static bool bf16_dot_preferred(const CpuFeatures& f) { return f.avx512bf16 && f.amd(); }

const GemmKernels& gemm_avx512() {
  static const GemmKernels& k = bf16_dot_preferred(cpu_features()) ? gemm_avx512_bf16_dot() : gemm_avx512_fma();
  return k;
}

}  // namespace detail

const GemmKernels& gemm_avx512_bf16_as(bool bf16_dot) {
  return bf16_dot ? detail::gemm_avx512_bf16_dot() : detail::gemm_avx512_fma();
}

}  // namespace kakeya::engine
