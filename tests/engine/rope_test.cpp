// RoPE variants (engine/rope.h) on the CPU backend against values worked out by hand from the
// formulas of ggml's rope: which elements pair up, the angle of each pair, frequency factors,
// linear scaling and YaRN's ramp and magnitude.
#include "engine/rope.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "engine/backend.h"
#include "tests/engine/backends.h"

namespace kakeya::engine {
namespace {

// Rotates one row of n_heads·head_dim values at `pos` on the CPU backend.
std::vector<float> rope_row(const std::vector<float>& x, int64_t n_heads, int64_t head_dim, const RopeParams& p,
                            int32_t pos, const std::vector<float>& freq_factors = {}) {
  Backend& b = test::cpu(1);
  auto buf = b.alloc(x.size() * sizeof(float)).value();
  const Tensor t{buf.get(), 0, GgmlType::F32, static_cast<int64_t>(x.size()), 1};
  b.write(t, x);
  std::unique_ptr<BackendBuffer> ff_buf;
  Tensor ff;
  RopeArgs args{n_heads, head_dim, p, nullptr};
  if (!freq_factors.empty()) {
    const int64_t n = static_cast<int64_t>(freq_factors.size());
    const WeightMatrix w{"rope_freqs.weight", GgmlType::F32, reinterpret_cast<const uint8_t*>(freq_factors.data()), n,
                         1, static_cast<size_t>(n) * sizeof(float)};
    UploadedWeight u = b.upload_weight(w, WeightUse::kVector, nullptr).value();
    ff_buf = std::move(u.buffer);
    ff = u.tensor;
    args.freq_factors = &ff;
  }
  const int32_t positions[1] = {pos};
  b.rope(t, args, positions);
  std::vector<float> out(x.size());
  b.read(t, out);
  b.sync();
  return out;
}

RopeParams params(RopeLayout layout, int64_t n_dims, float base = 10000.0f) {
  RopeParams p;
  p.layout = layout;
  p.n_dims = n_dims;
  p.freq_base = base;
  p.n_ctx_orig = 4096;
  return p;
}

// The rotation of (x0, x1) by `angle`, scaled by `m`.
std::pair<float, float> rotate(float x0, float x1, double angle, double m = 1.0) {
  return {static_cast<float>((x0 * std::cos(angle) - x1 * std::sin(angle)) * m),
          static_cast<float>((x0 * std::sin(angle) + x1 * std::cos(angle)) * m)};
}

TEST(Rope, NormalLayoutRotatesAdjacentPairs) {
  // head_dim 4, base 100: pair 0 (elements 0, 1) by pos·1, pair 1 (elements 2, 3) by pos·100^(−1/2).
  const std::vector<float> x = {1, 2, 3, 4};
  const auto y = rope_row(x, 1, 4, params(RopeLayout::kNormal, 4, 100.0f), 3);
  const auto [a0, a1] = rotate(1, 2, 3.0);
  const auto [b0, b1] = rotate(3, 4, 0.3);
  EXPECT_NEAR(y[0], a0, 1e-5);
  EXPECT_NEAR(y[1], a1, 1e-5);
  EXPECT_NEAR(y[2], b0, 1e-5);
  EXPECT_NEAR(y[3], b1, 1e-5);
}

TEST(Rope, NeoxLayoutPairsElementIWithIPlusHalf) {
  // The same angles, but pair 0 is (elements 0, 2) and pair 1 is (1, 3), in both heads.
  const std::vector<float> x = {1, 2, 3, 4, -1, -2, -3, -4};
  const auto y = rope_row(x, 2, 4, params(RopeLayout::kNeox, 4, 100.0f), 3);
  for (int h = 0; h < 2; ++h) {
    const float s = h == 0 ? 1.0f : -1.0f;
    const auto [a0, a1] = rotate(s * 1, s * 3, 3.0);
    const auto [b0, b1] = rotate(s * 2, s * 4, 0.3);
    EXPECT_NEAR(y[h * 4 + 0], a0, 1e-5) << h;
    EXPECT_NEAR(y[h * 4 + 2], a1, 1e-5) << h;
    EXPECT_NEAR(y[h * 4 + 1], b0, 1e-5) << h;
    EXPECT_NEAR(y[h * 4 + 3], b1, 1e-5) << h;
  }
}

TEST(Rope, PartialRotationLeavesTheRestAlone) {
  const std::vector<float> x = {1, 2, 3, 4, 5, 6, 7, 8};
  for (RopeLayout layout : {RopeLayout::kNormal, RopeLayout::kNeox}) {
    const auto y = rope_row(x, 1, 8, params(layout, 4, 100.0f), 5);
    for (int i = 4; i < 8; ++i) EXPECT_EQ(y[i], x[i]) << rope_layout_name(layout) << " element " << i;
    EXPECT_NE(y[0], x[0]);
  }
}

TEST(Rope, FrequencyFactorsDivideTheAngle) {
  // Llama-3.1's rope_freqs: pair i turns by pos·θᵢ / ff[i].
  const std::vector<float> x = {1, 2, 3, 4};
  const auto y = rope_row(x, 1, 4, params(RopeLayout::kNormal, 4, 100.0f), 3, {2.0f, 8.0f});
  const auto [a0, a1] = rotate(1, 2, 3.0 / 2);
  const auto [b0, b1] = rotate(3, 4, 0.3 / 8);
  EXPECT_NEAR(y[0], a0, 1e-5);
  EXPECT_NEAR(y[1], a1, 1e-5);
  EXPECT_NEAR(y[2], b0, 1e-5);
  EXPECT_NEAR(y[3], b1, 1e-5);
}

TEST(Rope, LinearScalingInterpolatesPositions) {
  // freq_scale 1/4: position 8 turns like position 2 unscaled.
  RopeParams p = params(RopeLayout::kNormal, 8);
  const std::vector<float> x = {1, -2, 3, 0.5f, 0.25f, 7, -1, 2};
  RopeParams scaled = p;
  scaled.freq_scale = 0.25f;
  scaled.scaling = RopeScaling::kLinear;
  const auto a = rope_row(x, 1, 8, scaled, 8);
  const auto b = rope_row(x, 1, 8, p, 2);
  for (size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-5) << i;
}

TEST(Rope, YarnExtrapolatesFastPairsInterpolatesSlowOnesAndScalesMagnitude) {
  // n_dims 128, base 10000, n_ctx_orig 4096: corr dims from ggml's formula
  // n_dims·ln(n_ctx_orig / (β·2π)) / (2·ln(base)) for β = 32 (floor) and 1 (ceil).
  RopeParams p = params(RopeLayout::kNormal, 128);
  p.freq_scale = 0.25f;
  p.ext_factor = 1.0f;
  p.attn_factor = 1.0f;
  p.scaling = RopeScaling::kYarn;
  const auto corr = rope_yarn_corr_dims(p);
  const double lo = std::floor(128 * std::log(4096 / (32 * 2 * M_PI)) / (2 * std::log(10000.0)));
  const double hi = std::ceil(128 * std::log(4096 / (1 * 2 * M_PI)) / (2 * std::log(10000.0)));
  EXPECT_EQ(corr[0], static_cast<float>(lo));
  EXPECT_EQ(corr[1], static_cast<float>(hi));
  ASSERT_GT(lo, 1);
  ASSERT_LT(hi, 63);

  std::vector<float> x(128);
  for (size_t i = 0; i < x.size(); ++i) x[i] = 0.01f * static_cast<float>(i) - 0.3f;
  const int32_t pos = 1000;
  const auto y = rope_row(x, 1, 128, p, pos);
  const double mscale = 1.0 + 0.1 * std::log(4.0);
  const double theta_scale = std::pow(10000.0, -2.0 / 128);
  // Pair 0 (below lo): the unscaled angle; the last pair (above hi): the interpolated angle.
  const auto [a0, a1] = rotate(x[0], x[1], pos, mscale);
  EXPECT_NEAR(y[0], a0, 1e-4);
  EXPECT_NEAR(y[1], a1, 1e-4);
  const double last = pos * std::pow(theta_scale, 63);
  const auto [b0, b1] = rotate(x[126], x[127], last * 0.25, mscale);
  EXPECT_NEAR(y[126], b0, 1e-5);
  EXPECT_NEAR(y[127], b1, 1e-5);
  // A pair inside the ramp mixes the two.
  const int i = static_cast<int>((lo + hi) / 2);
  const double ramp = 1 - std::clamp((i - lo) / (hi - lo), 0.0, 1.0);
  const double theta = pos * std::pow(theta_scale, i);
  const auto [c0, c1] = rotate(x[2 * i], x[2 * i + 1], theta * 0.25 * (1 - ramp) + theta * ramp, mscale);
  EXPECT_NEAR(y[2 * i], c0, 1e-4);
  EXPECT_NEAR(y[2 * i + 1], c1, 1e-4);
}

TEST(Rope, ParamsAsJsonNameTheVariant) {
  RopeParams p = params(RopeLayout::kNeox, 64, 1e6f);
  p.scaling = RopeScaling::kYarn;
  const auto j = to_json(p);
  EXPECT_EQ(j["layout"], "neox");
  EXPECT_EQ(j["scaling"], "yarn");
  EXPECT_EQ(j["n_dims"], 64);
  EXPECT_EQ(j["freq_base"], 1e6f);
}

}  // namespace
}  // namespace kakeya::engine
