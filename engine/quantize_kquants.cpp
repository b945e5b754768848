// The K-quant quantizers Q2_K ... Q6_K (engine/quantize.h): per sub-block a scale (and min)
// fitted to its values, the scales quantized against the super-block's fp16 d (and dmin), and the
// quants chosen again for the quantized scales. Written from ggml-quants.c at b4748
// (quantize_row_q{2..6}_K_ref and their helpers make_qkx2_quants, make_q3_quants,
// make_qx_quants) with the same float operations in the same order; this file is built without
// FMA and in ISO C++ mode, so nothing is contracted.

#include <algorithm>
#include <cmath>
#include <cstring>

#include "engine/cpu/quant.h"
#include "engine/quantize.h"

#if defined(__clang__)
#pragma clang fp contract(off)
#endif

namespace kakeya::engine {
namespace {

constexpr float kGroupMaxEps = 1e-15f;

inline float half_value(uint16_t h) { return fp16_to_fp32(h); }

// Affine fit of n values to quants 0..nmax: x ≈ scale·L - min (ggml make_qkx2_quants). Starts
// from the min/max range, then tries nstep + 1 scales (rmin + rdelta·is + nmax)/(max - min) and
// keeps the least-squares (scale, min) of the one with the smallest weighted error (|diff| when
// use_mad, else diff²). Returns the scale and sets *neg_min = -min (>= 0) and L.
float fit_affine(int n, int nmax, const float* x, const float* weights, uint8_t* L, float* neg_min, uint8_t* Laux,
                 float rmin, float rdelta, int nstep, bool use_mad) {
  float min = x[0], max = x[0];
  float sum_w = weights[0];
  float sum_x = sum_w * x[0];
  for (int i = 1; i < n; ++i) {
    if (x[i] < min) min = x[i];
    if (x[i] > max) max = x[i];
    const float w = weights[i];
    sum_w += w;
    sum_x += w * x[i];
  }
  if (min > 0) min = 0;
  if (max == min) {
    for (int i = 0; i < n; ++i) L[i] = 0;
    *neg_min = -min;
    return 0.0f;
  }
  float iscale = static_cast<float>(nmax) / (max - min);
  float scale = 1 / iscale;
  auto error = [&](float diff) { return use_mad ? std::fabs(diff) : diff * diff; };
  float best_mad = 0;
  for (int i = 0; i < n; ++i) {
    const int l = nearest_int(iscale * (x[i] - min));
    L[i] = static_cast<uint8_t>(std::max(0, std::min(nmax, l)));
    const float diff = scale * static_cast<float>(L[i]) + min - x[i];
    best_mad += weights[i] * error(diff);
  }
  if (nstep < 1) {
    *neg_min = -min;
    return scale;
  }
  for (int is = 0; is <= nstep; ++is) {
    iscale = (rmin + rdelta * static_cast<float>(is) + static_cast<float>(nmax)) / (max - min);
    float sum_l = 0, sum_l2 = 0, sum_xl = 0;
    for (int i = 0; i < n; ++i) {
      const int l = std::max(0, std::min(nmax, nearest_int(iscale * (x[i] - min))));
      Laux[i] = static_cast<uint8_t>(l);
      const float w = weights[i];
      const float fl = static_cast<float>(l);
      sum_l += w * fl;
      sum_l2 += w * fl * fl;
      sum_xl += w * fl * x[i];
    }
    const float D = sum_w * sum_l2 - sum_l * sum_l;
    if (D > 0) {
      float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
      float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
      if (this_min > 0) {
        this_min = 0;
        this_scale = sum_xl / sum_l2;
      }
      float mad = 0;
      for (int i = 0; i < n; ++i) {
        const float diff = this_scale * static_cast<float>(Laux[i]) + this_min - x[i];
        mad += weights[i] * error(diff);
      }
      if (mad < best_mad) {
        std::memcpy(L, Laux, static_cast<size_t>(n));
        best_mad = mad;
        scale = this_scale;
        min = this_min;
      }
    }
  }
  *neg_min = -min;
  return scale;
}

// Symmetric fit of n values to quants -nmax..nmax-1 (ggml make_q3_quants with do_rmse): start at
// -nmax/max, then up to 5 rounds of moving single quants while that raises (Σw·x·l)²/Σw·l²
// (weights x²). Returns the scale; L = quant + nmax.
float fit_symmetric_q3(int n, int nmax, const float* x, int8_t* L) {
  float max = 0, amax = 0;
  for (int i = 0; i < n; ++i) {
    const float ax = std::fabs(x[i]);
    if (ax > amax) {
      amax = ax;
      max = x[i];
    }
  }
  if (amax < kGroupMaxEps) {
    for (int i = 0; i < n; ++i) L[i] = 0;
    return 0.0f;
  }
  const float iscale = static_cast<float>(-nmax) / max;
  float sumlx = 0, suml2 = 0;
  for (int i = 0; i < n; ++i) {
    const int l = std::max(-nmax, std::min(nmax - 1, nearest_int(iscale * x[i])));
    L[i] = static_cast<int8_t>(l);
    const float w = x[i] * x[i];
    sumlx += w * x[i] * static_cast<float>(l);
    suml2 += w * static_cast<float>(l) * static_cast<float>(l);
  }
  for (int round = 0; round < 5; ++round) {
    int changed = 0;
    for (int i = 0; i < n; ++i) {
      const float w = x[i] * x[i];
      const float li = static_cast<float>(L[i]);
      float slx = sumlx - w * x[i] * li;
      if (slx > 0) {
        float sl2 = suml2 - w * li * li;
        const int new_l = std::max(-nmax, std::min(nmax - 1, nearest_int(x[i] * sl2 / slx)));
        if (new_l != L[i]) {
          const float fl = static_cast<float>(new_l);
          slx += w * x[i] * fl;
          sl2 += w * fl * fl;
          if (sl2 > 0 && slx * slx * suml2 > sumlx * sumlx * sl2) {
            L[i] = static_cast<int8_t>(new_l);
            sumlx = slx;
            suml2 = sl2;
            ++changed;
          }
        }
      }
    }
    if (changed == 0) break;
  }
  for (int i = 0; i < n; ++i) L[i] = static_cast<int8_t>(L[i] + nmax);
  return sumlx / suml2;
}

// Symmetric fit to -nmax..nmax-1 weighted by x² (ggml make_qx_quants, rmse_type 1, no importance
// weights): the best of 19 scales -(nmax + 0.1·is)/max, is = -9..9, by (Σw·x·l)²/Σw·l². Returns
// the scale; L = quant + nmax.
float fit_symmetric_qx(int n, int nmax, const float* x, int8_t* L) {
  float max = 0, amax = 0;
  for (int i = 0; i < n; ++i) {
    const float ax = std::fabs(x[i]);
    if (ax > amax) {
      amax = ax;
      max = x[i];
    }
  }
  if (amax < kGroupMaxEps) {
    for (int i = 0; i < n; ++i) L[i] = 0;
    return 0.0f;
  }
  // Σ w·x·l and Σ w·l² for the quants at `iscale`, writing them to L when `store`.
  auto sums = [&](float iscale, float* sumlx, float* suml2, bool store) {
    *sumlx = 0;
    *suml2 = 0;
    for (int i = 0; i < n; ++i) {
      const int l = std::max(-nmax, std::min(nmax - 1, nearest_int(iscale * x[i])));
      if (store) L[i] = static_cast<int8_t>(nmax + l);
      const float w = x[i] * x[i];
      *sumlx += w * x[i] * static_cast<float>(l);
      *suml2 += w * static_cast<float>(l) * static_cast<float>(l);
    }
  };
  float sumlx, suml2;
  sums(static_cast<float>(-nmax) / max, &sumlx, &suml2, true);
  float scale = suml2 != 0 ? sumlx / suml2 : 0.0f;
  float best = scale * sumlx;
  for (int is = -9; is <= 9; ++is) {
    if (is == 0) continue;
    const float iscale = -(static_cast<float>(nmax) + 0.1f * static_cast<float>(is)) / max;
    sums(iscale, &sumlx, &suml2, false);
    if (suml2 > 0 && sumlx * sumlx > best * suml2) {
      sums(iscale, &sumlx, &suml2, true);
      scale = sumlx / suml2;
      best = scale * sumlx;
    }
  }
  return scale;
}

// Q2_K / Q3_K: quant q of element 128h + 32g + l goes to bits 2g of qs[32h + l].
void pack_two_bits(const uint8_t* L, uint8_t* qs) {
  for (int h = 0; h < 2; ++h)
    for (int l = 0; l < 32; ++l) {
      const uint8_t* q = L + 128 * h + l;
      qs[32 * h + l] = static_cast<uint8_t>(q[0] | (q[32] << 2) | (q[64] << 4) | (q[96] << 6));
    }
}

// Q4_K / Q5_K: 8 sub-blocks of 32 fitted affinely (weights av_x + |x|, av_x the RMS), 6-bit
// scales and mins against d = max_scale/63 and dmin = max_min/63, packed as q4k_scale_min reads
// them; then L = the quants 0..nmax for the quantized scales.
template <typename Block>
void quantize_k_affine(const float* x, Block& y, int nmax, float rmin, int nstep, uint8_t* L) {
  float scales[8], mins[8], weights[32];
  uint8_t Laux[32];
  float max_scale = 0, max_min = 0;
  for (int j = 0; j < 8; ++j) {
    float sum_x2 = 0;
    for (int l = 0; l < 32; ++l) sum_x2 += x[32 * j + l] * x[32 * j + l];
    const float av_x = std::sqrt(sum_x2 / 32);
    for (int l = 0; l < 32; ++l) weights[l] = av_x + std::fabs(x[32 * j + l]);
    scales[j] = fit_affine(32, nmax, x + 32 * j, weights, L + 32 * j, &mins[j], Laux, rmin, 0.1f, nstep, false);
    max_scale = std::max(max_scale, scales[j]);
    max_min = std::max(max_min, mins[j]);
  }
  const float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
  const float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
  for (int j = 0; j < 8; ++j) {
    const uint8_t ls = std::min<uint8_t>(63, static_cast<uint8_t>(nearest_int(inv_scale * scales[j])));
    const uint8_t lm = std::min<uint8_t>(63, static_cast<uint8_t>(nearest_int(inv_min * mins[j])));
    if (j < 4) {
      y.scales[j] = ls;
      y.scales[j + 4] = lm;
    } else {
      y.scales[j + 4] = static_cast<uint8_t>((ls & 0xF) | ((lm & 0xF) << 4));
      y.scales[j - 4] = static_cast<uint8_t>(y.scales[j - 4] | ((ls >> 4) << 6));
      y.scales[j] = static_cast<uint8_t>(y.scales[j] | ((lm >> 4) << 6));
    }
  }
  y.d = fp32_to_fp16(max_scale / 63.f);
  y.dmin = fp32_to_fp16(max_min / 63.f);
  for (int j = 0; j < 8; ++j) {
    uint8_t sc, m;
    q4k_scale_min(j, y.scales, &sc, &m);
    const float d = half_value(y.d) * static_cast<float>(sc);
    if (d == 0.0f) continue;
    const float dm = half_value(y.dmin) * static_cast<float>(m);
    for (int i = 0; i < 32; ++i) L[32 * j + i] = static_cast<uint8_t>(std::max(0, std::min(nmax, nearest_int((x[32 * j + i] + dm) / d))));
  }
}

}  // namespace

void quantize_row_q2_k_ref(const float* x, uint8_t* dst, int64_t n) {
  auto* y = reinterpret_cast<BlockQ2_K*>(dst);
  constexpr float kQ4Scale = 15.f;
  for (int64_t b = 0; b < n / 256; ++b, x += 256) {
    uint8_t L[256], Laux[16];
    float weights[16], mins[16], scales[16];
    float max_scale = 0, max_min = 0;
    for (int j = 0; j < 16; ++j) {
      for (int l = 0; l < 16; ++l) weights[l] = std::fabs(x[16 * j + l]);
      scales[j] = fit_affine(16, 3, x + 16 * j, weights, L + 16 * j, &mins[j], Laux, -0.5f, 0.1f, 15, true);
      max_scale = std::max(max_scale, scales[j]);
      max_min = std::max(max_min, mins[j]);
    }
    if (max_scale > 0) {
      const float iscale = kQ4Scale / max_scale;
      for (int j = 0; j < 16; ++j) y[b].scales[j] = static_cast<uint8_t>(nearest_int(iscale * scales[j]));
      y[b].d = fp32_to_fp16(max_scale / kQ4Scale);
    } else {
      std::memset(y[b].scales, 0, sizeof y[b].scales);
      y[b].d = fp32_to_fp16(0.f);
    }
    if (max_min > 0) {
      const float iscale = kQ4Scale / max_min;
      for (int j = 0; j < 16; ++j) y[b].scales[j] = static_cast<uint8_t>(y[b].scales[j] | (nearest_int(iscale * mins[j]) << 4));
      y[b].dmin = fp32_to_fp16(max_min / kQ4Scale);
    } else {
      y[b].dmin = fp32_to_fp16(0.f);
    }
    for (int j = 0; j < 16; ++j) {
      const float d = half_value(y[b].d) * static_cast<float>(y[b].scales[j] & 0xF);
      if (d == 0.0f) continue;
      const float dm = half_value(y[b].dmin) * static_cast<float>(y[b].scales[j] >> 4);
      for (int i = 0; i < 16; ++i) L[16 * j + i] = static_cast<uint8_t>(std::max(0, std::min(3, nearest_int((x[16 * j + i] + dm) / d))));
    }
    pack_two_bits(L, y[b].qs);
  }
}

void quantize_row_q3_k_ref(const float* x, uint8_t* dst, int64_t n) {
  auto* y = reinterpret_cast<BlockQ3_K*>(dst);
  for (int64_t b = 0; b < n / 256; ++b, x += 256) {
    int8_t L[256];
    float scales[16];
    float max_scale = 0, amax = 0;
    for (int j = 0; j < 16; ++j) {
      scales[j] = fit_symmetric_q3(16, 4, x + 16 * j, L + 16 * j);
      if (std::fabs(scales[j]) > amax) {
        amax = std::fabs(scales[j]);
        max_scale = scales[j];
      }
    }
    // 6-bit scales + 32: low 4 bits in nibble (j / 8) of scales[j % 8], high 2 bits at bits
    // 2(j / 4) of scales[8 + j % 4].
    std::memset(y[b].scales, 0, sizeof y[b].scales);
    if (max_scale != 0.0f) {
      const float iscale = -32.f / max_scale;
      for (int j = 0; j < 16; ++j) {
        const int l = std::max(-32, std::min(31, static_cast<int>(static_cast<int8_t>(nearest_int(iscale * scales[j]))))) + 32;
        if (j < 8) {
          y[b].scales[j] = static_cast<uint8_t>(l & 0xF);
        } else {
          y[b].scales[j - 8] = static_cast<uint8_t>(y[b].scales[j - 8] | ((l & 0xF) << 4));
        }
        y[b].scales[j % 4 + 8] = static_cast<uint8_t>(y[b].scales[j % 4 + 8] | ((l >> 4) << (2 * (j / 4))));
      }
      y[b].d = fp32_to_fp16(1 / iscale);
    } else {
      y[b].d = fp32_to_fp16(0.f);
    }
    for (int j = 0; j < 16; ++j) {
      const int low = j < 8 ? y[b].scales[j] & 0xF : y[b].scales[j - 8] >> 4;
      const int sc = (low | (((y[b].scales[8 + j % 4] >> (2 * (j / 4))) & 3) << 4)) - 32;
      const float d = half_value(y[b].d) * static_cast<float>(sc);
      if (d == 0.0f) continue;
      for (int i = 0; i < 16; ++i) L[16 * j + i] = static_cast<int8_t>(std::max(-4, std::min(3, nearest_int(x[16 * j + i] / d))) + 4);
    }
    // The high bit of element e (quant > 3) goes to bit e / 32 of hmask[e % 32].
    std::memset(y[b].hmask, 0, sizeof y[b].hmask);
    uint8_t low[256];
    for (int e = 0; e < 256; ++e) {
      if (L[e] > 3) {
        y[b].hmask[e % 32] = static_cast<uint8_t>(y[b].hmask[e % 32] | (1 << (e / 32)));
        low[e] = static_cast<uint8_t>(L[e] - 4);
      } else {
        low[e] = static_cast<uint8_t>(L[e]);
      }
    }
    pack_two_bits(low, y[b].qs);
  }
}

void quantize_row_q4_k_ref(const float* x, uint8_t* dst, int64_t n) {
  auto* y = reinterpret_cast<BlockQ4_K*>(dst);
  for (int64_t b = 0; b < n / 256; ++b, x += 256) {
    uint8_t L[256];
    quantize_k_affine(x, y[b], 15, -1.f, 20, L);
    // Element 64p + l in the low nibble of qs[32p + l], 64p + 32 + l in its high nibble.
    for (int p = 0; p < 4; ++p)
      for (int l = 0; l < 32; ++l) y[b].qs[32 * p + l] = static_cast<uint8_t>(L[64 * p + l] | (L[64 * p + 32 + l] << 4));
  }
}

void quantize_row_q5_k_ref(const float* x, uint8_t* dst, int64_t n) {
  auto* y = reinterpret_cast<BlockQ5_K*>(dst);
  for (int64_t b = 0; b < n / 256; ++b, x += 256) {
    uint8_t L[256];
    quantize_k_affine(x, y[b], 31, -0.5f, 15, L);
    // As Q4_K for the low 4 bits; bit 4 of element 32j + l to bit j of qh[l].
    std::memset(y[b].qh, 0, sizeof y[b].qh);
    for (int e = 0; e < 256; ++e)
      if (L[e] > 15) y[b].qh[e % 32] = static_cast<uint8_t>(y[b].qh[e % 32] | (1 << (e / 32)));
    for (int p = 0; p < 4; ++p)
      for (int l = 0; l < 32; ++l)
        y[b].qs[32 * p + l] = static_cast<uint8_t>((L[64 * p + l] & 0xF) | ((L[64 * p + 32 + l] & 0xF) << 4));
  }
}

void quantize_row_q6_k_ref(const float* x, uint8_t* dst, int64_t n) {
  auto* y = reinterpret_cast<BlockQ6_K*>(dst);
  for (int64_t b = 0; b < n / 256; ++b, x += 256) {
    int8_t L[256];
    float scales[16];
    float max_scale = 0, max_abs_scale = 0;
    for (int j = 0; j < 16; ++j) {
      scales[j] = fit_symmetric_qx(16, 32, x + 16 * j, L + 16 * j);
      if (std::fabs(scales[j]) > max_abs_scale) {
        max_abs_scale = std::fabs(scales[j]);
        max_scale = scales[j];
      }
    }
    if (max_abs_scale < kGroupMaxEps) {
      std::memset(&y[b], 0, sizeof y[b]);
      continue;
    }
    const float iscale = -128.f / max_scale;
    y[b].d = fp32_to_fp16(1 / iscale);
    for (int j = 0; j < 16; ++j) y[b].scales[j] = static_cast<int8_t>(std::min(127, nearest_int(iscale * scales[j])));
    for (int j = 0; j < 16; ++j) {
      const float d = half_value(y[b].d) * static_cast<float>(y[b].scales[j]);
      if (d == 0.0f) continue;
      for (int i = 0; i < 16; ++i) L[16 * j + i] = static_cast<int8_t>(std::max(-32, std::min(31, nearest_int(x[16 * j + i] / d))) + 32);
    }
    // Element 128h + 32g + l: low 4 bits to nibble (g / 2) of ql[64h + 32(g % 2) + l], high 2 bits
    // to bits 2g of qh[32h + l] (the layout dequantize reads, quant.cpp).
    for (int h = 0; h < 2; ++h)
      for (int l = 0; l < 32; ++l) {
        const int8_t* q = L + 128 * h + l;
        y[b].ql[64 * h + l] = static_cast<uint8_t>((q[0] & 0xF) | ((q[64] & 0xF) << 4));
        y[b].ql[64 * h + 32 + l] = static_cast<uint8_t>((q[32] & 0xF) | ((q[96] & 0xF) << 4));
        y[b].qh[32 * h + l] = static_cast<uint8_t>((q[0] >> 4) | ((q[32] >> 4) << 2) | ((q[64] >> 4) << 4) | ((q[96] >> 4) << 6));
      }
  }
}

}  // namespace kakeya::engine
