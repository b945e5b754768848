#version 450
// y[t][r] = Σ_k W[r][k] · x[t][k] for batches (prefill chunks, long verify blocks): a workgroup of
// 256 invocations computes a tile of 64 rows × 64 tokens. Per step of 32 along k, the tile's
// weight sub-blocks are dequantized once (dequant.glsl) into shared memory beside the tokens'
// activations (already converted like ggml's vec_dot_type), and each invocation accumulates
// 4 rows × 4 tokens in f32. Same products as matvec.comp, another summation order: used only
// for batches of at least kExactBlockTokens (vk_matmul_path.h). VARIANT: weight type.
// Tiles: rows 64·gl_WorkGroupID.x, tokens 64·gl_WorkGroupID.y.
#include "common.glsl"
#include "dequant.glsl"
layout(push_constant) uniform PC {
  U32Buf w;
  F32Buf x;
  F32Buf y;
  F32Buf sums;    // Q4_1/Q5_1: the Q8_1 block sums of x ([n][n_in / 32]), else unused
  uint n_in;
  uint n_out;
  uint row_bytes;
  uint y_stride;  // floats between tokens of y
  uint n_tokens;
} pc;
const uint TM = 64u, TN = 64u, TK = 32u;
shared float ws[TM][TK + 1u];
shared float xs[TN][TK + 1u];
shared float wm[TM];  // Q4_1/Q5_1: the rows' block mins
shared float xm[TN];  //            the tokens' block sums
void main() {
  const uint tid = gl_LocalInvocationID.x;
  const uint r0 = gl_WorkGroupID.x * TM, t0 = gl_WorkGroupID.y * TN;
  const uint tr = (tid / 16u) * 4u, tc = (tid % 16u) * 4u;
  float acc[4][4];
  for (uint i = 0u; i < 4u; ++i)
    for (uint j = 0u; j < 4u; ++j) acc[i][j] = 0.0;
  const uint subs = (pc.n_in + TK - 1u) / TK;
  const bool q81 = has_q8_1_min(VARIANT);
  for (uint s = 0u; s < subs; ++s) {
    const uint n = min(TK, pc.n_in - s * TK);
    if (tid < TM) {
      float v[32];
      for (uint j = 0u; j < TK; ++j) v[j] = 0.0;
      const bool valid = r0 + tid < pc.n_out;
      if (valid) dequant32m(pc.w, VARIANT, (r0 + tid) * pc.row_bytes, s, n, !q81, v);
      for (uint j = 0u; j < TK; ++j) ws[tid][j] = j < n ? v[j] : 0.0;
      if (q81) wm[tid] = valid ? block_min(pc.w, VARIANT, (r0 + tid) * pc.row_bytes, s) : 0.0;
    } else if (q81 && tid < TM + TN) {
      const uint t = tid - TM;
      xm[t] = t0 + t < pc.n_tokens ? pc.sums.v[(t0 + t) * subs + s] : 0.0;
    }
    for (uint e = tid; e < TN * TK; e += WG) {
      const uint t = e / TK, j = e % TK;
      xs[t][j] = (t0 + t < pc.n_tokens && j < n) ? pc.x.v[(t0 + t) * pc.n_in + s * TK + j] : 0.0;
    }
    barrier();
    for (uint k = 0u; k < TK; ++k) {
      float a[4], b[4];
      for (uint i = 0u; i < 4u; ++i) a[i] = ws[tr + i][k];
      for (uint j = 0u; j < 4u; ++j) b[j] = xs[tc + j][k];
      for (uint i = 0u; i < 4u; ++i)
        for (uint j = 0u; j < 4u; ++j) acc[i][j] += a[i] * b[j];
    }
    if (q81)
      for (uint i = 0u; i < 4u; ++i)
        for (uint j = 0u; j < 4u; ++j) acc[i][j] += wm[tr + i] * xm[tc + j];
    barrier();
  }
  for (uint i = 0u; i < 4u; ++i)
    for (uint j = 0u; j < 4u; ++j) {
      const uint r = r0 + tr + i, t = t0 + tc + j;
      if (r < pc.n_out && t < pc.n_tokens) pc.y.v[t * pc.y_stride + r] = acc[i][j];
    }
}
