// Dequantization of GGUF weight rows in their block layout (ggml's to_float, value for value;
// `precise` keeps the driver from fusing a*b-c into an fma the CPU does not do). Weight type
// ids are ggml's: 0 F32, 1 F16, 30 BF16, 8 Q8_0, 2 Q4_0, 12 Q4_K, 14 Q6_K. A row is read in
// "sub-blocks" of 32 values: sub-block s holds values 32s .. 32s+31 (K-quant super-blocks of
// 256 are 8 sub-blocks). REQUIRES common.glsl.
const uint T_F32 = 0u, T_F16 = 1u, T_Q4_0 = 2u, T_Q4_1 = 3u, T_Q5_0 = 6u, T_Q5_1 = 7u, T_Q8_0 = 8u, T_Q2_K = 10u,
           T_Q3_K = 11u, T_Q4_K = 12u, T_Q5_K = 13u, T_Q6_K = 14u, T_IQ4_NL = 20u, T_IQ4_XS = 23u, T_BF16 = 30u;
const int IQ4NL_VALUES[16] = int[16](-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113);

// Whether a type's blocks carry a min multiplied against Q8_1 activation sums (Q4_1, Q5_1).
bool has_q8_1_min(uint TYPE) { return TYPE == T_Q4_1 || TYPE == T_Q5_1; }
// Their min m of sub-block `sub` (one block of 32).
float block_min(U32Buf w, uint TYPE, uint row, uint sub) {
  return f16_to_f32(ld_u16(w, row + sub * (TYPE == T_Q4_1 ? 20u : 24u) + 2u));
}
// Element e (0..31) of a 32-block's nibbles: low nibble of qs[e] for e < 16, else high of qs[e-16].
uint nib32(U32Buf w, uint qs, uint e) { return e < 16u ? ld_u8(w, qs + e) & 0xFu : ld_u8(w, qs + e - 16u) >> 4; }

// Q4_K's 6-bit scale and min of sub-block j (ggml get_scale_min_k4); `s` = the 12 scale bytes.
void q4k_scale_min(U32Buf w, uint s, uint j, out uint sc, out uint m) {
  if (j < 4u) {
    sc = ld_u8(w, s + j) & 63u;
    m = ld_u8(w, s + j + 4u) & 63u;
  } else {
    sc = (ld_u8(w, s + j + 4u) & 0xFu) | ((ld_u8(w, s + j - 4u) >> 6) << 4);
    m = (ld_u8(w, s + j + 4u) >> 4) | ((ld_u8(w, s + j) >> 6) << 4);
  }
}

// v[j] = value 32·sub + j of the row starting at byte `row` (j < n; n < 32 only for the
// float types' last, partial sub-block, whose v[j >= n] are 0). Every loop has a constant trip
// count so that v stays in registers (a dynamically indexed array goes to local memory). TYPE is a specialization constant in every caller.
// with_min false (Q4_1/Q5_1 only): the values without their block's min (round(q·d)), for the
// Q8_1 dot product that multiplies the min by the activations' rounded sum.
void dequant32m(U32Buf w, uint TYPE, uint row, uint sub, uint n, bool with_min, out float v[32]) {
  if (TYPE == T_F32) {
    const uint base = (row >> 2) + sub * 32u;
    for (uint j = 0u; j < 32u; ++j) v[j] = j < n ? uintBitsToFloat(w.v[base + j]) : 0.0;
  } else if (TYPE == T_F16 || TYPE == T_BF16) {
    const uint base = row + sub * 64u;
    for (uint j = 0u; j < 32u; ++j) {
      const uint h = j < n ? ld_u16(w, base + 2u * j) : 0u;
      v[j] = TYPE == T_F16 ? f16_to_f32(h) : bf16_to_f32(h);
    }
  } else if (TYPE == T_Q8_0) {
    const uint b = row + sub * 34u;
    const float d = f16_to_f32(ld_u16(w, b));
    for (uint j = 0u; j < 32u; ++j) v[j] = float(ld_i8(w, b + 2u + j)) * d;
  } else if (TYPE == T_Q4_0) {
    const uint b = row + sub * 18u;
    const float d = f16_to_f32(ld_u16(w, b));
    for (uint j = 0u; j < 16u; ++j) {
      const uint q = ld_u8(w, b + 2u + j);
      v[j] = float(int(q & 0xFu) - 8) * d;
      v[j + 16u] = float(int(q >> 4) - 8) * d;
    }
  } else if (TYPE == T_Q4_K) {
    const uint b = row + (sub >> 3) * 144u;
    const uint s = sub & 7u;
    uint sc, m;
    q4k_scale_min(w, b + 4u, s, sc, m);
    precise const float d1 = f16_to_f32(ld_u16(w, b)) * float(sc);
    precise const float m1 = f16_to_f32(ld_u16(w, b + 2u)) * float(m);
    const uint q = b + 16u + 32u * (s >> 1);
    const uint shift = (s & 1u) * 4u;
    for (uint l = 0u; l < 32u; ++l) {
      precise float x = d1 * float((ld_u8(w, q + l) >> shift) & 0xFu);
      v[l] = x - m1;
    }
  } else if (TYPE == T_Q4_1 || TYPE == T_Q5_1) {
    const bool q5 = TYPE == T_Q5_1;
    const uint b = row + sub * (q5 ? 24u : 20u);
    const float d = f16_to_f32(ld_u16(w, b));
    const float m = with_min ? f16_to_f32(ld_u16(w, b + 2u)) : 0.0;
    const uint qh = q5 ? ld_u32_any(w, b + 4u) : 0u;
    for (uint e = 0u; e < 32u; ++e) {
      const uint q = nib32(w, b + (q5 ? 8u : 4u), e) | (((qh >> e) & 1u) << 4);
      precise const float x = float(q) * d;
      v[e] = with_min ? x + m : x;
    }
  } else if (TYPE == T_Q5_0) {
    const uint b = row + sub * 22u;
    const float d = f16_to_f32(ld_u16(w, b));
    const uint qh = ld_u32_any(w, b + 2u);
    for (uint e = 0u; e < 32u; ++e) v[e] = float(int(nib32(w, b + 6u, e) | (((qh >> e) & 1u) << 4)) - 16) * d;
  } else if (TYPE == T_IQ4_NL) {
    const uint b = row + sub * 18u;
    const float d = f16_to_f32(ld_u16(w, b));
    for (uint e = 0u; e < 32u; ++e) v[e] = float(IQ4NL_VALUES[nib32(w, b + 2u, e)]) * d;
  } else if (TYPE == T_Q2_K) {
    const uint b = row + (sub >> 3) * 84u;
    const uint s = sub & 7u;
    const float d = f16_to_f32(ld_u16(w, b + 80u)), dmin = f16_to_f32(ld_u16(w, b + 82u));
    for (uint l = 0u; l < 32u; ++l) {
      const uint e = 32u * s + l;
      const uint q = (ld_u8(w, b + 16u + 32u * (e / 128u) + e % 32u) >> (2u * ((e % 128u) / 32u))) & 3u;
      const uint sc = ld_u8(w, b + e / 16u);
      precise const float dl = d * float(sc & 0xFu);
      precise const float ml = dmin * float(sc >> 4);
      precise const float x = dl * float(q);
      v[l] = x - ml;
    }
  } else if (TYPE == T_Q3_K) {
    const uint b = row + (sub >> 3) * 110u;
    const uint s = sub & 7u;
    const float d = f16_to_f32(ld_u16(w, b + 108u));
    for (uint l = 0u; l < 32u; ++l) {
      const uint e = 32u * s + l;
      const uint hi = (ld_u8(w, b + e % 32u) >> (4u * (e / 128u) + (e % 128u) / 32u)) & 1u;
      const int q = int((ld_u8(w, b + 32u + 32u * (e / 128u) + e % 32u) >> (2u * ((e % 128u) / 32u))) & 3u) - (hi != 0u ? 0 : 4);
      const uint j = e / 16u;
      const uint lo = j < 8u ? ld_u8(w, b + 96u + j) & 0xFu : ld_u8(w, b + 96u + j - 8u) >> 4;
      const uint h2 = (ld_u8(w, b + 104u + j % 4u) >> (2u * (j / 4u))) & 3u;
      precise const float dl = d * float(int(lo | (h2 << 4)) - 32);
      v[l] = dl * float(q);
    }
  } else if (TYPE == T_Q5_K) {
    const uint b = row + (sub >> 3) * 176u;
    const uint s = sub & 7u;
    uint sc, m;
    q4k_scale_min(w, b + 4u, s, sc, m);
    precise const float dl = f16_to_f32(ld_u16(w, b)) * float(sc);
    precise const float ml = f16_to_f32(ld_u16(w, b + 2u)) * float(m);
    for (uint l = 0u; l < 32u; ++l) {
      const uint e = 32u * s + l;
      const uint byte = ld_u8(w, b + 48u + 32u * (e / 64u) + e % 32u);
      const uint q = ((e % 64u) < 32u ? byte & 0xFu : byte >> 4) | (((ld_u8(w, b + 16u + l) >> s) & 1u) << 4);
      precise const float x = dl * float(q);
      v[l] = x - ml;
    }
  } else if (TYPE == T_IQ4_XS) {
    const uint b = row + (sub >> 3) * 136u;
    const uint s = sub & 7u;
    const uint lo = (ld_u8(w, b + 4u + s / 2u) >> (4u * (s % 2u))) & 0xFu;
    const uint hi = (ld_u16(w, b + 2u) >> (2u * s)) & 3u;
    precise const float dl = f16_to_f32(ld_u16(w, b)) * float(int(lo | (hi << 4)) - 32);
    for (uint l = 0u; l < 32u; ++l) v[l] = dl * float(IQ4NL_VALUES[nib32(w, b + 8u + 16u * s, l)]);
  } else if (TYPE == T_Q6_K) {
    const uint b = row + (sub >> 3) * 210u;
    const uint s = sub & 7u;
    const uint half_ = s >> 2, g = s & 3u;
    const float d = f16_to_f32(ld_u16(w, b + 208u));
    for (uint l = 0u; l < 32u; ++l) {
      const uint lo = (ld_u8(w, b + 64u * half_ + l + 32u * (g & 1u)) >> (4u * (g >> 1))) & 0xFu;
      const uint hi = (ld_u8(w, b + 128u + 32u * half_ + l) >> (2u * g)) & 3u;
      const int q = int(lo | (hi << 4)) - 32;
      precise const float ds = d * float(ld_i8(w, b + 192u + 8u * half_ + l / 16u + 2u * g));
      v[l] = ds * float(q);
    }
  }
}
void dequant32(U32Buf w, uint TYPE, uint row, uint sub, uint n, out float v[32]) {
  dequant32m(w, TYPE, row, sub, n, true, v);
}
