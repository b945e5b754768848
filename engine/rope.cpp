#include "engine/rope.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace kakeya::engine {
namespace {

// The pair index whose wavelength fits n_rot times into n_ctx_orig (ggml_rope_yarn_corr_dim).
float yarn_corr_dim(int64_t n_dims, int64_t n_ctx_orig, float n_rot, float base) {
  return static_cast<float>(n_dims) *
         std::log(static_cast<float>(n_ctx_orig) / (n_rot * 2 * std::numbers::pi_v<float>)) / (2 * std::log(base));
}

}  // namespace

const char* rope_layout_name(RopeLayout layout) { return layout == RopeLayout::kNeox ? "neox" : "normal"; }

const char* rope_scaling_name(RopeScaling scaling) {
  switch (scaling) {
    case RopeScaling::kNone: return "none";
    case RopeScaling::kLinear: return "linear";
    case RopeScaling::kYarn: return "yarn";
  }
  return "none";
}

std::array<float, 2> rope_yarn_corr_dims(const RopeParams& p) {
  const float start = std::floor(yarn_corr_dim(p.n_dims, p.n_ctx_orig, p.beta_fast, p.freq_base));
  const float end = std::ceil(yarn_corr_dim(p.n_dims, p.n_ctx_orig, p.beta_slow, p.freq_base));
  return {std::max(0.0f, start), std::min(static_cast<float>(p.n_dims - 1), end)};
}

float rope_theta_scale(const RopeParams& p) {
  return std::pow(p.freq_base, -2.0f / static_cast<float>(p.n_dims));
}

nlohmann::json to_json(const RopeParams& p) {
  return {{"layout", rope_layout_name(p.layout)}, {"n_dims", p.n_dims},         {"freq_base", p.freq_base},
          {"freq_scale", p.freq_scale},           {"ext_factor", p.ext_factor}, {"attn_factor", p.attn_factor},
          {"beta_fast", p.beta_fast},             {"beta_slow", p.beta_slow},   {"n_ctx_orig", p.n_ctx_orig},
          {"scaling", rope_scaling_name(p.scaling)}};
}

void rope_cache(const RopeParams& p, const float* freq_factors, float theta_scale, const std::array<float, 2>& corr,
                int32_t pos, float* cache) {
  float theta = static_cast<float>(pos);
  for (int64_t i0 = 0; i0 < p.n_dims; i0 += 2) {
    const float ff = freq_factors != nullptr ? freq_factors[i0 / 2] : 1.0f;
    const float theta_extrap = theta / ff;
    const float theta_interp = p.freq_scale * theta_extrap;
    float angle = theta_interp;
    float mscale = p.attn_factor;
    if (p.ext_factor != 0.0f) {
      const float y = (static_cast<float>(i0 / 2) - corr[0]) / std::max(0.001f, corr[1] - corr[0]);
      const float ramp_mix = (1 - std::min(1.0f, std::max(0.0f, y))) * p.ext_factor;
      angle = theta_interp * (1 - ramp_mix) + theta_extrap * ramp_mix;
      mscale *= 1.0f + 0.1f * std::log(1.0f / p.freq_scale);
    }
    cache[i0] = std::cos(angle) * mscale;
    cache[i0 + 1] = std::sin(angle) * mscale;
    theta *= theta_scale;
  }
}

}  // namespace kakeya::engine
