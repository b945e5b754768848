#version 450
// ids[r] = the index of the largest value of row r (NaN counts as -inf; ties: the lowest index,
// as sampling.h argmax). One workgroup per row; shared-memory reduction of (value, index).
#include "common.glsl"
layout(push_constant) uniform PC {
  F32Buf x;
  I32Buf ids;
  uint cols;
} pc;
shared float best_v[256];
shared uint best_i[256];
void main() {
  const uint r = gl_WorkGroupID.x, tid = gl_LocalInvocationID.x;
  float bv = -1.0 / 0.0;
  uint bi = 0xFFFFFFFFu;
  for (uint i = tid; i < pc.cols; i += WG) {
    float v = pc.x.v[r * pc.cols + i];
    if (isnan(v)) v = -1.0 / 0.0;
    if (bi == 0xFFFFFFFFu || v > bv) {
      bv = v;
      bi = i;
    }
  }
  best_v[tid] = bv;
  best_i[tid] = bi;
  barrier();
  for (uint s = WG / 2u; s > 0u; s >>= 1) {
    if (tid < s) {
      const float ov = best_v[tid + s];
      const uint oi = best_i[tid + s];
      if (oi != 0xFFFFFFFFu && (best_i[tid] == 0xFFFFFFFFu || ov > best_v[tid] || (ov == best_v[tid] && oi < best_i[tid]))) {
        best_v[tid] = ov;
        best_i[tid] = oi;
      }
    }
    barrier();
  }
  if (tid == 0u) pc.ids.v[r] = int(best_i[0]);
}
