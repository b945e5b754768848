// The AVX-512 GEMM set (gemm_x86.h with 16-lane vectors and VNNI byte products), plus BF16
// weights by vdpbf16ps on the CPUs where it outruns FMA and BF16 and F16 weights by AMX where the
// CPU has it (functions
// with those target attributes, entered only after cpu_features().avx512bf16 / .amx_bf16). This
// file is compiled with AVX-512 F/BW/VL/VNNI flags and entered only through
// detail::gemm_avx512*() after cpu_features().can_run_avx512().
// GCC 12 reports its own _mm512_undefined_* placeholders (inside _mm512_cvtph_ps and friends) as
// (maybe-)uninitialized once inlined; the intrinsics overwrite every lane.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

#include "engine/cpu/amx_tiles.h"
#include "engine/cpu/cpu_features.h"
#include "engine/cpu/gemm_x86.h"

namespace kakeya::engine {
namespace {

// ---- BF16 × BF16 by vdpbf16ps: acc += a[2p]·b[2p] + a[2p+1]·b[2p+1] per lane, products exact in
// f32 (8-bit significands), sums rounded to nearest even with denormals flushed (the
// instruction's definition). Panels hold pairs of k: panel[p][j] = (W[j][2p], W[j][2p+1]).

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

// ---- BF16 × BF16 by AMX (tdpbf16ps, Intel SDM vol. 2 and the Intel AMX chapter of the
// optimization manual): each instruction multiplies a 16 × 32 bf16 tile by a 32 × 16 one into a
// 16 × 16 f32 tile, every output taking its 32 products a pair at a time, each product exact and
// each accumulation rounded to nearest even, denormals flushed (in and out). Here the A tiles
// are 16 weight rows × 32 elements read where they lie, the B tiles 16 pairs × 16 tokens of the
// activations packed pair-major ([pair][token] dwords, the layout tdpbf16ps takes), and four C
// tiles hold 32 rows × 32 tokens for the whole of k, so every output is one chain over k in
// steps of 32 whatever the block of tokens: a block gives bit for bit what its tokens give a few
// at a time (zero tokens padding a tile change nothing).

#define KAKEYA_AMX_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,amx-tile,amx-bf16")))

// Activations of tokens [0, nt) as pairs × tokens: out[p·ld + t] = (x_t[2p], x_t[2p + 1]) for
// p < pairs (a multiple of 16), 0 past k and for the tokens [nt, ld) (ld a multiple of 16) that
// pad the last tiles; 16 × 16 dword blocks transposed in registers. load(t, p0, live) gives the
// 32 bf16 values of token t from element 2·p0 on, those past the mask `live` 0.
template <class Load>
void amx_pack_pairs(int64_t nt, int64_t k, int64_t pairs, size_t ld, uint32_t* out, Load load) {
  for (int64_t t0 = 0; t0 < static_cast<int64_t>(ld); t0 += 16) {
    for (int64_t p0 = 0; p0 < pairs; p0 += 16) {
      const int64_t elems = std::clamp<int64_t>(k - 2 * p0, 0, 32);
      const auto live = static_cast<__mmask32>(elems == 32 ? ~0u : (1u << elems) - 1u);
      __m512 r[16];
      for (int i = 0; i < 16; ++i) r[i] = t0 + i < nt ? _mm512_castsi512_ps(load(t0 + i, p0, live)) : _mm512_setzero_ps();
      Vec512::transpose(r);
      for (int q = 0; q < 16; ++q)
        _mm512_storeu_ps(reinterpret_cast<float*>(out + static_cast<size_t>(p0 + q) * ld + static_cast<size_t>(t0)),
                         r[q]);
    }
  }
}

void amx_pack_activations(const ActivationBuffer* acts, int64_t nt, int64_t k, int64_t pairs, size_t ld,
                          uint32_t* out) {
  amx_pack_pairs(nt, k, pairs, ld, out, [&](int64_t t, int64_t p0, __mmask32 live) {
    return _mm512_maskz_loadu_epi16(live, acts[t].bytes.data() + 4 * p0);
  });
}

// True when an AMX GEMM of n rows × m tokens over k has no tile work: none when n or m is 0,
// every output 0 when k is.
bool amx_nothing_to_multiply(int64_t k, int64_t n, int64_t m, float* y, size_t ldy) {
  if (n <= 0 || m <= 0) return true;
  if (k > 0) return false;
  for (int64_t t = 0; t < m; ++t) std::fill_n(y + static_cast<size_t>(t) * ldy, n, 0.0f);
  return true;
}

// GCC's _tile_loadd (amxtileintrin.h) is an asm statement that does not declare the memory it
// reads, so the compiler may move stores past it: each kernel calls this between writing what
// its tiles load (packed activations, converted weights) and loading them.
inline void amx_tile_loads_see_stores() { __asm__ volatile("" ::: "memory"); }

// BF16 weights against the BF16 activations of the decode path by AMX (see above).
// REQUIRES: cpu_features().amx_bf16.
KAKEYA_AMX_TARGET void bf16_amx_gemm(const GemmWeights& w, int64_t r0, int64_t r1, const ActivationBuffer* acts,
                                     int64_t m, float* y, size_t ldy, GemmScratch& s) {
  const int64_t k = w.n, n = r1 - r0;
  if (amx_nothing_to_multiply(k, n, m, y, ldy)) return;
  const int64_t full_steps = k / 32, steps = (k + 31) / 32, pairs = 16 * steps;
  const auto* rows = reinterpret_cast<const uint16_t*>(w.rows) + static_cast<size_t>(r0) * static_cast<size_t>(k);
  // Tokens in chunks whose packed activations stay within about 1 MiB (L2), so each panel of 32
  // weight rows, read from memory once per chunk, meets them from cache.
  const int64_t chunk = std::clamp<int64_t>((int64_t{1} << 20) / (pairs * 4) / 32 * 32, 32, 512);
  // The rows of a last panel of fewer than 32 rows, and a last step of fewer than 32 elements,
  // are copied zero-padded: a tile load reads 16 rows × 64 bytes.
  uint16_t* panel = s.get<uint16_t>(0, static_cast<size_t>(32 * 32 * steps));
  uint16_t* tail = s.get<uint16_t>(2, 32 * 32);
  alignas(64) float ct[32 * 32];
  // Tiles 0-3 the C tiles, 4-5 weight rows, 6-7 activation pairs (amx_tiles.h).
  const AmxTileConfig config;
  _tile_loadconfig(&config);
  for (int64_t t0 = 0; t0 < m; t0 += chunk) {
    const int64_t nt = std::min(chunk, m - t0), ld = (nt + 31) / 32 * 32;
    uint32_t* ap = s.get<uint32_t>(1, static_cast<size_t>(pairs * ld));
    amx_pack_activations(acts + t0, nt, k, pairs, static_cast<size_t>(ld), ap);
    for (int64_t j0 = 0; j0 < n; j0 += 32) {
      const int64_t nj = std::min<int64_t>(32, n - j0);
      const uint16_t* a = rows + static_cast<size_t>(j0) * static_cast<size_t>(k);
      size_t lda = static_cast<size_t>(k);
      if (nj < 32) {
        lda = static_cast<size_t>(32 * steps);
        std::memset(panel, 0, 32 * lda * sizeof(uint16_t));
        for (int64_t j = 0; j < nj; ++j)
          std::memcpy(panel + static_cast<size_t>(j) * lda, a + static_cast<size_t>(j) * static_cast<size_t>(k),
                      static_cast<size_t>(k) * sizeof(uint16_t));
        a = panel;
      } else if (full_steps < steps) {
        std::memset(tail, 0, 32 * 32 * sizeof(uint16_t));
        for (int64_t j = 0; j < 32; ++j)
          std::memcpy(tail + 32 * j, a + static_cast<size_t>(j) * lda + static_cast<size_t>(32 * full_steps),
                      static_cast<size_t>(k - 32 * full_steps) * sizeof(uint16_t));
      }
      amx_tile_loads_see_stores();
      const size_t a_stride = lda * sizeof(uint16_t), b_stride = static_cast<size_t>(ld) * sizeof(uint32_t);
      for (int64_t i0 = 0; i0 < nt; i0 += 32) {
        _tile_zero(0);
        _tile_zero(1);
        _tile_zero(2);
        _tile_zero(3);
        for (int64_t step = 0; step < steps; ++step) {
          const bool from_tail = nj == 32 && step >= full_steps;
          const uint16_t* a0 = from_tail ? tail : a + static_cast<size_t>(32 * step);
          const size_t stride = from_tail ? 64 : a_stride;
          const uint32_t* b0 = ap + static_cast<size_t>(16 * step) * static_cast<size_t>(ld) + static_cast<size_t>(i0);
          _tile_loadd(4, a0, stride);
          _tile_loadd(5, a0 + 16 * stride / sizeof(uint16_t), stride);
          _tile_loadd(6, b0, b_stride);
          _tile_loadd(7, b0 + 16, b_stride);
          _tile_dpbf16ps(0, 4, 6);
          _tile_dpbf16ps(1, 4, 7);
          _tile_dpbf16ps(2, 5, 6);
          _tile_dpbf16ps(3, 5, 7);
        }
        // The four C tiles as ct[row][token] (32 × 32), then into y transposed.
        _tile_stored(0, ct, 128);
        _tile_stored(1, ct + 16, 128);
        _tile_stored(2, ct + 16 * 32, 128);
        _tile_stored(3, ct + 16 * 32 + 16, 128);
        store_transposed<Vec512>(ct, 32, nj, std::min<int64_t>(32, nt - i0),
                                 y + static_cast<size_t>(t0 + i0) * ldy + static_cast<size_t>(j0), ldy);
      }
    }
  }
  _tile_release();
}

// ---- F16 × F16 by AMX. These CPUs have no AMX-FP16 (Granite Rapids adds it), but a finite F16
// value x splits exactly into two BF16 values: hi, x with its f32 significand cut to its top 8
// bits, and lo = x − hi, the other 3 of F16's 11 (both normal f32 for every F16, subnormals
// included, so tdpbf16ps flushes none of them). So x·a = hi_x·hi_a + hi_x·lo_a + lo_x·hi_a +
// lo_x·lo_a, four exact products, and four tdpbf16ps per step give each F16 product exactly with
// f32 sums; the activations of F16 weights are F16 (quantize_activations, llama.cpp's vec_dot_type
// for F16). A non-finite x keeps its inf or NaN in hi and has lo = 0, so an inf meeting a value
// whose lo part is 0 gives NaN (0 · inf) where FMA gives the inf. Weights are converted 16 rows at
// a time for each chunk of tokens: that conversion was a quarter of the time of 128 tokens × 2048
// × 2048 in the kernels bench, before it took both parts from one widening.

// The BF16 hi and lo parts of the 32 F16 values of h, in order. The hi part is the top half of
// each value widened to f32 (its sign, exponent and top 7 stored significand bits), so both are
// the odd 16-bit words of f32 vectors.
struct Bf16Parts {
  __m512i hi, lo;
};
inline Bf16Parts f16_to_bf16_parts(__m512i h) {
  const __m512i odd_words = _mm512_set_epi16(63, 61, 59, 57, 55, 53, 51, 49, 47, 45, 43, 41, 39, 37, 35, 33, 31, 29,
                                             27, 25, 23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3, 1);
  const __m512i top = _mm512_set1_epi32(static_cast<int>(0xFFFF0000u));
  const __m512 x0 = _mm512_cvtph_ps(_mm512_castsi512_si256(h)), x1 = _mm512_cvtph_ps(_mm512_extracti64x4_epi64(h, 1));
  const __m512 lo0 = _mm512_sub_ps(x0, _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(x0), top)));
  const __m512 lo1 = _mm512_sub_ps(x1, _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(x1), top)));
  // F16 inf and NaN (exponent all ones): lo 0.
  const __mmask32 finite = _mm512_cmpneq_epi16_mask(_mm512_and_si512(h, _mm512_set1_epi16(0x7C00)),
                                                    _mm512_set1_epi16(0x7C00));
  return {_mm512_permutex2var_epi16(_mm512_castps_si512(x0), odd_words, _mm512_castps_si512(x1)),
          _mm512_maskz_mov_epi16(
              finite, _mm512_permutex2var_epi16(_mm512_castps_si512(lo0), odd_words, _mm512_castps_si512(lo1)))};
}

// Rows [0, nj) (nj <= 16) of the F16 rows `w` (k elements, ld apart) as `steps` pairs of A tiles
// of 16 rows × 32 BF16 values, hi then lo: panel[(2·step + part)·512 + row·32 + e]; rows past nj
// and elements past k 0.
void f16_amx_panel(const uint16_t* w, size_t ld, int64_t k, int64_t nj, int64_t steps, uint16_t* panel) {
  for (int64_t step = 0; step < steps; ++step) {
    const int64_t elems = std::min<int64_t>(32, k - 32 * step);
    const auto live = static_cast<__mmask32>(elems == 32 ? ~0u : (1u << elems) - 1u);
    uint16_t* hi = panel + static_cast<size_t>(2 * step) * 512;
    for (int64_t j = 0; j < 16; ++j) {
      const __m512i h =
          j < nj ? _mm512_maskz_loadu_epi16(live, w + static_cast<size_t>(j) * ld + static_cast<size_t>(32 * step))
                 : _mm512_setzero_si512();
      const Bf16Parts parts = f16_to_bf16_parts(h);
      _mm512_storeu_si512(hi + 32 * j, parts.hi);
      _mm512_storeu_si512(hi + 512 + 32 * j, parts.lo);
    }
  }
}

// F16 weights against the F16 activations of the decode path by AMX (see above): C tiles of 16
// rows × 32 tokens over the whole of k, so, as for BF16, every output is one chain over k in steps
// of 32 whatever the block of tokens. REQUIRES: cpu_features().amx_bf16.
KAKEYA_AMX_TARGET void f16_amx_gemm(const GemmWeights& w, int64_t r0, int64_t r1, const ActivationBuffer* acts,
                                    int64_t m, float* y, size_t ldy, GemmScratch& s) {
  const int64_t k = w.n, n = r1 - r0;
  if (amx_nothing_to_multiply(k, n, m, y, ldy)) return;
  const int64_t steps = (k + 31) / 32, pairs = 16 * steps;
  const auto* rows = reinterpret_cast<const uint16_t*>(w.rows) + static_cast<size_t>(r0) * static_cast<size_t>(k);
  // Tokens in chunks whose packed hi and lo activations stay within about 1 MiB (L2): at 2048 ×
  // 2048 and 256 tokens, bounds of 1.5 and 2 MiB ran 0.85x and 0.55x, 512 KiB 0.87x.
  const int64_t chunk = std::clamp<int64_t>((int64_t{1} << 20) / (pairs * 8) / 32 * 32, 32, 512);
  uint16_t* panel = s.get<uint16_t>(0, static_cast<size_t>(1024 * steps));
  alignas(64) float ct[16 * 32];
  // Tiles 0-1 the C tiles (16 rows × tokens 0-15, 16-31), 2-3 the weights' hi and lo, 4-5 the
  // activations' hi pairs (tokens 0-15, 16-31), 6-7 their lo pairs (amx_tiles.h).
  const AmxTileConfig config;
  _tile_loadconfig(&config);
  for (int64_t t0 = 0; t0 < m; t0 += chunk) {
    const int64_t nt = std::min(chunk, m - t0), ld = (nt + 31) / 32 * 32;
    uint32_t* hi = s.get<uint32_t>(1, static_cast<size_t>(2 * pairs * ld));
    uint32_t* lo = hi + static_cast<size_t>(pairs * ld);
    const ActivationBuffer* a = acts + t0;
    amx_pack_pairs(nt, k, pairs, static_cast<size_t>(ld), hi, [&](int64_t t, int64_t p0, __mmask32 live) {
      return f16_to_bf16_parts(_mm512_maskz_loadu_epi16(live, a[t].bytes.data() + 4 * p0)).hi;
    });
    amx_pack_pairs(nt, k, pairs, static_cast<size_t>(ld), lo, [&](int64_t t, int64_t p0, __mmask32 live) {
      return f16_to_bf16_parts(_mm512_maskz_loadu_epi16(live, a[t].bytes.data() + 4 * p0)).lo;
    });
    const size_t b_stride = static_cast<size_t>(ld) * sizeof(uint32_t);
    for (int64_t j0 = 0; j0 < n; j0 += 16) {
      const int64_t nj = std::min<int64_t>(16, n - j0);
      f16_amx_panel(rows + static_cast<size_t>(j0) * static_cast<size_t>(k), static_cast<size_t>(k), k, nj, steps,
                    panel);
      amx_tile_loads_see_stores();
      for (int64_t i0 = 0; i0 < nt; i0 += 32) {
        _tile_zero(0);
        _tile_zero(1);
        for (int64_t step = 0; step < steps; ++step) {
          const uint16_t* wt = panel + static_cast<size_t>(step) * 1024;
          const size_t at = static_cast<size_t>(16 * step) * static_cast<size_t>(ld) + static_cast<size_t>(i0);
          _tile_loadd(2, wt, 64);
          _tile_loadd(3, wt + 512, 64);
          _tile_loadd(4, hi + at, b_stride);
          _tile_loadd(5, hi + at + 16, b_stride);
          _tile_loadd(6, lo + at, b_stride);
          _tile_loadd(7, lo + at + 16, b_stride);
          _tile_dpbf16ps(0, 2, 4);
          _tile_dpbf16ps(0, 2, 6);
          _tile_dpbf16ps(0, 3, 4);
          _tile_dpbf16ps(0, 3, 6);
          _tile_dpbf16ps(1, 2, 5);
          _tile_dpbf16ps(1, 2, 7);
          _tile_dpbf16ps(1, 3, 5);
          _tile_dpbf16ps(1, 3, 7);
        }
        _tile_stored(0, ct, 128);
        _tile_stored(1, ct + 16, 128);
        store_transposed<Vec512>(ct, 32, nj, std::min<int64_t>(32, nt - i0),
                                 y + static_cast<size_t>(t0 + i0) * ldy + static_cast<size_t>(j0), ldy);
      }
    }
  }
  _tile_release();
}

// ---- Q4_0 / Q8_0 by AMX (tdpbssd, AMX-INT8): each instruction multiplies a 16 × 32 tile of
// signed bytes by a 32 × 16 one into a 16 × 16 int32 tile, every sum exact. One Q8_0 block (32
// elements, one scale per row and per token) is one instruction's k, so a C tile holds one
// block's integer sums of 16 tokens × 16 rows: exactly the int32 sums the VNNI kernels reach by
// vpdpbusd (Σ qw·qa; for Q4_0 Σ (nibble − 8)·qa), which then take the decode kernels' f32
// operations in the same order, per row and token: Q8_0 s += sumi·(dw·da) rounded, Q4_0 s =
// fma(sumi, dw·da, s). So every output is bit for bit what matvec_packed gives
// (gemm_matches_decode). Here the A tiles are 16 tokens × one block of their activations (packed
// [tile][block][token][32]), the B tiles one block of a packed group's 16 rows: the packed layout
// (quant.h) is already the tile's, 4 bytes of 16 rows per 64-byte line, read in place for Q8_0;
// Q4_0's nibbles are widened to signed bytes (− 8) once per group and chunk of tokens.

#define KAKEYA_AMX_INT8_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,amx-tile,amx-int8")))

// Blocks [0, nb) of a packed Q4_0 group as B tiles: panel[b·512 + c·64 + 4·row + e] = element
// 4c + e of block b of the row, minus 8 (chunks c < 4 from the low nibbles, 4-7 the high ones).
void q4_0_amx_panel(const uint8_t* group, int64_t nb, int8_t* panel) {
  const __m512i low4 = _mm512_set1_epi8(0x0F), eight = _mm512_set1_epi8(8);
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* q = group + detail::packed_quants_offset(GgmlType::Q4_0, b);
    int8_t* out = panel + b * 512;
    for (int c = 0; c < 4; ++c) {
      const __m512i v = _mm512_loadu_si512(q + 64 * c);
      _mm512_storeu_si512(out + 64 * c, _mm512_sub_epi8(_mm512_and_si512(v, low4), eight));
      _mm512_storeu_si512(out + 256 + 64 * c, _mm512_sub_epi8(_mm512_and_si512(_mm512_srli_epi16(v, 4), low4), eight));
    }
  }
}

// Tokens [0, nt) as A tiles of 16 tokens × 32 activation bytes, `units` of them per token:
// out[(tile·units + u)·512 + i·32 + e] = byte e of unit(t, u) for token t = 16·tile + i; the tokens
// that pad the last tile 0.
template <class Unit>
void amx_pack_a_tiles(int64_t nt, int64_t units, int8_t* out, Unit unit) {
  const int64_t tiles = (nt + 15) / 16;
  for (int64_t tile = 0; tile < tiles; ++tile)
    for (int64_t i = 0; i < 16; ++i) {
      const int64_t t = 16 * tile + i;
      for (int64_t u = 0; u < units; ++u) {
        int8_t* dst = out + static_cast<size_t>((tile * units + u) * 512 + i * 32);
        if (t < nt) {
          std::memcpy(dst, unit(t, u), 32);
        } else {
          std::memset(dst, 0, 32);
        }
      }
    }
}

// Tokens [0, nt) of Q8_0 activations as A tiles (amx_pack_a_tiles, one unit per block), and
// da[(tile·nb + b)·16 + i] the scale of block b of token 16·tile + i as f32 (0 for padding).
void amx_pack_q8_0(const ActivationBuffer* acts, int64_t nt, int64_t nb, int8_t* out, float* da) {
  auto blocks = [&](int64_t t) { return reinterpret_cast<const BlockQ8_0*>(acts[t].bytes.data()); };
  amx_pack_a_tiles(nt, nb, out, [&](int64_t t, int64_t b) { return blocks(t)[b].qs; });
  for (int64_t t = 0; t < (nt + 15) / 16 * 16; ++t)
    for (int64_t b = 0; b < nb; ++b)
      da[((t / 16) * nb + b) * 16 + t % 16] = t < nt ? _cvtsh_ss(blocks(t)[b].d) : 0.0f;
}

// Blocks b and b + 1 (when `two`) of activation tiles `a` (512 bytes apart) and weight tiles
// `w(b)` into C tiles 0 and 1 (kSet 0) or 6 and 7 (kSet 1), through A tiles 2-3 and B tiles 4-5:
// tdpbssd, or tdpbsud for unsigned weight bytes. Tile numbers are immediates (GCC's _tile_*
// macros paste them into the instruction), hence the copies.
template <int kSet, bool kUnsignedWeights = false, class Weights>
KAKEYA_AMX_INT8_TARGET inline void amx_int8_issue(const int8_t* a, Weights w, int64_t b, bool two) {
  if constexpr (kSet == 0) {
    _tile_zero(0);
    _tile_loadd(2, a + b * 512, 32);
    _tile_loadd(4, w(b), 64);
    if constexpr (kUnsignedWeights) {
      _tile_dpbsud(0, 2, 4);
    } else {
      _tile_dpbssd(0, 2, 4);
    }
    if (two) {
      _tile_zero(1);
      _tile_loadd(3, a + (b + 1) * 512, 32);
      _tile_loadd(5, w(b + 1), 64);
      if constexpr (kUnsignedWeights) {
        _tile_dpbsud(1, 3, 5);
      } else {
        _tile_dpbssd(1, 3, 5);
      }
    }
  } else {
    _tile_zero(6);
    _tile_loadd(2, a + b * 512, 32);
    _tile_loadd(4, w(b), 64);
    if constexpr (kUnsignedWeights) {
      _tile_dpbsud(6, 2, 4);
    } else {
      _tile_dpbssd(6, 2, 4);
    }
    if (two) {
      _tile_zero(7);
      _tile_loadd(3, a + (b + 1) * 512, 32);
      _tile_loadd(5, w(b + 1), 64);
      if constexpr (kUnsignedWeights) {
        _tile_dpbsud(7, 3, 5);
      } else {
        _tile_dpbssd(7, 3, 5);
      }
    }
  }
}

// The C tiles of set kSet (see above) into sums[0] and, when `two`, sums[1] (16 × 16 int32 each).
template <int kSet>
KAKEYA_AMX_INT8_TARGET inline void amx_int8_store(int32_t (*sums)[256], bool two) {
  if constexpr (kSet == 0) {
    _tile_stored(0, sums[0], 64);
    if (two) _tile_stored(1, sums[1], 64);
  } else {
    _tile_stored(6, sums[0], 64);
    if (two) _tile_stored(7, sums[1], 64);
  }
}

// Q4_0 / Q8_0 weights against the Q8_0 activations of the decode path by AMX (see above): packed
// groups read in place, or row-major rows packed here a group at a time, as packed_gemm.
// REQUIRES: cpu_features().amx_int8.
template <GgmlType T>
KAKEYA_AMX_INT8_TARGET void legacy_quant_amx_gemm(const GemmWeights& w, int64_t r0, int64_t r1,
                                                  const ActivationBuffer* acts, int64_t m, float* y, size_t ldy,
                                                  GemmScratch& s) {
  const int64_t nb = w.n / 32;
  if (amx_nothing_to_multiply(nb, r1 - r0, m, y, ldy)) return;
  const size_t gbytes = detail::packed_group_bytes(T, w.n);
  uint8_t* own = w.packed == nullptr ? s.get<uint8_t>(4, gbytes) : nullptr;
  int8_t* panel = T == GgmlType::Q4_0 ? s.get<int8_t>(0, static_cast<size_t>(nb * 512)) : nullptr;
  // Tokens in chunks whose packed activations stay within about 1 MiB (L2): each group, read
  // once per chunk, meets them from cache.
  const int64_t chunk = std::clamp<int64_t>((int64_t{1} << 20) / (nb * 32) / 16 * 16, 16, 1024);
  const int64_t base = w.packed != nullptr ? r0 / kPackRows * kPackRows : r0;  // groups start here
  alignas(64) int32_t sums[2][256];
  // Tiles 0-1 and 6-7 the C tiles (16 tokens × 16 rows), 2-3 the activations (16 tokens × 32
  // bytes), 4-5 the weights (8 rows of 4 bytes × 16 rows): two blocks at a time.
  AmxTileConfig config;
  config.colsb[2] = config.colsb[3] = 32;
  config.rows[4] = config.rows[5] = 8;
  _tile_loadconfig(&config);
  for (int64_t t0 = 0; t0 < m; t0 += chunk) {
    const int64_t nt = std::min(chunk, m - t0), tiles = (nt + 15) / 16;
    int8_t* ap = s.get<int8_t>(1, static_cast<size_t>(tiles * nb * 512));
    float* da = s.get<float>(2, static_cast<size_t>(tiles * nb * 16));
    amx_pack_q8_0(acts + t0, nt, nb, ap, da);
    for (int64_t g0 = base; g0 < r1; g0 += kPackRows) {
      const uint8_t* group = packed_group_at(w, g0, r1, own);
      if constexpr (T == GgmlType::Q4_0) q4_0_amx_panel(group, nb, panel);
      amx_tile_loads_see_stores();
      auto weights = [&](int64_t b) -> const void* {
        if constexpr (T == GgmlType::Q4_0) return panel + b * 512;
        return group + detail::packed_quants_offset(T, b);
      };
      const int64_t lo = std::max(r0, g0), hi = std::min(r1, g0 + kPackRows);  // rows to store
      for (int64_t tile = 0; tile < tiles; ++tile) {
        __m512 acc[16];
        KAKEYA_UNROLL_TOKENS
        for (int i = 0; i < 16; ++i) acc[i] = _mm512_setzero_ps();
        const int8_t* at = ap + static_cast<size_t>(tile * nb) * 512;
        const float* dat = da + static_cast<size_t>(tile * nb) * 16;
        // Two blocks a step, in C tiles 0-1 and 6-7 by turns: step p issues its products, then
        // stores and accumulates step p − 1's, whose products ran meanwhile (a tdpbssd's latency
        // is several times its issue interval, so the same tiles step after step would wait for
        // each other).
        const int64_t steps = (nb + 1) / 2;
        for (int64_t step = 0; step <= steps; ++step) {
          const int64_t b = 2 * step;
          if (step < steps) {
            if (step % 2 == 1) {
              amx_int8_issue<1>(at, weights, b, b + 1 < nb);
            } else {
              amx_int8_issue<0>(at, weights, b, b + 1 < nb);
            }
          }
          if (step == 0) continue;
          const int64_t pb = b - 2;  // the previous step's first block
          if (step % 2 == 1) {
            amx_int8_store<0>(sums, pb + 1 < nb);
          } else {
            amx_int8_store<1>(sums, pb + 1 < nb);
          }
          // Its blocks' sums into the 16 tokens' rows of outputs, the decode kernels' operations.
          for (int64_t bb = pb; bb < std::min(pb + 2, nb); ++bb) {
            const __m512 dw = _mm512_cvtph_ps(
                _mm256_loadu_si256(reinterpret_cast<const __m256i*>(group + detail::packed_scales_offset(T, bb))));
            const float* dab = dat + bb * 16;
            const int32_t* c = sums[bb - pb];
            KAKEYA_UNROLL_TOKENS
            for (int i = 0; i < 16; ++i) {
              const __m512 scale = _mm512_mul_ps(dw, _mm512_set1_ps(dab[i]));
              const __m512 sumi = _mm512_cvtepi32_ps(_mm512_load_si512(c + 16 * i));
              if constexpr (T == GgmlType::Q4_0) {
                acc[i] = _mm512_fmadd_ps(sumi, scale, acc[i]);
              } else {
                acc[i] = _mm512_add_ps(acc[i], Vec512::keep(_mm512_mul_ps(sumi, scale)));
              }
            }
          }
        }
        // Unrolled, so that acc stays in registers (a loop to `live` would index it at run time).
        const int live = static_cast<int>(std::min<int64_t>(16, nt - 16 * tile));
        KAKEYA_UNROLL_TOKENS
        for (int i = 0; i < 16; ++i) {
          if (i >= live) break;
          float* yrow = y + static_cast<size_t>(t0 + 16 * tile + i) * ldy;
          if (lo == g0 && hi == g0 + kPackRows) {
            _mm512_storeu_ps(yrow + (g0 - r0), acc[i]);
          } else {
            alignas(64) float tmp[16];
            _mm512_store_ps(tmp, acc[i]);
            for (int64_t r = lo; r < hi; ++r) yrow[r - r0] = tmp[r - g0];
          }
        }
      }
    }
  }
  _tile_release();
}

// ---- Q4_K by AMX (tdpbsud: signed activation bytes × unsigned weight bytes). One sub-block (32
// values with a 6-bit scale and min) is one instruction's k, so a C tile holds one sub-block's
// exact integer sums of 16 tokens × 16 rows, the dot_j the VNNI kernel reaches by vpdpbusd; each is
// multiplied by its rows' scales and summed over the super-block in int32 (sumq), the mins' term
// comes from the activation block sums by vpdpwssd as there, and each output then takes
// kquant_micro's f32 operations per super-block in order: every output bit for bit the VNNI
// kernel's and the decode kernels'. The weights are converted 16 rows at a time per chunk of
// tokens into kquant_tile's layout (Q4kTile: its q words are already the B tiles' layout). Q6_K
// stays on vpdpbusd: its sub-blocks of 16 fill half an instruction's k, and the same kernel for
// them ran 0.92x the VNNI one.

// Q4_K weights against the Q8_K activations of the decode path by AMX (see above).
// REQUIRES: cpu_features().amx_int8.
KAKEYA_AMX_INT8_TARGET void q4k_amx_gemm(const GemmWeights& w, int64_t r0, int64_t r1, const ActivationBuffer* acts,
                                         int64_t m, float* y, size_t ldy, GemmScratch& s) {
  constexpr int L = 16;
  using Tl = Q4kTile<L>;
  const int64_t nsb = w.n / kQK_K, units = nsb * 8;  // super-blocks, sub-blocks
  if (amx_nothing_to_multiply(nsb, r1 - r0, m, y, ldy)) return;
  const size_t stride = ggml_row_bytes(GgmlType::Q4_K, w.n);
  const Q8kTerms terms = q8k_terms(acts, m, nsb, s);
  uint32_t* conv = s.get<uint32_t>(0, Tl::kWords * static_cast<size_t>(nsb));
  uint32_t* chunks = s.get<uint32_t>(4, static_cast<size_t>(L) * 64);
  // Tokens in chunks whose packed activations stay within about 1 MiB (L2).
  const int64_t chunk = std::clamp<int64_t>((int64_t{1} << 20) / w.n / 16 * 16, 16, 1024);
  alignas(64) int32_t sums[2][256];
  alignas(64) float acc[16][16];
  // Tiles 0-1 and 6-7 the C tiles (16 tokens × 16 rows), 2-3 the activations (16 tokens × 32
  // bytes), 4-5 the weights (8 rows of 4 bytes × 16 rows): two sub-blocks at a time.
  AmxTileConfig config;
  config.colsb[2] = config.colsb[3] = 32;
  config.rows[4] = config.rows[5] = 8;
  _tile_loadconfig(&config);
  for (int64_t t0 = 0; t0 < m; t0 += chunk) {
    const int64_t nt = std::min(chunk, m - t0), tiles = (nt + 15) / 16;
    int8_t* ap = s.get<int8_t>(1, static_cast<size_t>(tiles * nsb * kQK_K * 16));
    // One unit per sub-block: unit s·8 + j is sub-block j of super-block s.
    const ActivationBuffer* a = acts + t0;
    amx_pack_a_tiles(nt, units, ap, [&](int64_t t, int64_t u) {
      return reinterpret_cast<const BlockQ8_K*>(a[t].bytes.data())[u / 8].qs + (u % 8) * 32;
    });
    for (int64_t g0 = r0; g0 < r1; g0 += L) {
      const int live_rows = static_cast<int>(std::min<int64_t>(L, r1 - g0));
      kquant_tile<Vec512, GgmlType::Q4_K>(w.rows, stride, g0, live_rows, 0, nsb, conv, chunks);
      amx_tile_loads_see_stores();
      auto weights = [&](int64_t u) -> const void* {
        return Tl::q(conv + static_cast<size_t>(u / 8) * Tl::kWords) + (u % 8) * 8 * L;
      };
      for (int64_t tile = 0; tile < tiles; ++tile) {
        const int8_t* at = ap + static_cast<size_t>(tile * nsb * kQK_K * 16);
        const int64_t tok0 = t0 + 16 * tile;  // the tile's first token
        const int live = static_cast<int>(std::min<int64_t>(16, nt - 16 * tile));
        __m512i sumq[16];  // Σ sc_j·dot_j over the sub-blocks so far of the super-block
        KAKEYA_UNROLL_TOKENS
        for (int i = 0; i < 16; ++i) sumq[i] = _mm512_setzero_si512();
        std::fill_n(&acc[0][0], 256, 0.0f);
        // Two sub-blocks a step, in C tiles 0-1 and 6-7 by turns, as legacy_quant_amx_gemm.
        const int64_t steps = units / 2;
        // The next group's rows into L2 during the first tile's steps (NextPanel over rows
        // [r0, r1), whole rows, a step for a token tile), for kquant_tile to read from cache.
        NextPanel next(g0 - r0, L, tile == 0 ? r1 - r0 : 0, 0, nsb, nsb, steps, 1);
        for (int64_t step = 0; step <= steps; ++step) {
          const int64_t u = 2 * step;
          if (step < steps) {
            if (step % 2 == 1) {
              amx_int8_issue<1, true>(at, weights, u, true);
            } else {
              amx_int8_issue<0, true>(at, weights, u, true);
            }
            next.after_tile([&](int64_t j) { prefetch_l2(w.rows + static_cast<size_t>(r0 + j) * stride, stride); });
          }
          if (step == 0) continue;
          const int64_t pu = u - 2;  // the previous step's first sub-block
          if (step % 2 == 1) {
            amx_int8_store<0>(sums, true);
          } else {
            amx_int8_store<1>(sums, true);
          }
          const int64_t sb = pu / 8;
          uint32_t* t = conv + static_cast<size_t>(sb) * Tl::kWords;
          for (int h = 0; h < 2; ++h) {
            const __m512i sc = _mm512_loadu_si512(Tl::sc(t) + (pu % 8 + h) * L);
            KAKEYA_UNROLL_TOKENS
            for (int i = 0; i < 16; ++i)
              sumq[i] = _mm512_add_epi32(sumq[i], _mm512_mullo_epi32(_mm512_load_si512(sums[h] + 16 * i), sc));
          }
          if ((pu + 2) % 8 != 0) continue;
          // The super-block's f32 operations, kquant_micro's, per token (the padding ones skipped).
          const __m512 dw = _mm512_loadu_ps(Tl::d(t)), dmw = _mm512_loadu_ps(Tl::dmin(t));
          KAKEYA_UNROLL_TOKENS
          for (int i = 0; i < 16; ++i) {
            if (i >= live) break;
            const uint32_t* pairs = terms.pairs + ((tok0 + i) * nsb + sb) * 4;
            __m512i summ = _mm512_setzero_si512();
            KAKEYA_UNROLL_CHUNKS
            for (int p = 0; p < 4; ++p)
              summ = _mm512_dpwssd_epi32(summ, _mm512_loadu_si512(Tl::mins(t) + p * L),
                                         _mm512_set1_epi32(static_cast<int32_t>(pairs[p])));
            const __m512 yd = _mm512_set1_ps(terms.d[(tok0 + i) * nsb + sb]);
            const __m512 d = _mm512_mul_ps(dw, yd), dmin = _mm512_mul_ps(dmw, yd);
            const __m512 v = _mm512_sub_ps(Vec512::keep(_mm512_mul_ps(d, _mm512_cvtepi32_ps(sumq[i]))),
                                           Vec512::keep(_mm512_mul_ps(dmin, _mm512_cvtepi32_ps(summ))));
            _mm512_store_ps(acc[i], _mm512_add_ps(_mm512_load_ps(acc[i]), Vec512::keep(v)));
          }
          KAKEYA_UNROLL_TOKENS
          for (int i = 0; i < 16; ++i) sumq[i] = _mm512_setzero_si512();
        }
        for (int i = 0; i < live; ++i) {
          float* yrow = y + static_cast<size_t>(tok0 + i) * ldy + static_cast<size_t>(g0 - r0);
          std::memcpy(yrow, acc[i], static_cast<size_t>(live_rows) * sizeof(float));
        }
      }
    }
  }
  _tile_release();
}

// F32/F16/BF16 weights: widened to f32 and multiplied by FMA, except BF16 by vdpbf16ps (kDot,
// REQUIRES: cpu_features().avx512bf16) and BF16 and F16 by AMX (kAmx, REQUIRES:
// cpu_features().amx_bf16).
template <Bf16Gemm kBf16>
void avx512_floats(const GemmWeights& w, int64_t r0, int64_t r1, const ActivationBuffer* acts, int64_t n_tokens,
                   float* y, size_t ldy, GemmScratch& s) {
  if (kBf16 == Bf16Gemm::kDot && w.type == GgmlType::BF16) return bf16_dp_gemm(w, r0, r1, acts, n_tokens, y, ldy, s);
  if (kBf16 == Bf16Gemm::kAmx && w.type == GgmlType::BF16) return bf16_amx_gemm(w, r0, r1, acts, n_tokens, y, ldy, s);
  if (kBf16 == Bf16Gemm::kAmx && w.type == GgmlType::F16) return f16_amx_gemm(w, r0, r1, acts, n_tokens, y, ldy, s);
  float_weights_gemm<Vec512>(w, r0, r1, acts, n_tokens, y, ldy, s);
}

// Calls of fewer tokens run the VNNI kernels, which give the same bits: AMX computes 16 tokens a
// tile whatever the call has (speculative verify's blocks are a few tokens). Alternating ar-bench
// prefill on synth TinyLlama, one thread, AMX against the VNNI kernels (Q4_0 / Q8_0 / Q4_K):
// 4 tokens 0.71-0.73x / 0.73-0.87x / 0.83x; 8 tokens 0.83-0.86x / 0.96-0.99x / 0.90-1.00x;
// 10 tokens 1.02-1.05x / 1.17-1.20x / 1.01-1.03x; 16 tokens 1.34-1.35x / 1.50-1.53x / 0.99-1.06x.
constexpr int64_t kAmxInt8MinTokens = 10;

// Q4_0, Q8_0 and Q4_K weights by AMX-INT8 where the CPU has it (the kAmx set) and the call has
// kAmxInt8MinTokens tokens or more: true when it ran them. Not where decode_exact asks for a
// rounding the GEMM does not have (row-major Q8_0: x86_gemm runs the decode kernels).
bool int8_by_amx(const GemmWeights& w, int64_t r0, int64_t r1, const ActivationBuffer* acts, int64_t n_tokens,
                 float* y, size_t ldy, bool decode_exact, GemmScratch& s) {
  if (!cpu_features().amx_int8 || r1 <= r0 || n_tokens < kAmxInt8MinTokens) return false;
  if (decode_exact && !x86_matches_decode(w.type, w.packed != nullptr)) return false;
  switch (w.type) {
    case GgmlType::Q4_0: legacy_quant_amx_gemm<GgmlType::Q4_0>(w, r0, r1, acts, n_tokens, y, ldy, s); return true;
    case GgmlType::Q8_0: legacy_quant_amx_gemm<GgmlType::Q8_0>(w, r0, r1, acts, n_tokens, y, ldy, s); return true;
    case GgmlType::Q4_K: q4k_amx_gemm(w, r0, r1, acts, n_tokens, y, ldy, s); return true;
    default: return false;
  }
}

template <Bf16Gemm kBf16>
void avx512_gemm(const GemmWeights& w, int64_t r0, int64_t r1, const ActivationBuffer* acts, int64_t n_tokens,
                 float* y, size_t ldy, bool decode_exact, GemmScratch& s) {
  if (kBf16 == Bf16Gemm::kAmx && int8_by_amx(w, r0, r1, acts, n_tokens, y, ldy, decode_exact, s)) return;
  x86_gemm<Vec512>(quant_kernels(KernelIsa::Avx512), avx512_floats<kBf16>, w, r0, r1, acts, n_tokens, y, ldy,
                   decode_exact, s);
}

}  // namespace

namespace detail {

const GemmKernels& gemm_avx512_fma() {
  static const GemmKernels k{x86_has_kernel, x86_matches_decode, avx512_gemm<Bf16Gemm::kFma>, x86_gemm_f32<Vec512>,
                             "fma", "fma", "vpdpbusd"};
  return k;
}

const GemmKernels& gemm_avx512_bf16_dot() {
  static const GemmKernels k{x86_has_kernel, x86_matches_decode, avx512_gemm<Bf16Gemm::kDot>, x86_gemm_f32<Vec512>,
                             "vdpbf16ps", "fma", "vpdpbusd"};
  return k;
}

const GemmKernels& gemm_avx512_bf16_amx() {
  static const GemmKernels k{x86_has_kernel, x86_matches_decode, avx512_gemm<Bf16Gemm::kAmx>, x86_gemm_f32<Vec512>,
                             "amx", "amx", cpu_features().amx_int8 ? "amx" : "vpdpbusd"};
  return k;
}

// vdpbf16ps runs the BF16 GEMM on AMD CPUs with AVX512-BF16 (Zen 4 and later), where it issues at
// the FMA rate with two products per lane: bench/roofline.h on the 2-core EPYC VM measured
// vdpbf16ps zmm at 231.8 GOP/s against 115.4 for vfmadd231ps, one core. On Intel CPUs with AMX
// (Sapphire Rapids and later) AMX runs it. Elsewhere BF16 is widened to f32 and run by FMA: on the
// Intel Xeon VM measured, vdpbf16ps peaked at half the FMA rate (110 vs 236 GOP/s per core) and
// BF16 prefill of synth TinyLlama ran 41 tok/s through it against 52-53 through FMA. A fixed rule
// rather than a timing at start-up, so that the choice (and the rounding it brings) is the same in
// every run on a machine.
static Bf16Gemm bf16_gemm_preferred(const CpuFeatures& f) {
  if (f.amx_bf16) return Bf16Gemm::kAmx;
  return f.avx512bf16 && f.amd() ? Bf16Gemm::kDot : Bf16Gemm::kFma;
}

const GemmKernels& gemm_avx512() {
  static const GemmKernels& k = gemm_avx512_bf16_as(bf16_gemm_preferred(cpu_features()));
  return k;
}

}  // namespace detail

const GemmKernels& gemm_avx512_bf16_as(Bf16Gemm path) {
  switch (path) {
    case Bf16Gemm::kDot: return detail::gemm_avx512_bf16_dot();
    case Bf16Gemm::kAmx: return detail::gemm_avx512_bf16_amx();
    case Bf16Gemm::kFma: break;
  }
  return detail::gemm_avx512_fma();
}

}  // namespace kakeya::engine
