#version 450
// RoPE GGML mode 0, in place on x [n][n_heads·head_dim]: per token t and head, pairs (2i, 2i+1)
// of the first rope_dim values rotated by the angle whose cos/sin the host computed exactly as
// the CPU backend does (table [n][rope_dim] = cos, sin, cos, sin, ...). One workgroup per token.
#include "common.glsl"
layout(push_constant) uniform PC {
  F32Buf x;
  F32Buf table;
  uint n_heads;
  uint head_dim;
  uint rope_dim;
  uint width;  // floats per row of x
} pc;
void main() {
  const uint t = gl_WorkGroupID.x;
  const uint pairs = pc.rope_dim / 2u;
  for (uint k = gl_LocalInvocationID.x; k < pc.n_heads * pairs; k += WG) {
    const uint h = k / pairs, i0 = 2u * (k % pairs);
    const uint a = t * pc.width + h * pc.head_dim + i0;
    const float c = pc.table.v[t * pc.rope_dim + i0];
    const float s = pc.table.v[t * pc.rope_dim + i0 + 1u];
    const float x0 = pc.x.v[a], x1 = pc.x.v[a + 1u];
    precise const float y0 = x0 * c - x1 * s;
    precise const float y1 = x0 * s + x1 * c;
    pc.x.v[a] = y0;
    pc.x.v[a + 1u] = y1;
  }
}
