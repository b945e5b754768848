#pragma once
// Scalar reference implementations of the backend ops (backend.h), written independently of
// every backend: one thread, plain loops, no sgemm, no fused matmuls. They are what a backend is
// checked against: the per-op table (presets/backend_ops.h) and the reference forward pass of
// backend-parity (presets/backend_parity.h).
//
// Arithmetic (the contract of llama.h, in its simplest order):
//   matvec      the portable kernels (cpu/quant.h KernelIsa::Portable): activations converted per
//               row exactly like the decode path of ggml-cpu (Q8_0 / Q8_K / F16 / BF16), one
//               vec_dot per output row;
//   matvec_f32  Σ w·x over dequantized weights and f32 activations, accumulated in double (the
//               reference for batched paths that do not convert activations, e.g. sgemm);
//   rms_norm    sum of squares in double, scale 1/sqrt(mean + eps) in float, (x·scale)·w;
//   rope        engine/rope.h: the angle of pair i built by repeated multiplication by
//               freq_base^(−2/n_dims) starting from the position, divided by its frequency factor,
//               then position scaling and YaRN's ramp and magnitude; normal or NEOX pairs;
//   add_bias    x + b per row;
//   attention   per query head: float dot products accumulated in order, scores scaled by
//               1/sqrt(head_dim), softmax with the max subtracted and a double denominator, over
//               the visible slots of kv_visible_ranges (kv_cache.h), probabilities rounded to
//               float before the weighted sum of V;
//   swiglu      g / (1 + e^−g) · u.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "engine/kv_cache.h"
#include "engine/model.h"
#include "engine/rope.h"

namespace kakeya::engine::reference {

// Every row of w as f32: [n_out][n_in].
std::vector<float> dequantize(const WeightMatrix& w);
// y[n_out] = W·x, activations converted like the decode path (see above).
void matvec(const WeightMatrix& w, const float* x, float* y);
// y[n_out] = W·x, f32 activations, double accumulation.
void matvec_f32(const WeightMatrix& w, const float* x, float* y);
// y[n] = x / sqrt(mean(x²) + eps) · w.
void rms_norm(const float* x, const float* w, int64_t n, float eps, float* y);
// In place on x [n_heads][head_dim] at position pos; freq_factors [p.n_dims / 2] or nullptr.
void rope(float* x, int64_t n_heads, int64_t head_dim, const RopeParams& p, const float* freq_factors, int64_t pos);
// x[i] += bias[i] for i in [0, n).
void add_bias(float* x, const float* bias, size_t n);
// out [head_dim] = softmax(q·K^T / sqrt(head_dim)) · V over the slots of `slots` visible at qpos.
void attention_head(const float* q, const KvSlots& slots, int32_t qpos, int64_t head_dim, float* out);
// gate[i] = silu(gate[i]) · up[i] for i in [0, n).
void swiglu(float* gate, const float* up, size_t n);

}  // namespace kakeya::engine::reference
