#version 450
// out[t] = row tokens[t] of the table, dequantized (one workgroup per token). VARIANT: type.
#include "common.glsl"
#include "dequant.glsl"
layout(push_constant) uniform PC {
  U32Buf table;
  I32Buf tokens;
  F32Buf out_;
  uint cols;
  uint row_bytes;
} pc;
void main() {
  const uint t = gl_WorkGroupID.x;
  const uint row = uint(pc.tokens.v[t]) * pc.row_bytes;
  const uint subs = (pc.cols + 31u) / 32u;
  for (uint s = gl_LocalInvocationID.x; s < subs; s += WG) {
    float v[32];
    const uint n = min(32u, pc.cols - s * 32u);
    dequant32(pc.table, VARIANT, row, s, n, v);
    for (uint j = 0u; j < n; ++j) pc.out_.v[t * pc.cols + s * 32u + j] = v[j];
  }
}
