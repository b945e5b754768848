#version 450
// RoPE in place on x [n][n_heads·head_dim] (engine/rope.h): per token t and head, each rotated
// pair i (normal layout: elements 2i, 2i + 1; NEOX: i, i + n_dims/2) turned by the cos/sin the
// host computed exactly as the CPU backend does (table [n][n_dims] = cos, sin, cos, sin, ...,
// magnitude included). One workgroup per token.
#include "common.glsl"
layout(push_constant) uniform PC {
  F32Buf x;
  F32Buf table;
  uint n_heads;
  uint head_dim;
  uint n_dims;
  uint width;  // floats per row of x
  uint neox;
} pc;
void main() {
  const uint t = gl_WorkGroupID.x;
  const uint pairs = pc.n_dims / 2u;
  for (uint k = gl_LocalInvocationID.x; k < pc.n_heads * pairs; k += WG) {
    const uint h = k / pairs, i = k % pairs;
    const uint a = t * pc.width + h * pc.head_dim + (pc.neox != 0u ? i : 2u * i);
    const uint b = a + (pc.neox != 0u ? pairs : 1u);
    const float c = pc.table.v[t * pc.n_dims + 2u * i];
    const float s = pc.table.v[t * pc.n_dims + 2u * i + 1u];
    const float x0 = pc.x.v[a], x1 = pc.x.v[b];
    precise const float y0 = x0 * c - x1 * s;
    precise const float y1 = x0 * s + x1 * c;
    pc.x.v[a] = y0;
    pc.x.v[b] = y1;
  }
}
