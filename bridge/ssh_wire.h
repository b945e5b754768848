#pragma once
// The SSH wire encoding (RFC 4251 §5: uint32, string, mpint) and base64 (RFC 4648 §4), as used by
// OpenSSH key blobs, signature blobs, SSHSIG (PROTOCOL.sshsig) and the one-line key files
// (authorized_keys, known_hosts, allowed_signers). Every read is bounds-checked: a short or
// overlong input is an error value (`bad_key`) naming `what` was being read, never a crash.
#include <cstdint>
#include <string>
#include <string_view>

#include "bridge/result.h"

namespace kakeya::bridge {

class SshWireReader {
 public:
  explicit SshWireReader(std::string_view data) : rest_(data) {}

  // A big-endian uint32. Error `bad_key` when fewer than 4 bytes are left.
  Result<uint32_t> u32(std::string_view what);
  // A uint32 length then that many bytes (the view points into the reader's input).
  Result<std::string_view> string(std::string_view what);
  // `n` raw bytes.
  Result<std::string_view> bytes(std::size_t n, std::string_view what);

  bool done() const { return rest_.empty(); }
  std::string_view rest() const { return rest_; }

 private:
  std::string_view rest_;
};

void put_u32(std::string& out, uint32_t v);
void put_string(std::string& out, std::string_view s);

// Standard base64 with padding (what OpenSSH writes).
std::string base64_encode(std::string_view data);
// Decodes standard base64; ASCII whitespace is skipped (armored signatures wrap lines); padding is
// optional. Error `bad_key` naming `what` on any other character or a truncated quantum.
Result<std::string> base64_decode(std::string_view text, std::string_view what);

}  // namespace kakeya::bridge
