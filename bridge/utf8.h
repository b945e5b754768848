#pragma once
// UTF-8 validity and escaping for text that crosses the git bus (issue 10: every byte a runner
// writes is valid UTF-8).
//
// Well-formed UTF-8 is exactly the byte sequences of the Unicode Standard, Table 3-7
// (RFC 3629 §4): code points U+0000..U+10FFFF except the surrogates U+D800..U+DFFF, each in its
// shortest form. Everything else is ill-formed: overlong encodings (C0 AF), encoded surrogates
// (ED A0 80), code points above U+10FFFF (F4 90 80 80, F5..FF), sequences cut short (E2 82 then
// a non-continuation byte or the end), and continuation bytes (80..BF) without a lead byte.
//
// Escaping turns every byte that is not part of a well-formed sequence into the four ASCII
// characters `\xNN` (two lower-case hex digits) and copies well-formed sequences unchanged, one
// byte at a time from left to right, so the output is always well-formed and has the same text
// as the input wherever the input was well-formed. Backslashes are not escaped: the output is for
// reading, not for decoding back.

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

namespace kakeya::bridge {

// True when `text` is well-formed UTF-8 (the empty string is).
bool is_valid_utf8(std::string_view text);

// `text` with every byte that is not part of a well-formed sequence written as `\xNN`.
// Control characters (including NUL and newline) are kept: use printable() for one-line messages.
std::string escape_invalid_utf8(std::string_view text);

// One-line display form of an untrusted value for reasons, error messages and log lines:
// escape_invalid_utf8, and also C0 controls (U+0000..U+001F, so NUL, newline, ESC), DEL (U+007F)
// and C1 controls (U+0080..U+009F, as their two bytes) written as `\xNN`. When the result would
// exceed `max_bytes`, it is cut at a character boundary and "..." appended (then at most
// max_bytes + 3 bytes).
std::string printable(std::string_view text, std::size_t max_bytes = std::string::npos);

// The last at most `max_bytes` bytes of well-formed `text`, starting on a character boundary
// (leading continuation bytes are dropped), so a log tail never begins inside a character.
std::string_view utf8_tail(std::string_view text, std::size_t max_bytes);

// The longest prefix of well-formed `text` that is at most `max_bytes` bytes and ends on a
// character boundary.
std::string_view utf8_head(std::string_view text, std::size_t max_bytes);

// Streaming escape_invalid_utf8 for byte streams cut at arbitrary places (job output): a
// sequence split across write() calls is recognised as one character. Output is produced in
// whole characters; at most 3 bytes (an incomplete sequence that more input could complete) are
// held back until the next write() or flush(). The concatenated output equals
// escape_invalid_utf8(concatenated input) whatever the chunking.
class Utf8StreamEscaper {
 public:
  using Sink = std::function<void(std::string_view)>;
  explicit Utf8StreamEscaper(Sink sink) : sink_(std::move(sink)) {}

  // REQUIRES: external synchronization.
  void write(std::string_view data);
  // End of stream: held-back bytes are escaped and emitted.
  void flush();

 private:
  Sink sink_;
  std::string pending_;  // at most 3 bytes of an incomplete sequence
  std::string out_;      // scratch, reused across writes
};

}  // namespace kakeya::bridge
