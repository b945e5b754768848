#include "engine/presets/reference_ops.h"

#include <algorithm>
#include <array>
#include <cmath>

#include "engine/cpu/quant.h"

namespace kakeya::engine::reference {

std::vector<float> dequantize(const WeightMatrix& w) {
  const QuantKernels& K = quant_kernels(KernelIsa::Portable);
  std::vector<float> out(static_cast<size_t>(w.n_in * w.n_out));
  for (int64_t r = 0; r < w.n_out; ++r) K.dequantize_row(w.type, w.row(r), out.data() + r * w.n_in, w.n_in);
  return out;
}

void matvec(const WeightMatrix& w, const float* x, float* y) {
  const QuantKernels& K = quant_kernels(KernelIsa::Portable);
  ActivationBuffer act;
  K.quantize_activations(w.type, x, w.n_in, act);
  for (int64_t r = 0; r < w.n_out; ++r) y[r] = K.vec_dot(w.type, w.row(r), act);
}

void matvec_f32(const WeightMatrix& w, const float* x, float* y) {
  const QuantKernels& K = quant_kernels(KernelIsa::Portable);
  std::vector<float> row(static_cast<size_t>(w.n_in));
  for (int64_t r = 0; r < w.n_out; ++r) {
    K.dequantize_row(w.type, w.row(r), row.data(), w.n_in);
    double s = 0;
    for (int64_t i = 0; i < w.n_in; ++i) s += static_cast<double>(row[static_cast<size_t>(i)]) * x[i];
    y[r] = static_cast<float>(s);
  }
}

void rms_norm(const float* x, const float* w, int64_t n, float eps, float* y) {
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(x[i]) * x[i];
  const float scale = 1.0f / std::sqrt(static_cast<float>(sum / static_cast<double>(n)) + eps);
  for (int64_t i = 0; i < n; ++i) y[i] = (x[i] * scale) * w[i];
}

void rope(float* x, int64_t n_heads, int64_t head_dim, const RopeParams& p, const float* freq_factors, int64_t pos) {
  const float theta_scale = std::pow(p.freq_base, -2.0f / static_cast<float>(p.n_dims));
  const std::array<float, 2> corr = rope_yarn_corr_dims(p);
  const int64_t half = p.n_dims / 2;
  for (int64_t h = 0; h < n_heads; ++h) {
    float theta = static_cast<float>(pos);
    float* v = x + h * head_dim;
    for (int64_t i = 0; i < half; ++i, theta *= theta_scale) {
      const float extrap = theta / (freq_factors != nullptr ? freq_factors[i] : 1.0f);
      float angle = p.freq_scale * extrap;
      float magnitude = p.attn_factor;
      if (p.ext_factor != 0.0f) {
        const float ramp = (1 - std::clamp((static_cast<float>(i) - corr[0]) / std::max(0.001f, corr[1] - corr[0]),
                                           0.0f, 1.0f)) * p.ext_factor;
        angle = angle * (1 - ramp) + extrap * ramp;
        magnitude *= 1.0f + 0.1f * std::log(1.0f / p.freq_scale);
      }
      const float c = std::cos(angle) * magnitude, s = std::sin(angle) * magnitude;
      float& x0 = p.layout == RopeLayout::kNeox ? v[i] : v[2 * i];
      float& x1 = p.layout == RopeLayout::kNeox ? v[i + half] : v[2 * i + 1];
      const float a = x0, b = x1;
      x0 = a * c - b * s;
      x1 = a * s + b * c;
    }
  }
}

void add_bias(float* x, const float* bias, size_t n) {
  for (size_t i = 0; i < n; ++i) x[i] += bias[i];
}

void attention_head(const float* q, const KvSlots& slots, int32_t qpos, int64_t head_dim, float* out) {
  const size_t hd = static_cast<size_t>(head_dim);
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  const KvVisibleRanges r = kv_visible_ranges(slots, qpos);
  std::vector<size_t> visible;
  for (size_t s = 0; s < r.a; ++s) visible.push_back(s);
  for (size_t s = r.b; s < r.c; ++s) visible.push_back(s);
  std::vector<float> scores(visible.size());
  float mx = -INFINITY;
  for (size_t i = 0; i < visible.size(); ++i) {
    const float* k = slots.k + visible[i] * slots.row_stride;
    float dot = 0;
    for (size_t d = 0; d < hd; ++d) dot += q[d] * k[d];
    scores[i] = dot * scale;
    mx = std::max(mx, scores[i]);
  }
  double sum = 0;
  for (float& s : scores) {
    s = std::exp(s - mx);
    sum += s;
  }
  std::fill(out, out + hd, 0.0f);
  for (size_t i = 0; i < visible.size(); ++i) {
    const float p = static_cast<float>(scores[i] / sum);
    const float* v = slots.v + visible[i] * slots.row_stride;
    for (size_t d = 0; d < hd; ++d) out[d] += p * v[d];
  }
}

void swiglu(float* gate, const float* up, size_t n) {
  for (size_t i = 0; i < n; ++i) gate[i] = (gate[i] / (1.0f + std::exp(-gate[i]))) * up[i];
}

}  // namespace kakeya::engine::reference
