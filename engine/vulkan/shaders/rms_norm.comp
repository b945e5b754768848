#version 450
// out[t] = x[t] / sqrt(mean(x[t]²) + eps) · weight (llama.h); one workgroup per row. The sum of
// squares is a tree of f32 partial sums (the CPU sums in double: ~1e-7 relative apart).
#include "common.glsl"
#include "reduce.glsl"
layout(push_constant) uniform PC {
  F32Buf x;
  F32Buf w;
  F32Buf out_;
  uint cols;
  float eps;
} pc;
void main() {
  const uint b = gl_WorkGroupID.x * pc.cols;
  float acc = 0.0;
  for (uint i = gl_LocalInvocationID.x; i < pc.cols; i += WG) acc += pc.x.v[b + i] * pc.x.v[b + i];
  const float mean = wg_sum(acc) / float(pc.cols);
  const float scale = 1.0 / sqrt(mean + pc.eps);
  for (uint i = gl_LocalInvocationID.x; i < pc.cols; i += WG) {
    precise const float y = (pc.x.v[b + i] * scale) * pc.w.v[i];
    pc.out_.v[b + i] = y;
  }
}
