#include "engine/ggml_types.h"

#include <cstring>
#include <strings.h>

#include <string>

namespace kakeya::engine {

namespace {

uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

float bits_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// ggml type ids this engine does not execute, for clearer error messages.
const char* known_unsupported_name(uint32_t id) {
  switch (id) {
    case 3: return "q4_1";
    case 6: return "q5_0";
    case 7: return "q5_1";
    case 9: return "q8_1";
    case 10: return "q2_K";
    case 11: return "q3_K";
    case 13: return "q5_K";
    case 15: return "q8_K (activation-only)";
    case 16: return "iq2_xxs";
    case 17: return "iq2_xs";
    case 18: return "iq3_xxs";
    case 19: return "iq1_s";
    case 20: return "iq4_nl";
    case 21: return "iq3_s";
    case 22: return "iq2_s";
    case 23: return "iq4_xs";
    case 24: return "i8";
    case 25: return "i16";
    case 26: return "i32";
    case 27: return "i64";
    case 28: return "f64";
    case 29: return "iq1_m";
    case 34: return "tq1_0";
    case 35: return "tq2_0";
    default: return nullptr;
  }
}

}  // namespace

const char* ggml_type_name(GgmlType type) {
  switch (type) {
    case GgmlType::F32: return "f32";
    case GgmlType::F16: return "f16";
    case GgmlType::Q4_0: return "q4_0";
    case GgmlType::Q8_0: return "q8_0";
    case GgmlType::Q4_K: return "q4_K";
    case GgmlType::Q6_K: return "q6_K";
    case GgmlType::Q8_K: return "q8_K";
    case GgmlType::BF16: return "bf16";
  }
  return "unknown";
}

Result<GgmlType> ggml_type_from_id(uint32_t id) {
  switch (id) {
    case 0: return GgmlType::F32;
    case 1: return GgmlType::F16;
    case 2: return GgmlType::Q4_0;
    case 8: return GgmlType::Q8_0;
    case 12: return GgmlType::Q4_K;
    case 14: return GgmlType::Q6_K;
    case 30: return GgmlType::BF16;
    default: break;
  }
  const char* known = known_unsupported_name(id);
  std::string msg = "unsupported ggml type id " + std::to_string(id);
  if (known != nullptr) msg += std::string(" (") + known + ")";
  msg += "; supported: f32, f16, bf16, q8_0, q4_0, q4_K, q6_K";
  return make_error("unsupported_type", msg);
}

Result<GgmlType> ggml_type_from_name(const char* name) {
  static constexpr GgmlType kAll[] = {GgmlType::F32,  GgmlType::F16,  GgmlType::Q4_0, GgmlType::Q8_0,
                                      GgmlType::Q4_K, GgmlType::Q6_K, GgmlType::BF16};
  for (GgmlType t : kAll) {
    if (name != nullptr && strcasecmp(name, ggml_type_name(t)) == 0) return t;
  }
  return make_error("unsupported_type",
                    std::string("unknown ggml type name '") + (name ? name : "(null)") +
                        "'; supported: f32, f16, bf16, q8_0, q4_0, q4_K, q6_K");
}

int64_t ggml_block_size(GgmlType type) {
  switch (type) {
    case GgmlType::F32:
    case GgmlType::F16:
    case GgmlType::BF16: return 1;
    case GgmlType::Q4_0:
    case GgmlType::Q8_0: return 32;
    case GgmlType::Q4_K:
    case GgmlType::Q6_K:
    case GgmlType::Q8_K: return 256;
  }
  return 1;
}

size_t ggml_block_bytes(GgmlType type) {
  switch (type) {
    case GgmlType::F32: return 4;
    case GgmlType::F16:
    case GgmlType::BF16: return 2;
    case GgmlType::Q4_0: return 18;
    case GgmlType::Q8_0: return 34;
    case GgmlType::Q4_K: return 144;
    case GgmlType::Q6_K: return 210;
    case GgmlType::Q8_K: return 292;
  }
  return 0;
}

size_t ggml_row_bytes(GgmlType type, int64_t n) {
  return static_cast<size_t>(n / ggml_block_size(type)) * ggml_block_bytes(type);
}

// Exact: every binary16 value is representable in binary32.
float fp16_to_fp32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1Fu;
  uint32_t mant = h & 0x3FFu;
  if (exp == 0x1F) return bits_float(sign | 0x7F800000u | (mant << 13));  // inf / NaN
  if (exp != 0) return bits_float(sign | ((exp + 112u) << 23) | (mant << 13));
  if (mant == 0) return bits_float(sign);
  // Subnormal: normalise.
  int e = -1;
  do {
    ++e;
    mant <<= 1;
  } while ((mant & 0x400u) == 0);
  return bits_float(sign | ((112u - static_cast<uint32_t>(e)) << 23) | ((mant & 0x3FFu) << 13));
}

uint16_t fp32_to_fp16(float f) {
  const uint32_t x = float_bits(f);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t ax = x & 0x7FFFFFFFu;
  if (ax > 0x7F800000u) return static_cast<uint16_t>(sign | 0x7E00u | ((ax >> 13) & 0x3FFu));  // NaN
  if (ax >= 0x477FF000u) return static_cast<uint16_t>(sign | 0x7C00u);  // rounds to >= 65520: inf
  if (ax >= 0x38800000u) {  // normal half (|f| >= 2^-14)
    // Re-bias exponent and round the 13 dropped bits to nearest even.
    const uint32_t v = ax - 0x38000000u;  // exponent 127 -> 15
    const uint32_t round = 0xFFFu + ((v >> 13) & 1u);
    return static_cast<uint16_t>(sign | ((v + round) >> 13));
  }
  if (ax < 0x33000000u) return sign;  // < 2^-25: rounds to zero (2^-25 itself ties to even 0)
  // Subnormal half: value = mant * 2^-24.
  const uint32_t e = ax >> 23;                     // biased f32 exponent, 102..112
  const uint32_t m = (ax & 0x7FFFFFu) | 0x800000u;  // 24-bit significand
  const uint32_t shift = 126u - e;                  // 14..24
  uint32_t q = m >> shift;
  const uint32_t rem = m & ((1u << shift) - 1u);
  const uint32_t half = 1u << (shift - 1u);
  if (rem > half || (rem == half && (q & 1u))) ++q;
  return static_cast<uint16_t>(sign | q);
}

float bf16_to_fp32(uint16_t h) { return bits_float(static_cast<uint32_t>(h) << 16); }

uint16_t fp32_to_bf16(float f) {
  const uint32_t u = float_bits(f);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((u >> 16) | 64u);  // quiet NaN
  return static_cast<uint16_t>((u + (0x7FFFu + ((u >> 16) & 1u))) >> 16);
}

}  // namespace kakeya::engine
