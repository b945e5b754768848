#include "engine/ggml_types.h"

#include <cstring>
#include <strings.h>

#include <array>
#include <iterator>
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

// One row per type the engine knows: id, ggml name, elements per block, bytes per block, and
// whether a GGUF tensor may have it (Q8_1 and Q8_K are activation formats only).
struct TypeTraits {
  GgmlType type;
  const char* name;
  int64_t block;
  size_t bytes;
  bool storage;
};

constexpr TypeTraits kTypes[] = {
    {GgmlType::F32, "f32", 1, 4, true},           {GgmlType::F16, "f16", 1, 2, true},
    {GgmlType::Q4_0, "q4_0", 32, 18, true},       {GgmlType::Q4_1, "q4_1", 32, 20, true},
    {GgmlType::Q5_0, "q5_0", 32, 22, true},       {GgmlType::Q5_1, "q5_1", 32, 24, true},
    {GgmlType::Q8_0, "q8_0", 32, 34, true},       {GgmlType::Q8_1, "q8_1", 32, 36, false},
    {GgmlType::Q2_K, "q2_K", 256, 84, true},      {GgmlType::Q3_K, "q3_K", 256, 110, true},
    {GgmlType::Q4_K, "q4_K", 256, 144, true},     {GgmlType::Q5_K, "q5_K", 256, 176, true},
    {GgmlType::Q6_K, "q6_K", 256, 210, true},     {GgmlType::Q8_K, "q8_K", 256, 292, false},
    {GgmlType::IQ4_NL, "iq4_nl", 32, 18, true},   {GgmlType::IQ4_XS, "iq4_xs", 256, 136, true},
    {GgmlType::BF16, "bf16", 1, 2, true},
};

const TypeTraits* traits(GgmlType type) {
  for (const TypeTraits& t : kTypes)
    if (t.type == type) return &t;
  return nullptr;
}

constexpr auto kStorageTypes = [] {
  std::array<GgmlType, std::size(kTypes) - 2> out{};
  size_t n = 0;
  for (const TypeTraits& t : kTypes)
    if (t.storage) out[n++] = t.type;
  return out;
}();

// ggml type ids this engine does not execute, for clearer error messages.
const char* known_unsupported_name(uint32_t id) {
  switch (id) {
    case 9: return "q8_1 (activation-only)";
    case 15: return "q8_K (activation-only)";
    case 16: return "iq2_xxs";
    case 17: return "iq2_xs";
    case 18: return "iq3_xxs";
    case 19: return "iq1_s";
    case 21: return "iq3_s";
    case 22: return "iq2_s";
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

std::string supported_type_names() {
  std::string s;
  for (GgmlType t : kStorageTypes) s += (s.empty() ? "" : ", ") + std::string(ggml_type_name(t));
  return s;
}

}  // namespace

const char* ggml_type_name(GgmlType type) {
  const TypeTraits* t = traits(type);
  return t != nullptr ? t->name : "unknown";
}

std::span<const GgmlType> ggml_storage_types() { return kStorageTypes; }

Result<GgmlType> ggml_type_from_id(uint32_t id) {
  for (const TypeTraits& t : kTypes)
    if (static_cast<uint32_t>(t.type) == id && t.storage) return t.type;
  const char* known = known_unsupported_name(id);
  std::string msg = "unsupported ggml type id " + std::to_string(id);
  if (known != nullptr) msg += std::string(" (") + known + ")";
  msg += "; supported: " + supported_type_names();
  return make_error("unsupported_type", msg);
}

Result<GgmlType> ggml_type_from_name(const char* name) {
  for (GgmlType t : kStorageTypes) {
    if (name != nullptr && strcasecmp(name, ggml_type_name(t)) == 0) return t;
  }
  return make_error("unsupported_type", std::string("unknown ggml type name '") + (name ? name : "(null)") +
                                            "'; supported: " + supported_type_names());
}

int64_t ggml_block_size(GgmlType type) {
  const TypeTraits* t = traits(type);
  return t != nullptr ? t->block : 1;
}

size_t ggml_block_bytes(GgmlType type) {
  const TypeTraits* t = traits(type);
  return t != nullptr ? t->bytes : 0;
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
