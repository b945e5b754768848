#include "bridge/ssh_wire.h"

namespace kakeya::bridge {
namespace {

constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

int decode_char(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

Error short_input(std::string_view what, std::size_t need, std::size_t have) {
  return make_error(errc::kBadKey, "truncated " + std::string(what) + ": " + std::to_string(need) + " byte(s) needed, " +
                                       std::to_string(have) + " left");
}

}  // namespace

Result<uint32_t> SshWireReader::u32(std::string_view what) {
  if (rest_.size() < 4) return short_input(what, 4, rest_.size());
  const auto* p = reinterpret_cast<const unsigned char*>(rest_.data());
  const uint32_t v = (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
  rest_.remove_prefix(4);
  return v;
}

Result<std::string_view> SshWireReader::bytes(std::size_t n, std::string_view what) {
  if (rest_.size() < n) return short_input(what, n, rest_.size());
  std::string_view out = rest_.substr(0, n);
  rest_.remove_prefix(n);
  return out;
}

Result<std::string_view> SshWireReader::string(std::string_view what) {
  KAKEYA_ASSIGN_OR_RETURN(uint32_t n, u32(what));
  return bytes(n, what);
}

void put_u32(std::string& out, uint32_t v) {
  out.push_back(static_cast<char>(v >> 24));
  out.push_back(static_cast<char>(v >> 16));
  out.push_back(static_cast<char>(v >> 8));
  out.push_back(static_cast<char>(v));
}

void put_string(std::string& out, std::string_view s) {
  put_u32(out, static_cast<uint32_t>(s.size()));
  out.append(s);
}

std::string base64_encode(std::string_view data) {
  std::string out;
  out.reserve((data.size() + 2) / 3 * 4);
  std::size_t i = 0;
  for (; i + 3 <= data.size(); i += 3) {
    const uint32_t v = (uint32_t{static_cast<unsigned char>(data[i])} << 16) |
                       (uint32_t{static_cast<unsigned char>(data[i + 1])} << 8) |
                       uint32_t{static_cast<unsigned char>(data[i + 2])};
    for (int shift : {18, 12, 6, 0}) out.push_back(kAlphabet[(v >> shift) & 63]);
  }
  const std::size_t left = data.size() - i;
  if (left > 0) {
    uint32_t v = uint32_t{static_cast<unsigned char>(data[i])} << 16;
    if (left == 2) v |= uint32_t{static_cast<unsigned char>(data[i + 1])} << 8;
    out.push_back(kAlphabet[(v >> 18) & 63]);
    out.push_back(kAlphabet[(v >> 12) & 63]);
    out.push_back(left == 2 ? kAlphabet[(v >> 6) & 63] : '=');
    out.push_back('=');
  }
  return out;
}

Result<std::string> base64_decode(std::string_view text, std::string_view what) {
  std::string out;
  out.reserve(text.size() / 4 * 3);
  uint32_t acc = 0;
  int bits = 0, pad = 0;
  std::size_t symbols = 0;
  for (char c : text) {
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') continue;
    if (c == '=') {
      ++pad;
      continue;
    }
    const int v = decode_char(c);
    if (v < 0 || pad > 0) {
      return make_error(errc::kBadKey, std::string(what) + " is not base64 (unexpected character or data after '=')");
    }
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    ++symbols;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xff));
    }
  }
  if (symbols % 4 == 1 || pad > 2) return make_error(errc::kBadKey, std::string(what) + " is truncated base64");
  return out;
}

}  // namespace kakeya::bridge
