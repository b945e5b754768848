// Dequantization of GGUF weight rows in their block layout (ggml's to_float, value for value;
// `precise` keeps the driver from fusing a*b-c into an fma the CPU does not do). Weight type
// ids are ggml's: 0 F32, 1 F16, 30 BF16, 8 Q8_0, 2 Q4_0, 12 Q4_K, 14 Q6_K. A row is read in
// "sub-blocks" of 32 values: sub-block s holds values 32s .. 32s+31 (K-quant super-blocks of
// 256 are 8 sub-blocks). REQUIRES common.glsl.
const uint T_F32 = 0u, T_F16 = 1u, T_Q4_0 = 2u, T_Q8_0 = 8u, T_Q4_K = 12u, T_Q6_K = 14u, T_BF16 = 30u;

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
// float types' last, partial sub-block). TYPE is a specialization constant in every caller.
void dequant32(U32Buf w, uint TYPE, uint row, uint sub, uint n, out float v[32]) {
  if (TYPE == T_F32) {
    const uint base = (row >> 2) + sub * 32u;
    for (uint j = 0u; j < n; ++j) v[j] = uintBitsToFloat(w.v[base + j]);
  } else if (TYPE == T_F16 || TYPE == T_BF16) {
    const uint base = row + sub * 64u;
    for (uint j = 0u; j < n; ++j) {
      const uint h = ld_u16(w, base + 2u * j);
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
