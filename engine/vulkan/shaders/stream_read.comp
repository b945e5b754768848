#version 450
// The read-bandwidth probe (VulkanBackend::stream_read, bench/gpu_bench): every invocation reads
// 16-byte vectors in a grid-stride loop (neighbouring invocations read neighbouring vectors) and
// folds them into a value it never stores unless it equals a constant no input of the bench
// produces, so the loads cannot be removed and nothing is written.
#include "common.glsl"
layout(buffer_reference, std430, buffer_reference_align = 16) buffer V4Buf { uvec4 v[]; };
layout(push_constant) uniform PC {
  V4Buf src;
  uint vectors;
} pc;
void main() {
  const uint stride = gl_NumWorkGroups.x * WG;
  uvec4 acc = uvec4(0u);
  for (uint i = gl_GlobalInvocationID.x; i < pc.vectors; i += stride) acc ^= pc.src.v[i] + uvec4(i);
  if (acc.x == 0x9E3779B9u && acc.y == 0x7F4A7C15u && acc.z == 0xF39CC060u && acc.w == 0x5CEDC834u)
    pc.src.v[gl_GlobalInvocationID.x % pc.vectors] = acc;
}
