#include "engine/presets/niah.h"

#include <algorithm>
#include <bit>
#include <cstdio>

namespace kakeya::engine {

// MT19937 constants and seeding: Matsumoto & Nishimura (1998), mt19937ar.c, as used by CPython.
namespace {
constexpr int kN = 624;
constexpr int kM = 397;
constexpr uint32_t kMatrixA = 0x9908b0dfU;
constexpr uint32_t kUpperMask = 0x80000000U;
constexpr uint32_t kLowerMask = 0x7fffffffU;
}  // namespace

PyRandom::PyRandom(uint64_t seed) {
  // CPython random_seed(): key = abs(seed) as 32-bit words, least significant first; 0 → [0].
  std::vector<uint32_t> key;
  for (uint64_t s = seed; s != 0; s >>= 32) key.push_back(static_cast<uint32_t>(s & 0xffffffffU));
  if (key.empty()) key.push_back(0);
  init_by_array(key);
}

void PyRandom::init_genrand(uint32_t s) {
  mt_[0] = s;
  for (int i = 1; i < kN; ++i) {
    mt_[i] = 1812433253U * (mt_[i - 1] ^ (mt_[i - 1] >> 30)) + static_cast<uint32_t>(i);
  }
  index_ = kN;
}

void PyRandom::init_by_array(const std::vector<uint32_t>& key) {
  init_genrand(19650218U);
  int i = 1;
  size_t j = 0;
  const size_t key_length = key.size();
  for (size_t k = kN > key_length ? kN : key_length; k != 0; --k) {
    mt_[i] = (mt_[i] ^ ((mt_[i - 1] ^ (mt_[i - 1] >> 30)) * 1664525U)) + key[j] +
             static_cast<uint32_t>(j);
    ++i;
    ++j;
    if (i >= kN) {
      mt_[0] = mt_[kN - 1];
      i = 1;
    }
    if (j >= key_length) j = 0;
  }
  for (int k = kN - 1; k != 0; --k) {
    mt_[i] = (mt_[i] ^ ((mt_[i - 1] ^ (mt_[i - 1] >> 30)) * 1566083941U)) - static_cast<uint32_t>(i);
    ++i;
    if (i >= kN) {
      mt_[0] = mt_[kN - 1];
      i = 1;
    }
  }
  mt_[0] = 0x80000000U;  // MSB is 1, assuring a non-zero initial array
  index_ = kN;
}

uint32_t PyRandom::next_u32() {
  if (index_ >= kN) {
    int kk = 0;
    for (; kk < kN - kM; ++kk) {
      const uint32_t y = (mt_[kk] & kUpperMask) | (mt_[kk + 1] & kLowerMask);
      mt_[kk] = mt_[kk + kM] ^ (y >> 1) ^ ((y & 1U) ? kMatrixA : 0U);
    }
    for (; kk < kN - 1; ++kk) {
      const uint32_t y = (mt_[kk] & kUpperMask) | (mt_[kk + 1] & kLowerMask);
      mt_[kk] = mt_[kk + (kM - kN)] ^ (y >> 1) ^ ((y & 1U) ? kMatrixA : 0U);
    }
    const uint32_t y = (mt_[kN - 1] & kUpperMask) | (mt_[0] & kLowerMask);
    mt_[kN - 1] = mt_[kM - 1] ^ (y >> 1) ^ ((y & 1U) ? kMatrixA : 0U);
    index_ = 0;
  }
  uint32_t y = mt_[index_++];
  y ^= (y >> 11);
  y ^= (y << 7) & 0x9d2c5680U;
  y ^= (y << 15) & 0xefc60000U;
  y ^= (y >> 18);
  return y;
}

uint64_t PyRandom::getrandbits(int k) {
  if (k <= 0) return 0;
  if (k > 64) k = 64;
  if (k <= 32) return next_u32() >> (32 - k);
  // CPython _random_Random_getrandbits_impl: words least significant first.
  const uint64_t low = next_u32();
  const uint64_t high = next_u32() >> (64 - k);
  return low | (high << 32);
}

uint64_t PyRandom::randbelow(uint64_t n) {
  if (n == 0) return 0;
  const int k = static_cast<int>(std::bit_width(n));
  uint64_t r = getrandbits(k);
  while (r >= n) r = getrandbits(k);
  return r;
}

int64_t PyRandom::randint(int64_t a, int64_t b) {
  if (b < a) return a;
  return a + static_cast<int64_t>(randbelow(static_cast<uint64_t>(b - a) + 1));
}

const std::vector<std::string>& niah_prefixes() {
  static const std::vector<std::string> kPrefixes = {
      "ALPHA", "BETA",   "GAMMA", "DELTA", "EPSILON", "ZETA", "ETA",  "THETA",
      "IOTA",  "KAPPA",  "ORCHID", "PINE", "MAPLE",   "OAK",  "BIRCH"};
  return kPrefixes;
}

Status check_niah_params(int min_lines, int max_lines, int n_samples) {
  if (min_lines < 8) {
    return make_error("bad_param", "niah min_lines = " + std::to_string(min_lines) +
                                       " must be >= 8 (the needle goes between lines 4 and n-4)");
  }
  if (max_lines < min_lines) {
    return make_error("bad_param", "niah max_lines = " + std::to_string(max_lines) +
                                       " is below min_lines = " + std::to_string(min_lines));
  }
  if (max_lines > 9999) {
    return make_error("bad_param", "niah max_lines = " + std::to_string(max_lines) +
                                       " exceeds 9999 (line numbers have 4 digits)");
  }
  if (n_samples < 0) {
    return make_error("bad_param", "niah n_samples = " + std::to_string(n_samples) + " is negative");
  }
  return ok_status();
}

std::vector<NiahSample> generate_niah(uint64_t seed, int min_lines, int max_lines, int n_samples,
                                      bool with_needle) {
  std::vector<NiahSample> out;
  if (!check_niah_params(min_lines, max_lines, n_samples).ok()) return out;
  PyRandom rng(seed);
  out.reserve(static_cast<size_t>(n_samples));
  for (int s = 0; s < n_samples; ++s) {
    NiahSample x;
    x.n_lines = static_cast<int>(rng.randint(min_lines, max_lines));
    x.prefix = rng.choice(niah_prefixes());
    x.number = static_cast<int>(rng.randint(1000, 9999));
    x.insert_at = static_cast<int>(rng.randint(4, x.n_lines - 4));
    x.needle = with_needle;
    const std::string code = x.prefix + "-" + std::to_string(x.number);
    if (with_needle) x.answer = code;

    std::string& p = x.prompt;
    for (int i = 0; i < x.n_lines; ++i) {
      if (with_needle && i == x.insert_at) {
        p += "\nIMPORTANT: the secret code is " + code + ".\n";
        p += '\n';
      }
      char line[96];
      std::snprintf(line, sizeof line,
                    "Note %04d: this paragraph is unrelated padding and does not contain the answer.",
                    i);
      p += line;
      if (i + 1 < x.n_lines) p += '\n';
    }
    p += "\nQuestion: what is the secret code? Answer:";
    out.push_back(std::move(x));
  }
  return out;
}

bool niah_recalled(std::string_view continuation, std::string_view answer) {
  return !answer.empty() && continuation.find(answer) != std::string_view::npos;
}

std::string niah_continuation(const Tokenizer& tok, std::span<const int32_t> ids) {
  const auto end = std::find_if(ids.begin(), ids.end(), [&](int32_t id) { return tok.is_eog(id); });
  return tok.decode(std::vector<int32_t>(ids.begin(), end));
}

}  // namespace kakeya::engine
