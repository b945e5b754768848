// The 32-element block quantizers, IQ4_XS (which shares IQ4_NL's codebook search) and
// convert_row (engine/quantize.h). Written from the block layouts and the float operations of
// ggml-quants.c at b4748, in the same order: f32 arithmetic without contraction (this file is
// built without FMA and in ISO C++ mode), casts that truncate where ggml's C casts do.

#include "engine/quantize.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <string>

#include "engine/cpu/quant.h"

#if defined(__clang__)
#pragma clang fp contract(off)
#endif

namespace kakeya::engine {
namespace {

void put_half(uint16_t* dst, float v) { *dst = fp32_to_fp16(v); }

// Element e of a 32-element block goes to the low nibble of qs[e] (e < 16) or the high nibble of
// qs[e - 16]; bit 4 of a 5-bit quant to bit e of qh.
void pack_nibbles(const uint8_t* q, uint8_t* qs) {
  for (int j = 0; j < 16; ++j) qs[j] = static_cast<uint8_t>((q[j] & 0x0F) | ((q[j + 16] & 0x0F) << 4));
}
void pack_fifth_bits(const uint8_t* q, uint8_t* qh) {
  uint32_t h = 0;
  for (int e = 0; e < 32; ++e) h |= static_cast<uint32_t>((q[e] & 0x10) >> 4) << e;
  std::memcpy(qh, &h, 4);
}

// The element of largest magnitude (the first one on ties), signed.
float signed_absmax(const float* x, int n) {
  float amax = 0.0f, max = 0.0f;
  for (int j = 0; j < n; ++j) {
    if (amax < std::fabs(x[j])) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  }
  return max;
}

// Q4_1 / Q5_1: d = (max - min) / (2^bits - 1), m = min, q = trunc((x - min)/d + 0.5).
template <typename Block, int kBits>
void quantize_affine(const float* x, uint8_t* dst, int64_t n) {
  auto* y = reinterpret_cast<Block*>(dst);
  for (int64_t b = 0; b < n / 32; ++b, x += 32) {
    float min = FLT_MAX, max = -FLT_MAX;
    for (int j = 0; j < 32; ++j) {
      min = x[j] < min ? x[j] : min;
      max = x[j] > max ? x[j] : max;
    }
    const float d = (max - min) / static_cast<float>((1 << kBits) - 1);
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    put_half(&y[b].d, d);
    put_half(&y[b].m, min);
    uint8_t q[32];
    for (int j = 0; j < 32; ++j) {
      const float v = (x[j] - min) * id + 0.5f;
      // Q4_1 clamps to 15 after an int8 cast; Q5_1 casts to uint8 unclamped (ggml keeps the low 5 bits).
      q[j] = kBits == 4 ? static_cast<uint8_t>(std::min<int8_t>(15, static_cast<int8_t>(v))) : static_cast<uint8_t>(v);
    }
    pack_nibbles(q, y[b].qs);
    if constexpr (kBits == 5) pack_fifth_bits(q, y[b].qh);
  }
}

// ---- IQ4_NL / IQ4_XS: the non-linear codebook ----

// Index of the codebook value nearest to v (ggml best_index_int8: binary search, the lower index
// on exact midpoints only when strictly closer).
int nearest_code(float v) {
  const int8_t* book = kIQ4NLValues;
  if (v <= book[0]) return 0;
  if (v >= book[15]) return 15;
  int lo = 0, hi = 15;
  while (hi - lo > 1) {
    const int mid = (lo + hi) / 2;
    if (v < book[mid]) {
      hi = mid;
    } else {
      lo = mid;
    }
  }
  return v - book[hi - 1] < book[hi] - v ? hi - 1 : hi;
}

// The best scale of one 32-element block for the codebook (ggml quantize_row_iq4_nl_impl without
// an importance matrix: weights x², the start d = max/127 and `trials` scales on either side of
// 127/max); 0 for an all-zero block.
float fit_codebook_scale(const float* x, int trials) {
  constexpr float kGroupMaxEps = 1e-15f;
  float amax = 0.0f, max = 0.0f;
  for (int j = 0; j < 32; ++j) {
    if (std::fabs(x[j]) > amax) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  }
  if (amax < kGroupMaxEps) return 0.0f;
  const float first = static_cast<float>(kIQ4NLValues[0]);
  // Σ w·q·x and Σ w·q² for the codes nearest to id·x.
  auto sums = [&](float id, float* sumqx, float* sumq2) {
    *sumqx = 0.0f;
    *sumq2 = 0.0f;
    for (int j = 0; j < 32; ++j) {
      const float q = static_cast<float>(kIQ4NLValues[nearest_code(id * x[j])]);
      const float w = x[j] * x[j];
      *sumqx += w * q * x[j];
      *sumq2 += w * q * q;
    }
  };
  float d = trials > 0 ? -max / first : max / first;
  float sumqx, sumq2;
  sums(1.0f / d, &sumqx, &sumq2);
  d = sumqx / sumq2;
  float best = d * sumqx;
  for (int t = -trials; t <= trials; ++t) {
    sums(static_cast<float>(t + kIQ4NLValues[0]) / max, &sumqx, &sumq2);
    if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
      d = sumqx / sumq2;
      best = d * sumqx;
    }
  }
  return d;
}

// Codes of 32 elements scaled by 1/d (0 → d = 0 scales everything to 0), packed as nibbles.
void pack_codes(const float* x, float inverse, uint8_t* qs) {
  uint8_t q[32];
  for (int j = 0; j < 32; ++j) q[j] = static_cast<uint8_t>(nearest_code(inverse * x[j]));
  pack_nibbles(q, qs);
}

// llama-quantize runs the IQ4 quantizers with 7 scale trials (quantize_iq4_nl / quantize_iq4_xs).
constexpr int kIQ4Trials = 7;

}  // namespace

void quantize_row_q8_0_ref(const float* x, uint8_t* dst, int64_t n) {
  for (int64_t b = 0; b < n / 32; ++b, x += 32, dst += 34) {
    float amax = 0.0f;
    for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[j]));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    put_half(reinterpret_cast<uint16_t*>(dst), d);
    for (int j = 0; j < 32; ++j) dst[2 + j] = static_cast<uint8_t>(static_cast<int8_t>(std::roundf(x[j] * id)));
  }
}

void quantize_row_q4_0_ref(const float* x, uint8_t* dst, int64_t n) {
  auto* y = reinterpret_cast<BlockQ4_0*>(dst);
  for (int64_t b = 0; b < n / 32; ++b, x += 32) {
    const float d = signed_absmax(x, 32) / -8.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    put_half(&y[b].d, d);
    uint8_t q[32];
    for (int j = 0; j < 32; ++j) q[j] = static_cast<uint8_t>(std::min<int8_t>(15, static_cast<int8_t>(x[j] * id + 8.5f)));
    pack_nibbles(q, y[b].qs);
  }
}

void quantize_row_q5_0_ref(const float* x, uint8_t* dst, int64_t n) {
  auto* y = reinterpret_cast<BlockQ5_0*>(dst);
  for (int64_t b = 0; b < n / 32; ++b, x += 32) {
    const float d = signed_absmax(x, 32) / -16.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    put_half(&y[b].d, d);
    uint8_t q[32];
    for (int j = 0; j < 32; ++j) q[j] = static_cast<uint8_t>(std::min<int8_t>(31, static_cast<int8_t>(x[j] * id + 16.5f)));
    pack_nibbles(q, y[b].qs);
    pack_fifth_bits(q, y[b].qh);
  }
}

void quantize_row_q4_1_ref(const float* x, uint8_t* dst, int64_t n) { quantize_affine<BlockQ4_1, 4>(x, dst, n); }
void quantize_row_q5_1_ref(const float* x, uint8_t* dst, int64_t n) { quantize_affine<BlockQ5_1, 5>(x, dst, n); }

void quantize_row_iq4_nl_ref(const float* x, uint8_t* dst, int64_t n) {
  auto* y = reinterpret_cast<BlockIQ4_NL*>(dst);
  for (int64_t b = 0; b < n / 32; ++b, x += 32) {
    const float d = fit_codebook_scale(x, kIQ4Trials);
    put_half(&y[b].d, d);
    pack_codes(x, d != 0.0f ? 1.0f / d : 0.0f, y[b].qs);
  }
}

// Eight 32-element sub-blocks: each fitted like an IQ4_NL block, then the scales quantized to 6
// bits against the super-block scale d = -max/32 (max: the signed scale of largest magnitude),
// and the codes chosen again for the quantized sub-block scale.
void quantize_row_iq4_xs_ref(const float* x, uint8_t* dst, int64_t n) {
  auto* y = reinterpret_cast<BlockIQ4_XS*>(dst);
  for (int64_t b = 0; b < n / 256; ++b, x += 256) {
    float scales[8];
    float max_scale = 0.0f, amax_scale = 0.0f;
    for (int j = 0; j < 8; ++j) {
      scales[j] = fit_codebook_scale(x + 32 * j, kIQ4Trials);
      if (std::fabs(scales[j]) > amax_scale) {
        amax_scale = std::fabs(scales[j]);
        max_scale = scales[j];
      }
    }
    const float d = -max_scale / 32.0f;
    put_half(&y[b].d, d);
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[b].scales_h = 0;
    for (int j = 0; j < 8; ++j) {
      const int l = std::clamp(nearest_int(id * scales[j]), -32, 31);
      const float dl = d * static_cast<float>(l);
      pack_codes(x + 32 * j, dl != 0.0f ? 1.0f / dl : 0.0f, y[b].qs + 16 * j);
      const int biased = l + 32;
      if (j % 2 == 0) {
        y[b].scales_l[j / 2] = static_cast<uint8_t>(biased & 0x0F);
      } else {
        y[b].scales_l[j / 2] = static_cast<uint8_t>(y[b].scales_l[j / 2] | ((biased & 0x0F) << 4));
      }
      y[b].scales_h = static_cast<uint16_t>(y[b].scales_h | ((biased >> 4) << (2 * j)));
    }
  }
}

Status convert_row(GgmlType type, const float* x, uint8_t* dst, int64_t n) {
  switch (type) {
    case GgmlType::F32:
      std::memcpy(dst, x, static_cast<size_t>(n) * sizeof(float));
      return ok_status();
    case GgmlType::F16:
    case GgmlType::BF16:
      for (int64_t i = 0; i < n; ++i) {
        const uint16_t h = type == GgmlType::F16 ? fp32_to_fp16(x[i]) : fp32_to_bf16(x[i]);
        std::memcpy(dst + 2 * i, &h, 2);
      }
      return ok_status();
    case GgmlType::Q4_0: quantize_row_q4_0_ref(x, dst, n); return ok_status();
    case GgmlType::Q4_1: quantize_row_q4_1_ref(x, dst, n); return ok_status();
    case GgmlType::Q5_0: quantize_row_q5_0_ref(x, dst, n); return ok_status();
    case GgmlType::Q5_1: quantize_row_q5_1_ref(x, dst, n); return ok_status();
    case GgmlType::Q8_0: quantize_row_q8_0_ref(x, dst, n); return ok_status();
    case GgmlType::IQ4_NL: quantize_row_iq4_nl_ref(x, dst, n); return ok_status();
    case GgmlType::Q2_K: quantize_row_q2_k_ref(x, dst, n); return ok_status();
    case GgmlType::Q3_K: quantize_row_q3_k_ref(x, dst, n); return ok_status();
    case GgmlType::Q4_K: quantize_row_q4_k_ref(x, dst, n); return ok_status();
    case GgmlType::Q5_K: quantize_row_q5_k_ref(x, dst, n); return ok_status();
    case GgmlType::Q6_K: quantize_row_q6_k_ref(x, dst, n); return ok_status();
    case GgmlType::IQ4_XS: quantize_row_iq4_xs_ref(x, dst, n); return ok_status();
    case GgmlType::Q8_1:
    case GgmlType::Q8_K: break;
  }
  return make_error("unsupported_type", std::string("cannot convert rows to type ") + ggml_type_name(type) +
                                            " (an activation-only format)");
}

}  // namespace kakeya::engine
