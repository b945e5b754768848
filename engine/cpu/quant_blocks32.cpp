// Portable kernels of the 32-element block types added beside Q4_0/Q8_0: Q4_1 and Q5_1 (against
// Q8_1 activations), Q5_0 and IQ4_NL (against Q8_0). Dequantization is ggml's to_float
// (ggml-quants.c dequantize_row_*); dot products round like ggml-cpu's x86 code
// (quant_lanes.h), so the SIMD kernel sets are bit-identical to these.

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

// Element e (0..31) of a block: the low nibble of qs[e] for e < 16, the high nibble of qs[e - 16]
// after that; the 5th bit is bit e of qh.
inline int nibble(const uint8_t* qs, int e) { return e < 16 ? qs[e] & 0x0F : qs[e - 16] >> 4; }
inline int fifth_bit(const uint8_t* qh, int e) {
  uint32_t h;
  std::memcpy(&h, qh, 4);
  return static_cast<int>((h >> e) & 1u) << 4;
}

// The integer quant of element e, as the dot products multiply it.
inline int quant(const BlockQ4_1& b, int e) { return nibble(b.qs, e); }
inline int quant(const BlockQ5_0& b, int e) { return (nibble(b.qs, e) | fifth_bit(b.qh, e)) - 16; }
inline int quant(const BlockQ5_1& b, int e) { return nibble(b.qs, e) | fifth_bit(b.qh, e); }
inline int quant(const BlockIQ4_NL& b, int e) { return kIQ4NLValues[nibble(b.qs, e)]; }

// ---- dequantization ----

// Symmetric types: value = q · d.
template <typename B>
void dequant_scaled(const void* src, float* y, int64_t n) {
  const auto* x = static_cast<const B*>(src);
  for (int64_t i = 0; i < n / 32; ++i) {
    const float d = h2f(x[i].d);
    for (int e = 0; e < 32; ++e) y[i * 32 + e] = static_cast<float>(quant(x[i], e)) * d;
  }
}

// Types with a min: value = q · d + m, the product rounded before the add (ggml-base has no FMA).
template <typename B>
void dequant_affine(const void* src, float* y, int64_t n) {
  const auto* x = static_cast<const B*>(src);
  for (int64_t i = 0; i < n / 32; ++i) {
    const float d = h2f(x[i].d);
    const float m = h2f(x[i].m);
    for (int e = 0; e < 32; ++e) y[i * 32 + e] = round_f32(static_cast<float>(quant(x[i], e)) * d) + m;
  }
}

// ---- dot products ----

template <typename B>
void block_lanes(const B& x, const int8_t* q8, int32_t lanes[8]) {
  for (int k = 0; k < 8; ++k) lanes[k] = 0;
  for (int e = 0; e < 32; ++e) lanes[detail::lane_of(e)] += quant(x, e) * q8[e];
}

// Q5_0 · Q8_0: acc = fma(fp16(w.d)·fp16(a.d), lanes, acc).
float dot_q5_0(const void* row, const void* act, int64_t n) {
  const auto* x = static_cast<const BlockQ5_0*>(row);
  const auto* y = static_cast<const BlockQ8_0*>(act);
  detail::LaneAccumulator acc;
  int32_t lanes[8];
  for (int64_t i = 0; i < n / 32; ++i) {
    block_lanes(x[i], y[i].qs, lanes);
    acc.fma(h2f(x[i].d) * h2f(y[i].d), lanes);
  }
  return acc.sum();
}

// IQ4_NL · Q8_0 (ggml_vec_dot_iq4_nl_q8_0): even and odd blocks in two lane accumulators, added
// lane-wise before the horizontal sum; an odd last block is added by one scalar fma of its
// whole integer sum.
float dot_iq4_nl(const void* row, const void* act, int64_t n) {
  const auto* x = static_cast<const BlockIQ4_NL*>(row);
  const auto* y = static_cast<const BlockQ8_0*>(act);
  const int64_t nb = n / 32;
  detail::LaneAccumulator even, odd;
  int32_t lanes[8];
  int64_t i = 0;
  for (; i + 1 < nb; i += 2) {
    block_lanes(x[i], y[i].qs, lanes);
    even.fma(h2f(x[i].d) * h2f(y[i].d), lanes);
    block_lanes(x[i + 1], y[i + 1].qs, lanes);
    odd.fma(h2f(x[i + 1].d) * h2f(y[i + 1].d), lanes);
  }
  even.add(odd);
  float s = even.sum();
  if (i < nb) {
    block_lanes(x[i], y[i].qs, lanes);
    int32_t sumi = 0;
    for (int k = 0; k < 8; ++k) sumi += lanes[k];
    s = std::fma(h2f(x[i].d) * h2f(y[i].d), static_cast<float>(sumi), s);
  }
  return s;
}

// Q4_1, Q5_1 · Q8_1: the lanes as above, plus the min term Σ fp16(w.m)·fp16(a.s) accumulated by
// one scalar fma per block and added after the lanes' sum.
template <typename B>
float dot_q8_1(const void* row, const void* act, int64_t n) {
  const auto* x = static_cast<const B*>(row);
  const auto* y = static_cast<const BlockQ8_1*>(act);
  detail::LaneAccumulator acc;
  float summs = 0.0f;
  int32_t lanes[8];
  for (int64_t i = 0; i < n / 32; ++i) {
    summs = std::fma(h2f(x[i].m), h2f(y[i].s), summs);
    block_lanes(x[i], y[i].qs, lanes);
    acc.fma(h2f(x[i].d) * h2f(y[i].d), lanes);
  }
  return acc.sum() + summs;
}

template <GgmlType T, void (*Dequant)(const void*, float*, int64_t), float (*Dot)(const void*, const void*, int64_t)>
constexpr detail::TypeKernels kKernels{Dequant, Dot, detail::portable_matvec_rows<T, Dot>};

}  // namespace

namespace detail {

const TypeKernels* blocks32_portable(GgmlType type) {
  switch (type) {
    case GgmlType::Q4_1: return &kKernels<GgmlType::Q4_1, dequant_affine<BlockQ4_1>, dot_q8_1<BlockQ4_1>>;
    case GgmlType::Q5_0: return &kKernels<GgmlType::Q5_0, dequant_scaled<BlockQ5_0>, dot_q5_0>;
    case GgmlType::Q5_1: return &kKernels<GgmlType::Q5_1, dequant_affine<BlockQ5_1>, dot_q8_1<BlockQ5_1>>;
    case GgmlType::IQ4_NL: return &kKernels<GgmlType::IQ4_NL, dequant_scaled<BlockIQ4_NL>, dot_iq4_nl>;
    default: return nullptr;
  }
}

}  // namespace detail
}  // namespace kakeya::engine
