#version 450
// The activation conversion of ggml-cpu's vec_dot_type, applied in place of x [n][cols] so that
// a matmul over f32 then multiplies by exactly the values ggml multiplies by:
//   VARIANT 1: round to F16; 2: round to BF16; 3: Q8_0 blocks of 32 (d = amax/127 stored as
//   F16, q = round_even(x·127/amax)); 4: Q8_K blocks of 256 (iscale = -127/max with max the
//   value of largest magnitude, q = min(127, round_even(iscale·x)), d = 1/iscale in f32);
//   5: Q8_1 (for Q4_1/Q5_1): variant 3's values, and sums[block] = fp16(d·Σq) with d unrounded,
//   the term ggml multiplies the weights' min by.
// Each value becomes d·q (or the rounded value). One invocation per block (per value for
// F16/BF16); `blocks` = invocations in total.
#include "common.glsl"
layout(push_constant) uniform PC {
  F32Buf x;
  F32Buf sums;  // variant 5: [count]
  uint count;   // values (F16/BF16) or blocks (Q8_0/Q8_1/Q8_K) in total
} pc;
void main() {
  const uint i = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * WG;
  if (i >= pc.count) return;
  if (VARIANT == 1u) {
    pc.x.v[i] = f16_to_f32(f32_to_f16_rne(pc.x.v[i]));
  } else if (VARIANT == 2u) {
    pc.x.v[i] = bf16_to_f32(f32_to_bf16_rne(pc.x.v[i]));
  } else if (VARIANT == 3u || VARIANT == 5u) {
    const uint b = i * 32u;
    float amax = 0.0;
    for (uint j = 0u; j < 32u; ++j) amax = max(amax, abs(pc.x.v[b + j]));
    const float d32 = div_rn(amax, 127.0);
    const float d = f16_to_f32(f32_to_f16_rne(d32));
    const float id = amax != 0.0 ? div_rn(127.0, amax) : 0.0;
    int sum = 0;
    for (uint j = 0u; j < 32u; ++j) {
      precise const float s = pc.x.v[b + j] * id;
      const float q = roundEven(s);
      sum += int(q);
      pc.x.v[b + j] = d * q;
    }
    if (VARIANT == 5u) {
      precise const float ds = d32 * float(sum);
      pc.sums.v[i] = f16_to_f32(f32_to_f16_rne(ds));
    }
  } else if (VARIANT == 4u) {
    const uint b = i * 256u;
    float amax = 0.0, mx = 0.0;
    for (uint j = 0u; j < 256u; ++j) {
      const float ax = abs(pc.x.v[b + j]);
      if (ax > amax) {
        amax = ax;
        mx = pc.x.v[b + j];
      }
    }
    if (amax == 0.0) {
      for (uint j = 0u; j < 256u; ++j) pc.x.v[b + j] = 0.0;
      return;
    }
    const float iscale = div_rn_signed(-127.0, mx);
    const float d = div_rn_signed(1.0, iscale);
    for (uint j = 0u; j < 256u; ++j) {
      precise const float s = iscale * pc.x.v[b + j];
      pc.x.v[b + j] = d * min(127.0, roundEven(s));
    }
  }
}
