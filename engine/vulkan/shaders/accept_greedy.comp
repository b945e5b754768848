#version 450
// Greedy speculative acceptance (backend.h accept_greedy) over the verify rows' argmax ids, which
// argmax.comp wrote on the device just before: out[0] = n, the leading drafts equal to their
// rows' ids; out[1 .. n+1] = ids[0 .. n] (the accepted drafts, then the correction or bonus);
// the rest -1. One invocation: k is a handful of tokens.
#include "common.glsl"
layout(push_constant) uniform PC {
  I32Buf ids;     // [k+1]
  I32Buf drafts;  // [k]
  I32Buf out_;    // [k+2]
  uint k;
} pc;
void main() {
  if (gl_GlobalInvocationID.x != 0u) return;
  uint n = 0u;
  while (n < pc.k && pc.drafts.v[n] == pc.ids.v[n]) ++n;
  pc.out_.v[0] = int(n);
  for (uint i = 0u; i <= pc.k; ++i) pc.out_.v[i + 1u] = i <= n ? pc.ids.v[i] : -1;
}
