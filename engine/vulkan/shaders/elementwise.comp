#version 450
// Elementwise over n floats of x. VARIANT 0: x ← x + y (add); 1: x ← silu(x)·y (SwiGLU's gate,
// silu(g) = g / (1 + e^-g)); 2: x ← x + y[i mod cols] (a bias row broadcast over x's rows).
#include "common.glsl"
layout(push_constant) uniform PC {
  F32Buf x;
  F32Buf y;
  uint n;
  uint cols;  // the period of y (n for variants 0 and 1)
} pc;
void main() {
  const uint i = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * WG;
  if (i >= pc.n) return;
  const float a = pc.x.v[i], b = pc.y.v[i % pc.cols];
  if (VARIANT == 1u) {
    precise const float g = (a / (1.0 + exp(-a))) * b;
    pc.x.v[i] = g;
  } else {
    precise const float s = a + b;
    pc.x.v[i] = s;
  }
}
