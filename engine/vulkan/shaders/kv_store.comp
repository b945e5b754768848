#version 450
// Writes slots [slot0, slot0 + n) of one KV storage group (kv.glsl layout): positions, and the K
// and V rows gathered from rows of k, v [n][stride] (the group's heads, head_dim values each)
// and encoded in its format. Affine codes are computed exactly as engine/kv_quant.h does
// (correctly rounded division, round half away from zero), so the bytes equal the CPU's.
// One invocation per (token, K|V, value) for f32 storage, per (token, K|V, group) otherwise.
#include "common.glsl"
layout(push_constant) uniform PC {
  U32Buf base;
  F32Buf k;
  F32Buf v;
  I32Buf positions;  // [n]
  I32Buf heads;      // the group's KV heads in storage order
  uint k_off, v_off;
  uint slot0, n, stride, head_dim;
  uint values, bits, group, row_bytes;
} pc;
float src(uint kv, uint t, uint i) {
  const uint a = t * pc.stride + uint(pc.heads.v[i / pc.head_dim]) * pc.head_dim + i % pc.head_dim;
  return kv == 0u ? pc.k.v[a] : pc.v.v[a];
}
void st_nibble(uint a, uint hi, uint q) {
  const uint sh = (a & 3u) * 8u + hi * 4u;
  atomicAnd(pc.base.v[a >> 2], ~(0xFu << sh));
  atomicOr(pc.base.v[a >> 2], (q & 0xFu) << sh);
}
void main() {
  const uint per = pc.bits == 32u ? pc.values : (pc.values + pc.group - 1u) / pc.group;
  const uint idx = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * WG;
  if (idx >= pc.n * 2u * per) return;
  const uint t = idx / (2u * per), kv = (idx / per) % 2u, g = idx % per;
  const uint slot = pc.slot0 + t;
  if (kv == 0u && g == 0u) pc.base.v[slot] = uint(pc.positions.v[t]);
  const uint row = (kv == 0u ? pc.k_off : pc.v_off) + slot * pc.row_bytes;
  if (pc.bits == 32u) {
    pc.base.v[(row >> 2) + g] = floatBitsToUint(src(kv, t, g));
    return;
  }
  const uint i0 = g * pc.group, i1 = min(pc.values, i0 + pc.group);
  float mn = src(kv, t, i0), mx = mn;
  for (uint i = i0; i < i1; ++i) {
    mn = min(mn, src(kv, t, i));
    mx = max(mx, src(kv, t, i));
  }
  const uint qmax = (1u << pc.bits) - 1u;
  precise const float range = mx - mn;
  const float scale = div_rn(range, float(qmax));
  const float inv = scale > 0.0 ? div_rn(1.0, scale) : 0.0;
  for (uint i = i0; i < i1; ++i) {
    precise const float x = src(kv, t, i) - mn;
    precise const float y = x * inv;
    float r = trunc(y);
    if (y - r >= 0.5) r += 1.0;
    const uint q = uint(clamp(r, 0.0, float(qmax)));
    if (pc.bits == 8u) {
      st_u8(pc.base, row + i, q);
    } else {
      st_nibble(row + i / 2u, i & 1u, q);
    }
  }
  const uint code_bytes = pc.bits == 8u ? pc.values : (pc.values + 1u) / 2u;
  st_u32_any(pc.base, row + code_bytes + g * 8u, floatBitsToUint(scale));
  st_u32_any(pc.base, row + code_bytes + g * 8u + 4u, floatBitsToUint(mn));
}
