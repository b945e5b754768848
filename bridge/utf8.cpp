#include "bridge/utf8.h"

namespace kakeya::bridge {
namespace {

enum class Seq { Valid, Invalid, Incomplete };

struct Scan {
  Seq kind;
  std::size_t len;  // Valid: the sequence's length; otherwise 1
};

// Classifies the bytes at text[i...] against Unicode Table 3-7. Incomplete: a proper prefix of a
// well-formed sequence that reaches the end of `text`.
Scan scan_at(std::string_view text, std::size_t i) {
  const auto b0 = static_cast<unsigned char>(text[i]);
  if (b0 < 0x80) return {Seq::Valid, 1};
  std::size_t need = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // range of the second byte
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    need = 2;
  } else if (b0 == 0xE0) {
    need = 3, lo = 0xA0;  // no overlong 3-byte forms
  } else if ((b0 >= 0xE1 && b0 <= 0xEC) || b0 == 0xEE || b0 == 0xEF) {
    need = 3;
  } else if (b0 == 0xED) {
    need = 3, hi = 0x9F;  // no surrogates
  } else if (b0 == 0xF0) {
    need = 4, lo = 0x90;  // no overlong 4-byte forms
  } else if (b0 >= 0xF1 && b0 <= 0xF3) {
    need = 4;
  } else if (b0 == 0xF4) {
    need = 4, hi = 0x8F;  // nothing above U+10FFFF
  } else {
    return {Seq::Invalid, 1};  // 80..C1 (stray continuation, overlong 2-byte lead), F5..FF
  }
  for (std::size_t k = 1; k < need; ++k) {
    if (i + k >= text.size()) return {Seq::Incomplete, 1};
    const auto b = static_cast<unsigned char>(text[i + k]);
    if (b < (k == 1 ? lo : 0x80) || b > (k == 1 ? hi : 0xBF)) return {Seq::Invalid, 1};
  }
  return {Seq::Valid, need};
}

void append_hex_escape(std::string& out, unsigned char b) {
  static constexpr char kHex[] = "0123456789abcdef";
  out += "\\x";
  out += kHex[b >> 4];
  out += kHex[b & 0x0F];
}

bool is_control(std::string_view seq) {
  const auto b0 = static_cast<unsigned char>(seq[0]);
  if (seq.size() == 1) return b0 < 0x20 || b0 == 0x7F;
  return seq.size() == 2 && b0 == 0xC2 && static_cast<unsigned char>(seq[1]) <= 0x9F;  // C1
}

// Escapes text[0, end) into `out`; returns where an incomplete trailing sequence starts when
// `hold_incomplete` (else escapes it too and returns text.size()).
std::size_t escape_into(std::string& out, std::string_view text, bool hold_incomplete) {
  std::size_t i = 0;
  while (i < text.size()) {
    const Scan s = scan_at(text, i);
    if (s.kind == Seq::Valid) {
      out.append(text.substr(i, s.len));
      i += s.len;
      continue;
    }
    if (s.kind == Seq::Incomplete && hold_incomplete) return i;
    append_hex_escape(out, static_cast<unsigned char>(text[i]));
    ++i;
  }
  return i;
}

}  // namespace

bool is_valid_utf8(std::string_view text) {
  std::size_t i = 0;
  while (i < text.size()) {
    const Scan s = scan_at(text, i);
    if (s.kind != Seq::Valid) return false;
    i += s.len;
  }
  return true;
}

std::string escape_invalid_utf8(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  escape_into(out, text, /*hold_incomplete=*/false);
  return out;
}

std::string printable(std::string_view text, std::size_t max_bytes) {
  std::string out;
  std::string piece;
  std::size_t i = 0;
  while (i < text.size()) {
    const Scan s = scan_at(text, i);
    piece.clear();
    const std::size_t len = s.kind == Seq::Valid ? s.len : 1;
    const std::string_view seq = text.substr(i, len);
    if (s.kind != Seq::Valid || is_control(seq)) {
      for (char c : seq) append_hex_escape(piece, static_cast<unsigned char>(c));
    } else {
      piece.assign(seq);
    }
    if (max_bytes != std::string::npos && out.size() + piece.size() > max_bytes) {
      out += "...";
      return out;
    }
    out += piece;
    i += len;
  }
  return out;
}

std::string_view utf8_tail(std::string_view text, std::size_t max_bytes) {
  if (text.size() <= max_bytes) return text;
  std::size_t start = text.size() - max_bytes;
  while (start < text.size() && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) ++start;
  return text.substr(start);
}

std::string_view utf8_head(std::string_view text, std::size_t max_bytes) {
  if (text.size() <= max_bytes) return text;
  std::size_t end = max_bytes;
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
  return text.substr(0, end);
}

void Utf8StreamEscaper::write(std::string_view data) {
  if (data.empty()) return;
  out_.clear();
  if (pending_.empty()) {
    const std::size_t held = escape_into(out_, data, /*hold_incomplete=*/true);
    pending_.assign(data.substr(held));
  } else {
    std::string buf = pending_;
    buf.append(data);
    const std::size_t held = escape_into(out_, buf, /*hold_incomplete=*/true);
    pending_.assign(std::string_view(buf).substr(held));
  }
  if (!out_.empty()) sink_(out_);
}

void Utf8StreamEscaper::flush() {
  if (pending_.empty()) return;
  out_.clear();
  escape_into(out_, pending_, /*hold_incomplete=*/false);
  pending_.clear();
  sink_(out_);
}

}  // namespace kakeya::bridge
