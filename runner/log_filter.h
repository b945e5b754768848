#pragma once
// The byte pipeline between a job's stdout/stderr and its log: secrets redacted, output made
// well-formed UTF-8. Job output is input data: it may hold secrets (an environment dump) and any
// bytes at all (binary output, a UTF-8 character cut by a pipe write), and it is committed to the
// branch (logs/job.log) and quoted in status.json (log_tail), which must be well-formed UTF-8.
//
//   write() -> StreamingRedactor (raw bytes, every secret)
//           -> Utf8StreamEscaper (bytes not in a well-formed sequence become `\xNN`)
//           -> StreamingRedactor (the secrets that are well-formed UTF-8, again)
//           -> sink
//
// The first redaction sees the bytes the job wrote, so a secret containing any bytes is caught
// there. The second catches a well-formed secret that escaping produced: a job writing the byte
// FF then "abcd" yields the text `\xffabcd`, which must not survive if that text is a secret. Only
// well-formed secrets go into the second pass: replacing a match of an ill-formed one could cut a
// character in two.
//
// Guarantees (fuzzed in tests/fuzz/redact_fuzz.cpp): the output is well-formed UTF-8 and every
// call of the sink receives whole characters; between two "[REDACTED]" markers no secret of at
// least kMinSecretLen bytes that is well-formed UTF-8 occurs. A secret that is not (it holds bytes
// no text has) is redacted wherever the job wrote it, but an escape may spell some of its bytes
// next to a character the job wrote: `\xff` after "\xe2\x82\xac" holds the bytes 82 AC 5C 78.
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "bridge/utf8.h"
#include "runner/redact.h"

namespace kakeya::runner {

class LogFilter {
 public:
  using Sink = std::function<void(std::string_view)>;

  LogFilter(const std::vector<std::string>& secrets, Sink sink);
  LogFilter(const LogFilter&) = delete;  // the stages call each other through `this`
  LogFilter& operator=(const LogFilter&) = delete;

  // REQUIRES: external synchronization.
  void write(std::string_view data);
  // End of stream: every held-back byte is decided and emitted.
  void flush();

  // Secrets not redacted (shorter than kMinSecretLen), without their values.
  const std::vector<IgnoredSecret>& ignored() const { return raw_.ignored(); }

 private:
  Sink sink_;
  StreamingRedactor escaped_;  // second pass, on escaped text
  bridge::Utf8StreamEscaper escaper_;
  StreamingRedactor raw_;      // first pass, on the job's bytes
};

// The secrets of `secrets` that are well-formed UTF-8 (what the second pass redacts).
std::vector<std::string> well_formed_secrets(const std::vector<std::string>& secrets);

}  // namespace kakeya::runner
