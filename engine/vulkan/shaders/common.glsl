// Shared by every shader: buffer references (tensors are read through device addresses passed
// in push constants), byte access in GGUF block layouts, fp16/bf16 conversions and the
// correctly rounded arithmetic that keeps results equal to the CPU's.
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_buffer_reference_uvec2 : require

// Specialization constants: 0 = workgroup size, 1 = the shader's variant.
layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 64;
layout(constant_id = 1) const uint VARIANT = 0;

layout(buffer_reference, std430, buffer_reference_align = 4) buffer U32Buf { uint v[]; };
layout(buffer_reference, std430, buffer_reference_align = 4) buffer F32Buf { float v[]; };
layout(buffer_reference, std430, buffer_reference_align = 4) buffer I32Buf { int v[]; };

// Little-endian bytes at byte address `a` of a word buffer (a 2-aligned for 16 bits).
uint ld_u8(U32Buf b, uint a) { return (b.v[a >> 2] >> ((a & 3u) * 8u)) & 0xFFu; }
int ld_i8(U32Buf b, uint a) { return int(ld_u8(b, a) << 24) >> 24; }
uint ld_u16(U32Buf b, uint a) { return (b.v[a >> 2] >> ((a & 2u) * 8u)) & 0xFFFFu; }
uint ld_u32_any(U32Buf b, uint a) {  // any alignment
  if ((a & 3u) == 0u) return b.v[a >> 2];
  return ld_u8(b, a) | (ld_u8(b, a + 1u) << 8) | (ld_u8(b, a + 2u) << 16) | (ld_u8(b, a + 3u) << 24);
}
// Byte stores that other invocations may share a word with (atomics on the word).
void st_u8(U32Buf b, uint a, uint byte) {
  const uint sh = (a & 3u) * 8u;
  atomicAnd(b.v[a >> 2], ~(0xFFu << sh));
  atomicOr(b.v[a >> 2], (byte & 0xFFu) << sh);
}
void st_u32_any(U32Buf b, uint a, uint w) {
  if ((a & 3u) == 0u) {
    b.v[a >> 2] = w;
    return;
  }
  for (uint i = 0u; i < 4u; ++i) st_u8(b, a + i, w >> (8u * i));
}

// Exact for every f16 value, subnormals included, by integer arithmetic (a driver's
// unpackHalf2x16 may flush subnormals; block scales of small weights can be subnormal).
float f16_to_f32(uint h) {
  const uint s = (h & 0x8000u) << 16;
  const uint e = (h >> 10) & 0x1Fu;
  const uint m = h & 0x3FFu;
  if (e == 0u) {
    const float v = float(m) * 5.9604644775390625e-8;  // m · 2^-24, exact
    return s != 0u ? -v : v;
  }
  if (e == 31u) return uintBitsToFloat(s | 0x7F800000u | (m << 13));
  return uintBitsToFloat(s | ((e + 112u) << 23) | (m << 13));
}
float bf16_to_f32(uint h) { return uintBitsToFloat(h << 16); }

// f32 -> f16 bits, round to nearest even (ggml's fp32_to_fp16), overflow to infinity.
uint f32_to_f16_rne(float f) {
  const uint x = floatBitsToUint(f);
  const uint sign = (x >> 16) & 0x8000u;
  const uint ax = x & 0x7FFFFFFFu;
  if (ax >= 0x7F800000u) return sign | (ax > 0x7F800000u ? 0x7E00u : 0x7C00u);
  if (ax >= 0x477FF000u) return sign | 0x7C00u;
  if (ax < 0x38800000u) {  // f16 subnormal or zero: units of 2^-24, rounded to even
    precise float v = uintBitsToFloat(ax) * 16777216.0;
    return sign | uint(roundEven(v));
  }
  uint h = (((ax >> 23) - 112u) << 10) | ((ax >> 13) & 0x3FFu);
  const uint rest = ax & 0x1FFFu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u) == 1u)) h += 1u;
  return sign | h;
}

// f32 -> bf16 bits, round to nearest even, NaN kept quiet (ggml_compute_fp32_to_bf16).
uint f32_to_bf16_rne(float f) {
  const uint u = floatBitsToUint(f);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return (u >> 16) | 64u;
  return (u + (0x7FFFu + ((u >> 16) & 1u))) >> 16;
}

// a / b correctly rounded (round to nearest even) for a >= 0 and b > 0, both normal (or a == 0),
// with a normal quotient: GLSL's division may be 2.5 ULP off, and the CPU's scales come from
// IEEE division. Long division of the 24-bit significands.
float div_rn(float a, float b) {
  if (a == 0.0) return 0.0;
  int ea, eb;
  const float ma = frexp(a, ea);
  const float mb = frexp(b, eb);
  uint na = uint(ldexp(ma, 24));
  const uint nb = uint(ldexp(mb, 24));
  int e = ea - eb;
  if (na < nb) {
    na <<= 1;
    e -= 1;
  }
  uint q = 0u, r = na;
  for (int i = 0; i < 25; ++i) {
    q <<= 1;
    if (r >= nb) {
      r -= nb;
      q |= 1u;
    }
    r <<= 1;
  }
  uint mant = q >> 1;
  if ((q & 1u) == 1u && (r != 0u || (mant & 1u) == 1u)) mant += 1u;
  return ldexp(float(mant), e - 23);
}
// Signed form of div_rn (b != 0).
float div_rn_signed(float a, float b) {
  const float q = div_rn(abs(a), abs(b));
  return ((a < 0.0) != (b < 0.0)) ? -q : q;
}
