#include "engine/tokenizer_bpe.h"

#include <algorithm>
#include <array>
#include <cstdio>

#include "engine/utf8.h"

namespace kakeya::engine {
namespace {

// GPT-2's bytes_to_unicode: the code point standing for each byte.
const std::array<uint32_t, 256>& byte_code_points() {
  static const std::array<uint32_t, 256> kTable = [] {
    std::array<uint32_t, 256> t{};
    uint32_t next = 256;
    for (uint32_t b = 0; b < 256; ++b) {
      const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
      t[b] = printable ? b : next++;
    }
    return t;
  }();
  return kTable;
}

// The inverse: byte of each stand-in code point (U+0000..U+0143), -1 for the others.
int byte_of_code_point(uint32_t cp) {
  static const std::array<int, 324> kInverse = [] {
    std::array<int, 324> t{};
    t.fill(-1);
    for (int b = 0; b < 256; ++b) t[byte_code_points()[static_cast<size_t>(b)]] = b;
    return t;
  }();
  return cp < kInverse.size() ? kInverse[cp] : -1;
}

}  // namespace

std::string byte_level_encode(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (const char c : bytes) utf8_append(byte_code_points()[static_cast<unsigned char>(c)], out);
  return out;
}

std::string byte_level_decode(std::string_view token) {
  std::string out;
  for (const uint32_t cp : utf8_decode(token)) {
    const int b = byte_of_code_point(cp);
    if (b >= 0) {
      out.push_back(static_cast<char>(b));
    } else {
      std::string utf8;
      utf8_append(cp, utf8);
      out += "[UNK_BYTE_0x";
      for (const char c : utf8) {
        char hex[3];
        std::snprintf(hex, sizeof hex, "%02x", static_cast<unsigned char>(c));
        out += hex;
      }
      out += std::string(token) + "]";
    }
  }
  return out;
}

BpeMerges::BpeMerges(const std::vector<std::string>& merges) {
  ranks_.reserve(merges.size());
  for (size_t i = 0; i < merges.size(); ++i) {
    const std::string& m = merges[i];
    const size_t space = m.find(' ', 1);
    const std::string_view left = space == std::string::npos ? "" : std::string_view(m).substr(0, space);
    const std::string_view right = space == std::string::npos ? "" : std::string_view(m).substr(space + 1);
    ranks_.emplace(key(left, right), static_cast<int>(i));  // emplace keeps the first rank
  }
}

std::string BpeMerges::key(std::string_view left, std::string_view right) {
  std::string k;
  k.reserve(left.size() + 1 + right.size());
  k.append(left);
  k.push_back('\0');
  k.append(right);
  return k;
}

int BpeMerges::rank(std::string_view left, std::string_view right) const {
  const auto it = ranks_.find(key(left, right));
  return it == ranks_.end() ? -1 : it->second;
}

}  // namespace kakeya::engine
