// KV storage on the device (vk_backend.cpp, VulkanKvBuffer): one allocation per storage group,
// positions [capacity] i32 at byte 0, then K rows, then V rows, each row in the group's format
// (backend.h KvRowFormat): `values` f32, or affine codes (8-bit bytes, or 4-bit nibbles low
// first) followed by one (scale, min) f32 pair per group of `group` values (engine/kv_quant.h).
// Value i of the row at byte `row`: min + code·scale, as the host codec decodes it.
float kv_value(U32Buf b, uint row, uint i, uint bits, uint values, uint group) {
  if (bits == 32u) return uintBitsToFloat(b.v[(row >> 2) + i]);
  const uint code_bytes = bits == 8u ? values : (values + 1u) / 2u;
  const uint q = bits == 8u ? ld_u8(b, row + i) : (ld_u8(b, row + i / 2u) >> ((i & 1u) * 4u)) & 0xFu;
  const uint p = row + code_bytes + (i / group) * 8u;
  const float scale = uintBitsToFloat(ld_u32_any(b, p));
  const float mn = uintBitsToFloat(ld_u32_any(b, p + 4u));
  precise const float x = float(q) * scale;
  return mn + x;
}
