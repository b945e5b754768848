#pragma once
// ggml-cpu's x86 f32 accumulation of quantized dot products, in portable C++: the rounding the
// kernels of Q4_1, Q5_0, Q5_1, IQ4_NL, Q2_K, Q3_K, Q5_K and IQ4_XS follow in every kernel set
// (quant.h). ggml's AVX2 code sums each block's exact integer products into the 8 int32 lanes of
// a 256-bit register (maddubs + madd, or VNNI dpbusd: lane k holds bytes 4k..4k+3 of every
// 32-byte vector, so element e of a block lands in lane (e / 4) % 8), converts them to f32 and
// accumulates acc = fma(block scale, lanes, acc) block after block; the row's value is
// hsum_float_8(acc): (hi + lo) halves, then [0]+[2] and [1]+[3], then the two sums.
// Include only from the portable kernel files (the SIMD files compute the same in registers).
#include <cmath>
#include <cstdint>

namespace kakeya::engine::detail {

inline int lane_of(int element) { return (element / 4) % 8; }

struct LaneAccumulator {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};

  // acc[k] = fma(scale, float(lanes[k]), acc[k]) for every lane.
  void fma(float scale, const int32_t lanes[8]) {
    for (int k = 0; k < 8; ++k) acc[k] = std::fma(scale, static_cast<float>(lanes[k]), acc[k]);
  }

  // Lane-wise acc += other.acc.
  void add(const LaneAccumulator& other) {
    for (int k = 0; k < 8; ++k) acc[k] += other.acc[k];
  }

  // ggml hsum_float_8.
  float sum() const {
    float h[4];
    for (int i = 0; i < 4; ++i) h[i] = acc[4 + i] + acc[i];
    const float a = h[0] + h[2];
    const float b = h[1] + h[3];
    return a + b;
  }
};

}  // namespace kakeya::engine::detail
