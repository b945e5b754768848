// libFuzzer target: the streaming log redactor and the job log filter (runner/redact.h,
// runner/log_filter.h) with fuzzer-chosen secrets and a fuzzer-chosen cut of the stream into
// writes. Invariants checked on every input (a violation traps):
//  1. StreamingRedactor's output, whatever the chunking, equals redact_all() of the whole stream.
//  2. No secret survives: between two "[REDACTED]" markers (and before the first, after the last)
//     no accepted secret occurs in the redactor's output, and no well-formed one in the filter's.
//  3. The filter's output is well-formed UTF-8, and so is every single call of its sink.
//
// Input layout (FuzzedDataProvider): a secret count (1..4); per secret, either fresh bytes
// (0..24) or a prefix/suffix/extension of an earlier secret (to reach overlapping secrets and a
// secret that is a prefix of another); then the stream, cut into writes of fuzzer-chosen lengths.
#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "bridge/utf8.h"
#include "runner/log_filter.h"
#include "runner/redact.h"

namespace {

using kakeya::runner::kMinSecretLen;
using kakeya::runner::kRedacted;

// A violated invariant: say which, then crash so libFuzzer keeps the input.
#define check(cond)                                                                         \
  do {                                                                                      \
    if (!(cond)) {                                                                          \
      std::fprintf(stderr, "invariant violated at %s:%d: %s\n", __FILE__, __LINE__, #cond); \
      __builtin_trap();                                                                     \
    }                                                                                       \
  } while (0)

// True when some secret (of at least kMinSecretLen bytes) occurs in `out` outside the markers.
bool secret_survives(std::string_view out, const std::vector<std::string>& secrets) {
  std::size_t start = 0;
  while (start <= out.size()) {
    const std::size_t marker = out.find(kRedacted, start);
    const std::string_view segment = out.substr(start, marker == std::string_view::npos ? std::string_view::npos : marker - start);
    for (const auto& s : secrets) {
      if (s.size() >= kMinSecretLen && segment.find(s) != std::string_view::npos) return true;
    }
    if (marker == std::string_view::npos) break;
    start = marker + kRedacted.size();
  }
  return false;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  std::vector<std::string> secrets;
  const int n = in.ConsumeIntegralInRange<int>(1, 4);
  for (int i = 0; i < n; ++i) {
    const int how = secrets.empty() ? 0 : in.ConsumeIntegralInRange<int>(0, 3);
    if (how == 0) {
      secrets.push_back(in.ConsumeBytesAsString(in.ConsumeIntegralInRange<std::size_t>(0, 24)));
      continue;
    }
    const std::string& base = secrets[in.ConsumeIntegralInRange<std::size_t>(0, secrets.size() - 1)];
    const std::size_t cut = in.ConsumeIntegralInRange<std::size_t>(0, base.size());
    if (how == 1) secrets.push_back(base.substr(0, cut));                                        // prefix
    if (how == 2) secrets.push_back(base.substr(cut));                                           // suffix
    if (how == 3) secrets.push_back(base + in.ConsumeBytesAsString(in.ConsumeIntegralInRange<std::size_t>(1, 8)));  // extension
  }
  std::vector<std::size_t> cuts;
  for (int i = 0; i < 16 && in.remaining_bytes() > 1; ++i) cuts.push_back(in.ConsumeIntegralInRange<std::size_t>(0, 64));
  const std::string stream = in.ConsumeRemainingBytesAsString();

  std::string redacted, filtered;
  kakeya::runner::StreamingRedactor redactor(secrets, [&](std::string_view d) { redacted.append(d); });
  kakeya::runner::LogFilter filter(secrets, [&](std::string_view d) {
    check(kakeya::bridge::is_valid_utf8(d));
    filtered.append(d);
  });
  std::size_t at = 0, k = 0;
  while (at < stream.size()) {
    const std::size_t len = cuts.empty() ? stream.size() : std::max<std::size_t>(1, cuts[k++ % cuts.size()]);
    const std::string_view chunk = std::string_view(stream).substr(at, len);
    redactor.write(chunk);
    filter.write(chunk);
    at += chunk.size();
  }
  redactor.flush();
  filter.flush();

  check(redacted == kakeya::runner::redact_all(stream, secrets));
  check(!secret_survives(redacted, secrets));
  check(kakeya::bridge::is_valid_utf8(filtered));
  // The filter's promise is for secrets that are text (well-formed UTF-8): an ill-formed secret
  // is redacted where the job wrote it, but escaping (`\xNN`) may spell some of its bytes next
  // to a character the job wrote (runner/log_filter.h).
  check(!secret_survives(filtered, kakeya::runner::well_formed_secrets(secrets)));
  return 0;
}
