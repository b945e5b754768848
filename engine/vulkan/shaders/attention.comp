#version 450
// out[t][h] = softmax(q[t][h] · K^T · scale) · V over the slots of KV head h / gqa visible at the
// query's position (kv_cache.h: position <= q, and for a bounded head position < sink or
// > q - window). One workgroup per (query head, token); slots in chunks of WG with an online
// softmax (running max and sum, f32), so any number of slots fits. head_dim <= 4·WG.
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
shared float qs[1024];
shared float ps[256];
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
  const float NEG_INF = -1.0 / 0.0;
  float m = NEG_INF, l = 0.0;
  float acc[4] = float[4](0.0, 0.0, 0.0, 0.0);
  for (uint c = 0u; c < vw.n_slots; c += WG) {
    const uint s = c + tid;
    float sc = NEG_INF;
    if (s < vw.n_slots) {
      const int p = pos.v[s];
      const bool vis = p <= qp && (vw.window <= 0 || p < vw.sink || p > qp - vw.window);
      if (vis) {
        const uint row = vw.k_off + s * vw.row_bytes;
        float dot = 0.0;
        for (uint d = 0u; d < hd; ++d) dot += qs[d] * kv_value(kv, row, off + d, vw.bits, vw.values, vw.group);
        sc = dot * pc.scale;
      }
    }
    const float cmax = wg_max(sc);
    if (cmax == NEG_INF) continue;
    const float mn = max(m, cmax);
    const float corr = m == NEG_INF ? 0.0 : exp(m - mn);
    const float p = sc == NEG_INF ? 0.0 : exp(sc - mn);
    ps[tid] = p;
    l = l * corr + wg_sum(p);
    m = mn;
    const uint cnt = min(WG, vw.n_slots - c);
    for (uint k = 0u; k < 4u; ++k) {
      const uint d = tid + k * WG;
      if (d >= hd) break;
      float a = acc[k] * corr;
      for (uint i = 0u; i < cnt; ++i) {
        if (ps[i] == 0.0) continue;
        a += ps[i] * kv_value(kv, vw.v_off + (c + i) * vw.row_bytes, off + d, vw.bits, vw.values, vw.group);
      }
      acc[k] = a;
    }
    barrier();
  }
  for (uint k = 0u; k < 4u; ++k) {
    const uint d = tid + k * WG;
    if (d >= hd) break;
    pc.out_.v[qb + d] = l > 0.0 ? acc[k] / l : 0.0;
  }
}
