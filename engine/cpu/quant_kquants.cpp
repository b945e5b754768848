// Portable kernels of the super-block types added beside Q4_K/Q6_K: Q2_K, Q3_K, Q5_K and IQ4_XS,
// all against Q8_K activations. Dequantization is ggml's to_float (ggml-quants.c
// dequantize_row_*); dot products round like ggml-cpu's x86 code (quant_lanes.h), so the SIMD
// kernel sets are bit-identical to these. Each type is decoded once per super-block into its
// integer quants and sub-block scales, which both the dequantization and the dot product use.

#include <cstring>

#include "engine/cpu/quant.h"
#include "engine/cpu/quant_internal.h"
#include "engine/cpu/quant_lanes.h"

#if defined(__clang__)
#pragma clang fp contract(off)
#endif

namespace kakeya::engine {
namespace {

inline float h2f(uint16_t h) { return fp16_to_fp32(h); }

// ---- decoding: q[e] for the 256 elements, scales (and mins) per sub-block ----

// Q2_K / Q3_K low bits: element 128h + 32g + l is bits 2g..2g+1 of qs[32h + l].
inline int two_bits(const uint8_t* qs, int e) { return (qs[32 * (e / 128) + e % 32] >> (2 * ((e % 128) / 32))) & 3; }

struct Q2K {
  int8_t q[256];
  int8_t scale[16], min[16];  // 4 bits each, per 16 elements
};
void decode(const BlockQ2_K& b, Q2K& out) {
  for (int e = 0; e < 256; ++e) out.q[e] = static_cast<int8_t>(two_bits(b.qs, e));
  for (int j = 0; j < 16; ++j) {
    out.scale[j] = static_cast<int8_t>(b.scales[j] & 0x0F);
    out.min[j] = static_cast<int8_t>(b.scales[j] >> 4);
  }
}

struct Q3K {
  int8_t q[256];     // -4..3
  int8_t scale[16];  // 6 bits - 32, per 16 elements
};
void decode(const BlockQ3_K& b, Q3K& out) {
  for (int e = 0; e < 256; ++e) {
    const int high = (b.hmask[e % 32] >> (4 * (e / 128) + (e % 128) / 32)) & 1;
    out.q[e] = static_cast<int8_t>(two_bits(b.qs, e) - (high != 0 ? 0 : 4));
  }
  // Scale j: low 4 bits in the low (j < 8) or high (j >= 8) nibble of scales[j % 8], high 2 bits
  // at bits 2(j / 4) of scales[8 + j % 4].
  for (int j = 0; j < 16; ++j) {
    const int low = j < 8 ? b.scales[j] & 0x0F : b.scales[j - 8] >> 4;
    const int high = (b.scales[8 + j % 4] >> (2 * (j / 4))) & 3;
    out.scale[j] = static_cast<int8_t>((low | (high << 4)) - 32);
  }
}

struct Q5K {
  int8_t q[256];             // 0..31
  uint8_t scale[8], min[8];  // 6 bits each, per 32 elements
};
void decode(const BlockQ5_K& b, Q5K& out) {
  // Element 64p + l (l < 32) is the low nibble of qs[32p + l], 64p + 32 + l its high nibble; the
  // 5th bit of element 32j + l is bit j of qh[l].
  for (int e = 0; e < 256; ++e) {
    const int byte = b.qs[32 * (e / 64) + e % 32];
    const int low = (e % 64) < 32 ? byte & 0x0F : byte >> 4;
    out.q[e] = static_cast<int8_t>(low | (((b.qh[e % 32] >> (e / 32)) & 1) << 4));
  }
  for (int j = 0; j < 8; ++j) q4k_scale_min(j, b.scales, &out.scale[j], &out.min[j]);
}

struct IQ4XS {
  int8_t q[256];    // codebook values
  int8_t scale[8];  // 6 bits - 32, per 32 elements
};
void decode(const BlockIQ4_XS& b, IQ4XS& out) {
  for (int e = 0; e < 256; ++e) {
    const uint8_t* qs = b.qs + 16 * (e / 32);
    const int l = e % 32;
    out.q[e] = kIQ4NLValues[l < 16 ? qs[l] & 0x0F : qs[l - 16] >> 4];
  }
  for (int j = 0; j < 8; ++j) {
    const int low = (b.scales_l[j / 2] >> (4 * (j % 2))) & 0x0F;
    const int high = (b.scales_h >> (2 * j)) & 3;
    out.scale[j] = static_cast<int8_t>((low | (high << 4)) - 32);
  }
}

// ---- dequantization (ggml dequantize_row_*; ggml-base has no FMA: products rounded first) ----

void dequant_q2_k(const void* src, float* y, int64_t n) {
  const auto* x = static_cast<const BlockQ2_K*>(src);
  Q2K b;
  for (int64_t i = 0; i < n / 256; ++i, y += 256) {
    decode(x[i], b);
    const float d = h2f(x[i].d), dmin = h2f(x[i].dmin);
    for (int j = 0; j < 16; ++j) {
      const float dl = d * static_cast<float>(b.scale[j]);
      const float ml = dmin * static_cast<float>(b.min[j]);
      for (int l = 0; l < 16; ++l) y[16 * j + l] = round_f32(dl * static_cast<float>(b.q[16 * j + l])) - ml;
    }
  }
}

void dequant_q3_k(const void* src, float* y, int64_t n) {
  const auto* x = static_cast<const BlockQ3_K*>(src);
  Q3K b;
  for (int64_t i = 0; i < n / 256; ++i, y += 256) {
    decode(x[i], b);
    const float d = h2f(x[i].d);
    for (int j = 0; j < 16; ++j) {
      const float dl = d * static_cast<float>(b.scale[j]);
      for (int l = 0; l < 16; ++l) y[16 * j + l] = dl * static_cast<float>(b.q[16 * j + l]);
    }
  }
}

void dequant_q5_k(const void* src, float* y, int64_t n) {
  const auto* x = static_cast<const BlockQ5_K*>(src);
  Q5K b;
  for (int64_t i = 0; i < n / 256; ++i, y += 256) {
    decode(x[i], b);
    const float d = h2f(x[i].d), dmin = h2f(x[i].dmin);
    for (int j = 0; j < 8; ++j) {
      const float dl = d * static_cast<float>(b.scale[j]);
      const float ml = dmin * static_cast<float>(b.min[j]);
      for (int l = 0; l < 32; ++l) y[32 * j + l] = round_f32(dl * static_cast<float>(b.q[32 * j + l])) - ml;
    }
  }
}

void dequant_iq4_xs(const void* src, float* y, int64_t n) {
  const auto* x = static_cast<const BlockIQ4_XS*>(src);
  IQ4XS b;
  for (int64_t i = 0; i < n / 256; ++i, y += 256) {
    decode(x[i], b);
    const float d = h2f(x[i].d);
    for (int j = 0; j < 8; ++j) {
      const float dl = d * static_cast<float>(b.scale[j]);
      for (int l = 0; l < 32; ++l) y[32 * j + l] = dl * static_cast<float>(b.q[32 * j + l]);
    }
  }
}

// ---- dot products against Q8_K ----

// lanes[k] = Σ scale(e) · q[e] · q8[e] over the elements e of lane k (quant_lanes.h), with
// `group` elements per scale.
template <typename S>
void superblock_lanes(const int8_t* q, const S* scale, int group, const int8_t* q8, int32_t lanes[8]) {
  for (int k = 0; k < 8; ++k) lanes[k] = 0;
  for (int e = 0; e < 256; ++e) lanes[detail::lane_of(e)] += static_cast<int32_t>(scale[e / group]) * q[e] * q8[e];
}

// Q2_K: per super-block, first the mins (lane k: min[2k]·bsums[2k] + min[2k+1]·bsums[2k+1],
// times -a.d·fp16(w.dmin)), then the scaled quants (times a.d·fp16(w.d)), into the same lanes.
float dot_q2_k(const void* row, const void* act, int64_t n) {
  const auto* x = static_cast<const BlockQ2_K*>(row);
  const auto* y = static_cast<const BlockQ8_K*>(act);
  detail::LaneAccumulator acc;
  Q2K b;
  int32_t lanes[8];
  for (int64_t i = 0; i < n / 256; ++i) {
    decode(x[i], b);
    const float d = y[i].d * h2f(x[i].d);
    const float dmin = -y[i].d * h2f(x[i].dmin);
    for (int k = 0; k < 8; ++k) lanes[k] = b.min[2 * k] * y[i].bsums[2 * k] + b.min[2 * k + 1] * y[i].bsums[2 * k + 1];
    acc.fma(dmin, lanes);
    superblock_lanes(b.q, b.scale, 16, y[i].qs, lanes);
    acc.fma(d, lanes);
  }
  return acc.sum();
}

float dot_q3_k(const void* row, const void* act, int64_t n) {
  const auto* x = static_cast<const BlockQ3_K*>(row);
  const auto* y = static_cast<const BlockQ8_K*>(act);
  detail::LaneAccumulator acc;
  Q3K b;
  int32_t lanes[8];
  for (int64_t i = 0; i < n / 256; ++i) {
    decode(x[i], b);
    superblock_lanes(b.q, b.scale, 16, y[i].qs, lanes);
    acc.fma(y[i].d * h2f(x[i].d), lanes);
  }
  return acc.sum();
}

// Q5_K: the mins Σ_j min_j·(bsums[2j] + bsums[2j+1]) as one exact integer per super-block,
// accumulated by a scalar fma with -a.d·fp16(w.dmin) and added after the lanes' sum.
float dot_q5_k(const void* row, const void* act, int64_t n) {
  const auto* x = static_cast<const BlockQ5_K*>(row);
  const auto* y = static_cast<const BlockQ8_K*>(act);
  detail::LaneAccumulator acc;
  float summs = 0.0f;
  Q5K b;
  int32_t lanes[8];
  for (int64_t i = 0; i < n / 256; ++i) {
    decode(x[i], b);
    const float d = y[i].d * h2f(x[i].d);
    const float dmin = -y[i].d * h2f(x[i].dmin);
    int32_t mins = 0;
    for (int j = 0; j < 8; ++j) mins += b.min[j] * (y[i].bsums[2 * j] + y[i].bsums[2 * j + 1]);
    summs = std::fma(dmin, static_cast<float>(mins), summs);
    superblock_lanes(b.q, b.scale, 32, y[i].qs, lanes);
    acc.fma(d, lanes);
  }
  return acc.sum() + summs;
}

float dot_iq4_xs(const void* row, const void* act, int64_t n) {
  const auto* x = static_cast<const BlockIQ4_XS*>(row);
  const auto* y = static_cast<const BlockQ8_K*>(act);
  detail::LaneAccumulator acc;
  IQ4XS b;
  int32_t lanes[8];
  for (int64_t i = 0; i < n / 256; ++i) {
    decode(x[i], b);
    superblock_lanes(b.q, b.scale, 32, y[i].qs, lanes);
    acc.fma(h2f(x[i].d) * y[i].d, lanes);
  }
  return acc.sum();
}

template <GgmlType T, void (*Dequant)(const void*, float*, int64_t), float (*Dot)(const void*, const void*, int64_t)>
constexpr detail::TypeKernels kKernels{Dequant, Dot, detail::portable_matvec_rows<T, Dot>};

}  // namespace

namespace detail {

const TypeKernels* lanes_portable(GgmlType type) {
  const TypeKernels* k = blocks32_portable(type);
  return k != nullptr ? k : kquants_portable(type);
}

const TypeKernels* kquants_portable(GgmlType type) {
  switch (type) {
    case GgmlType::Q2_K: return &kKernels<GgmlType::Q2_K, dequant_q2_k, dot_q2_k>;
    case GgmlType::Q3_K: return &kKernels<GgmlType::Q3_K, dequant_q3_k, dot_q3_k>;
    case GgmlType::Q5_K: return &kKernels<GgmlType::Q5_K, dequant_q5_k, dot_q5_k>;
    case GgmlType::IQ4_XS: return &kKernels<GgmlType::IQ4_XS, dequant_iq4_xs, dot_iq4_xs>;
    default: return nullptr;
  }
}

}  // namespace detail
}  // namespace kakeya::engine
