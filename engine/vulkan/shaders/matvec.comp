#version 450
// y[t][r] = Σ_k W[r][k] · x[t][k]: one workgroup per (output row, token); the workgroup's
// invocations take sub-blocks of 32 in turn, dequantize them (dequant.glsl) and reduce. x holds
// the activations already converted like ggml's vec_dot_type (quantize_act.comp). Every output
// is computed the same way whatever the number of tokens, so a batch gives the logits of one-
// token passes bit for bit (backend.h, "verify agrees with decode"). VARIANT: weight type.
// Rows: gl_WorkGroupID.x + gl_WorkGroupID.z · gl_NumWorkGroups.x (past 65535 rows).
#include "common.glsl"
#include "dequant.glsl"
#include "reduce.glsl"
layout(push_constant) uniform PC {
  U32Buf w;
  F32Buf x;
  F32Buf y;
  uint n_in;
  uint n_out;
  uint row_bytes;
  uint y_stride;  // floats between tokens of y
} pc;
void main() {
  const uint r = gl_WorkGroupID.x + gl_WorkGroupID.z * gl_NumWorkGroups.x;
  if (r >= pc.n_out) return;
  const uint t = gl_WorkGroupID.y;
  const uint subs = (pc.n_in + 31u) / 32u;
  const uint xb = t * pc.n_in;
  float acc = 0.0;
  for (uint s = gl_LocalInvocationID.x; s < subs; s += WG) {
    float v[32];
    const uint n = min(32u, pc.n_in - s * 32u);
    dequant32(pc.w, VARIANT, r * pc.row_bytes, s, n, v);
    float part = 0.0;
    for (uint j = 0u; j < n; ++j) part += v[j] * pc.x.v[xb + s * 32u + j];
    acc += part;
  }
  const float total = wg_sum(acc);
  if (gl_LocalInvocationID.x == 0u) pc.y.v[t * pc.y_stride + r] = total;
}
