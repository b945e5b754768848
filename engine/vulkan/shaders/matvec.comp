#version 450
// y[t][r] = Σ_k W[r][k] · x[t][k]. A workgroup of WG invocations computes WG / L rows of up to
// NT = 8 tokens (each dequantized sub-block is used for every token), L = the lanes per row (a power of two, at most WG, about the row's sub-block count):
// each lane takes sub-blocks of 32 in turn, dequantizes them (dequant.glsl) and the row's lanes
// reduce in shared memory by a fixed tree. x holds the activations already converted like
// ggml's vec_dot_type (quantize_act.comp). Every output is computed the same way whatever the
// number of tokens, so a batch gives the logits of one-token passes bit for bit (backend.h,
// "verify agrees with decode"). VARIANT: weight type. Row groups: gl_WorkGroupID.x +
// gl_WorkGroupID.z · gl_NumWorkGroups.x (past 65535 groups); tokens from NT·gl_WorkGroupID.y.
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"
#include "dequant.glsl"
layout(push_constant) uniform PC {
  U32Buf w;
  F32Buf x;
  F32Buf y;
  F32Buf sums;    // Q4_1/Q5_1: the Q8_1 block sums of x ([n][n_in / 32]), else unused
  uint n_in;
  uint n_out;
  uint row_bytes;
  uint y_stride;  // floats between tokens of y
  uint lanes;     // L
  uint n_tokens;
} pc;
const uint NT = 8u;
shared float part[NT][256];
void main() {
  const uint tid = gl_LocalInvocationID.x;
  const uint lane = tid % pc.lanes;
  const uint r = (gl_WorkGroupID.x + gl_WorkGroupID.z * gl_NumWorkGroups.x) * (WG / pc.lanes) + tid / pc.lanes;
  const uint t0 = gl_WorkGroupID.y * NT;
  const uint nt = min(NT, pc.n_tokens - t0);
  const uint subs = (pc.n_in + 31u) / 32u;
  float acc[NT];
  [[unroll]] for (uint j = 0u; j < NT; ++j) acc[j] = 0.0;
  if (r < pc.n_out) {
    for (uint s = lane; s < subs; s += pc.lanes) {
      float v[32];
      const uint n = min(32u, pc.n_in - s * 32u);
      const bool q81 = has_q8_1_min(VARIANT);
      dequant32m(pc.w, VARIANT, r * pc.row_bytes, s, n, !q81, v);
      const float m = q81 ? block_min(pc.w, VARIANT, r * pc.row_bytes, s) : 0.0;
      // Constant trip counts keep v and acc in registers; the guards skip what is past the
      // tokens or the row (the same sums in the same order as a loop to nt and n).
      [[unroll]] for (uint j = 0u; j < NT; ++j) {
        if (j < nt) {
          const uint xb = (t0 + j) * pc.n_in + s * 32u;
          float p = 0.0;
          [[unroll]] for (uint i = 0u; i < 32u; ++i)
            if (i < n) p += v[i] * pc.x.v[xb + i];
          if (q81) p += m * pc.sums.v[(t0 + j) * subs + s];
          acc[j] += p;
        }
      }
    }
  }
  [[unroll]] for (uint j = 0u; j < NT; ++j) part[j][tid] = acc[j];
  barrier();
  for (uint h = pc.lanes / 2u; h > 0u; h >>= 1) {
    if (lane < h)
      for (uint j = 0u; j < nt; ++j) part[j][tid] += part[j][tid + h];
    barrier();
  }
  if (lane == 0u && r < pc.n_out)
    for (uint j = 0u; j < nt; ++j) pc.y.v[(t0 + j) * pc.y_stride + r] = part[j][tid];
}
