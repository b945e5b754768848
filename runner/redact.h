#pragma once
// Streaming secret redaction for job logs (the Buildkite-agent redactor shape): bytes pass
// through write() in arbitrary chunks; every occurrence of a secret is replaced by
// "[REDACTED]" even when it straddles chunk boundaries.
//
// Matching rule (the reference, non-streaming behaviour the stream reproduces exactly):
// scan left to right; at each position, if one or more secrets match there, replace the
// LONGEST of them and continue after it; otherwise emit the byte. See redact_all().
//
// Latency: a byte is held back only while the bytes from it to the end of the buffer are a
// proper prefix of some secret, so at most max_secret_len()-1 bytes are ever pending.
// flush() decides the pending bytes as end-of-stream and emits them.
//
// Secrets shorter than kMinSecretLen bytes are NOT redacted (replacing "ab" everywhere would
// mangle logs and reveal nothing useful); ignored() says which were dropped and why, without
// repeating the secret's value.

#include <array>
#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace kakeya::runner {

inline constexpr std::string_view kRedacted = "[REDACTED]";
inline constexpr std::size_t kMinSecretLen = 4;

// A secret that was not accepted for redaction. `index` is its position in the input list;
// `reason` is one line for the operator and never contains the secret itself.
struct IgnoredSecret {
  std::size_t index = 0;
  std::string reason;
};

// Non-streaming reference replacement: the same rule as StreamingRedactor over a whole
// string. Secrets shorter than kMinSecretLen are ignored here too.
std::string redact_all(std::string_view text, const std::vector<std::string>& secrets);

class StreamingRedactor {
 public:
  using Sink = std::function<void(std::string_view)>;

  // `sink` receives redacted bytes in order; it is called from write()/flush() only.
  StreamingRedactor(std::vector<std::string> secrets, Sink sink);

  // Feeds bytes; emits every byte whose fate is decided. REQUIRES: external synchronization.
  void write(std::string_view data);
  // End of stream: emits all pending bytes (redacting complete matches). The redactor can be
  // written to again afterwards; a secret split across a flush() is not caught.
  void flush();

  const std::vector<IgnoredSecret>& ignored() const { return ignored_; }
  std::size_t secret_count() const { return secrets_.size(); }
  std::size_t max_secret_len() const { return max_len_; }
  std::size_t pending_bytes() const { return pending_.size(); }

 private:
  // Processes pending_ from the front; at_end means no more bytes will follow.
  void drain(bool at_end);

  std::vector<std::string> secrets_;  // accepted, deduplicated, longest first
  std::vector<IgnoredSecret> ignored_;
  std::array<bool, 256> first_byte_{};  // first_byte_[b]: some secret starts with byte b
  std::size_t max_len_ = 0;
  Sink sink_;
  std::string pending_;
  std::string out_;  // scratch, reused across writes
};

}  // namespace kakeya::runner
