#pragma once
// RoPE (rotary position embedding) as data: which pairs of a head rotate (the layout), by which
// angle (frequency base, per-pair frequency factors, position scaling) and with which magnitude
// (YaRN). These are the parameters of ggml's rope_ext as llama.cpp c392e50 passes them for the
// architectures the engine loads (llm_load_hparams, llama_init_from_model's cparams,
// build_llama/build_qwen2); model.h reads them from a GGUF, every backend's rope op follows them.
//
// For pair i (0 <= i < n_dims/2) of a head at position p (ggml-cpu ggml_rope_cache_init and
// rope_yarn):
//   theta_extrap = p·θᵢ / ff[i], θᵢ = freq_base^(−2i/n_dims) built as ggml builds it: start from
//                  p and multiply by freq_base^(−2/n_dims) once per pair (float); ff = the
//                  frequency factors (a Llama-3.1/3.2 file's rope_freqs.weight), else 1
//   theta_interp = freq_scale·theta_extrap
//   ext_factor == 0:  theta = theta_interp, mscale = attn_factor
//   ext_factor != 0 (YaRN): ramp = (1 − clamp((i − lo)/max(0.001, hi − lo), 0, 1))·ext_factor,
//                  theta = theta_interp·(1 − ramp) + theta_extrap·ramp,
//                  mscale = attn_factor·(1 + 0.1·ln(1/freq_scale)), [lo, hi] = rope_yarn_corr_dims
//   cos = cos(theta)·mscale, sin = sin(theta)·mscale; (x0, x1) ← (x0·cos − x1·sin, x0·sin + x1·cos)
// The pair (x0, x1) of a head:
//   RopeLayout::kNormal (GGML mode 0, llama):  elements 2i and 2i + 1;
//   RopeLayout::kNeox   (GGML mode 2, qwen2):  elements i and i + n_dims/2.
// Elements n_dims .. head_dim − 1 pass through unchanged.
#include <array>
#include <cstdint>

#include <nlohmann/json.hpp>

namespace kakeya::engine {

enum class RopeLayout { kNormal, kNeox };
// "normal", "neox".
const char* rope_layout_name(RopeLayout layout);

// The GGUF's `<arch>.rope.scaling.type` (llama.cpp llama_rope_scaling_type); what it sets is in
// RopeParams (freq_scale, ext_factor).
enum class RopeScaling { kNone, kLinear, kYarn };
// "none", "linear", "yarn".
const char* rope_scaling_name(RopeScaling scaling);

struct RopeParams {
  RopeLayout layout = RopeLayout::kNormal;
  int64_t n_dims = 0;         // elements rotated per head (even, <= head_dim)
  float freq_base = 10000.0f;
  float freq_scale = 1.0f;    // 1 / rope.scaling.factor (linear, YaRN); 1 without scaling
  float ext_factor = 0.0f;    // YaRN's extrapolation mix: 1 with YaRN, else 0
  float attn_factor = 1.0f;   // magnitude of cos/sin (rope.scaling.attn_factor)
  float beta_fast = 32.0f;    // YaRN correction range (llama.cpp's defaults)
  float beta_slow = 1.0f;
  int64_t n_ctx_orig = 0;     // YaRN: rope.scaling.original_context_length, else context_length
  RopeScaling scaling = RopeScaling::kNone;  // what the file asked for (reports)
};

// YaRN's correction range [lo, hi] in pair indices (ggml_rope_yarn_corr_dims): the pairs whose
// wavelength fits beta_fast resp. beta_slow times into n_ctx_orig, clamped to [0, n_dims − 1].
std::array<float, 2> rope_yarn_corr_dims(const RopeParams& p);

// freq_base^(−2/n_dims): the factor between the angles of consecutive pairs.
float rope_theta_scale(const RopeParams& p);

// The cos/sin of every rotated pair at position `pos`, scaled by the magnitude (ggml-cpu
// ggml_rope_cache_init + rope_yarn, the formulas above): cache[2i] = cos, cache[2i + 1] = sin,
// i < n_dims/2. theta_scale = rope_theta_scale(p), corr = rope_yarn_corr_dims(p); freq_factors
// [n_dims/2] or nullptr. Every backend rotates by these host-computed values, so RoPE agrees
// across backends bit for bit.
void rope_cache(const RopeParams& p, const float* freq_factors, float theta_scale, const std::array<float, 2>& corr,
                int32_t pos, float* cache);

// {layout, n_dims, freq_base, freq_scale, ext_factor, attn_factor, beta_fast, beta_slow,
//  n_ctx_orig, scaling} for reports.
nlohmann::json to_json(const RopeParams& p);

}  // namespace kakeya::engine
