#version 450
// out[t][h] = softmax(q[t][h] · K^T · scale) · V over the slots of KV head h / gqa visible at the
// query's position (kv_cache.h: position <= q, and for a bounded head position < sink or
// > q - window). One workgroup per (query head, token). Slots are taken in chunks of 4·WG with
// an online softmax (running max and sum in f32), so any number of slots fits: scores with one
// invocation per slot, then P·V with the invocations split into G = WG / head_dim slot groups
// × head_dim dimensions (G = 1 and several dimensions per invocation when head_dim > WG),
// combined at the end. head_dim <= 4·WG.
#include "common.glsl"
#include "reduce.glsl"
#include "kv.glsl"
struct KvView {
  uvec2 base;  // the storage group's allocation
  uint k_off, v_off;
  uint index;  // this head's place in the group's row (values index·head_dim ..)
  uint n_slots;
  int sink, window;
  uint bits, values, group, row_bytes;
};
layout(buffer_reference, std430, buffer_reference_align = 8) buffer KvViews { KvView v[]; };
layout(push_constant) uniform PC {
  F32Buf q;
  F32Buf out_;
  KvViews views;  // [n_head_kv]
  I32Buf qpos;    // [n]
  uint head_dim;
  uint gqa;
  uint q_stride;  // floats per token row of q and out
  float scale;
} pc;
const uint CH = 4u * WG;
shared float qs[1024];
shared float ps[CH];
shared float comb[256];
void main() {
  const uint h = gl_WorkGroupID.x, t = gl_WorkGroupID.y, tid = gl_LocalInvocationID.x;
  const uint hd = pc.head_dim;
  const KvView vw = pc.views.v[h / pc.gqa];
  const int qp = pc.qpos.v[t];
  const uint qb = t * pc.q_stride + h * hd;
  for (uint d = tid; d < hd; d += WG) qs[d] = pc.q.v[qb + d];
  barrier();
  U32Buf kv = U32Buf(vw.base);
  I32Buf pos = I32Buf(vw.base);
  const uint off = vw.index * hd;
  const uint G = hd <= WG ? WG / hd : 1u;   // slot groups of the P·V phase
  const uint grp = hd <= WG ? tid / hd : 0u;
  const uint d0 = hd <= WG ? tid % hd : tid;
  const bool pv = grp < G;                  // invocations past G·hd idle in P·V
  const float NEG_INF = -1.0 / 0.0;
  float m = NEG_INF, l = 0.0;
  float acc[4] = float[4](0.0, 0.0, 0.0, 0.0);
  for (uint c = 0u; c < vw.n_slots; c += CH) {
    float sc[4];
    float cmax_own = NEG_INF;
    for (uint j = 0u; j < 4u; ++j) {
      const uint s = c + j * WG + tid;
      sc[j] = NEG_INF;
      if (s < vw.n_slots) {
        const int p = pos.v[s];
        if (p <= qp && (vw.window <= 0 || p < vw.sink || p > qp - vw.window)) {
          const uint row = vw.k_off + s * vw.row_bytes;
          float dot = 0.0;
          for (uint d = 0u; d < hd; ++d) dot += qs[d] * kv_value(kv, row, off + d, vw.bits, vw.values, vw.group);
          sc[j] = dot * pc.scale;
        }
      }
      cmax_own = max(cmax_own, sc[j]);
    }
    const float cmax = wg_max(cmax_own);
    if (cmax == NEG_INF) continue;
    const float mn = max(m, cmax);
    const float corr = m == NEG_INF ? 0.0 : exp(m - mn);
    float psum = 0.0;
    for (uint j = 0u; j < 4u; ++j) {
      const float p = sc[j] == NEG_INF ? 0.0 : exp(sc[j] - mn);
      ps[j * WG + tid] = p;
      psum += p;
    }
    l = l * corr + wg_sum(psum);
    m = mn;
    const uint cnt = min(CH, vw.n_slots - c);
    if (pv) {
      for (uint k = 0u; k < 4u; ++k) {
        const uint d = d0 + k * WG;
        if (d >= hd || (k > 0u && hd <= WG)) break;
        float a = acc[k] * corr;
        for (uint i = grp; i < cnt; i += G) {
          const float p = ps[i];
          if (p == 0.0) continue;
          a += p * kv_value(kv, vw.v_off + (c + i) * vw.row_bytes, off + d, vw.bits, vw.values, vw.group);
        }
        acc[k] = a;
      }
    }
    barrier();
  }
  if (hd <= WG) {  // combine the slot groups: comb[grp·hd + d]
    if (pv) comb[grp * hd + d0] = acc[0];
    barrier();
    if (tid < hd) {
      float o = 0.0;
      for (uint g = 0u; g < G; ++g) o += comb[g * hd + tid];
      pc.out_.v[qb + tid] = l > 0.0 ? o / l : 0.0;
    }
  } else {
    for (uint k = 0u; k < 4u; ++k) {
      const uint d = tid + k * WG;
      if (d >= hd) break;
      pc.out_.v[qb + d] = l > 0.0 ? acc[k] / l : 0.0;
    }
  }
}
