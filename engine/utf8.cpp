#include "engine/utf8.h"

namespace kakeya::engine {
namespace {

bool is_continuation(unsigned char c) { return (c & 0xC0) == 0x80; }

}  // namespace

size_t utf8_sequence_length(unsigned char lead) {
  static constexpr size_t kLen[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
  return kLen[lead >> 4];
}

std::vector<uint32_t> utf8_decode(std::string_view text) {
  std::vector<uint32_t> out;
  out.reserve(text.size());
  const auto byte = [&](size_t at) { return static_cast<unsigned char>(text[at]); };
  size_t i = 0;
  while (i < text.size()) {
    const unsigned char b0 = byte(i);
    size_t n = 0;  // continuation bytes the lead byte asks for
    uint32_t cp = 0;
    if (b0 < 0x80) {
      out.push_back(b0);
      ++i;
      continue;
    }
    if ((b0 & 0xE0) == 0xC0) {
      n = 1;
      cp = b0 & 0x1Fu;
    } else if ((b0 & 0xF0) == 0xE0) {
      n = 2;
      cp = b0 & 0x0Fu;
    } else if ((b0 & 0xF8) == 0xF0) {
      n = 3;
      cp = b0 & 0x07u;
    }
    bool valid = n > 0;  // 0x80..0xBF and 0xF8..0xFF lead nothing
    for (size_t k = 1; valid && k <= n; ++k) {
      if (i + k >= text.size() || !is_continuation(byte(i + k))) {
        valid = false;
      } else {
        cp = (cp << 6) | (byte(i + k) & 0x3Fu);
      }
    }
    if (valid && cp <= 0x10FFFF) {
      out.push_back(cp);
      i += n + 1;
    } else {
      out.push_back(kReplacementCharacter);
      ++i;
    }
  }
  return out;
}

void utf8_append(uint32_t cp, std::string& out) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

}  // namespace kakeya::engine
