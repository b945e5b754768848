// libFuzzer target: the SSH signature readers a runner applies to what a request's author pushed
// (bridge/ssh_signature.h: an armored SSHSIG from a commit's gpgsig header, and the public key
// inside it, bridge/ssh_key.h) and the operator's allowed-signers file (bridge/allowed_signers.h).
// Invariants checked on every input (a violation traps): nothing throws or crashes; a signature
// that parses is checked with verify_sshsig against a fixed message and namespace, which must
// refuse it (the fuzzer cannot forge a signature over that message with the key it carries, short
// of replaying the seed's, whose message differs) or, when it verifies, name the key it parsed.
//
// Input layout: the first byte picks the reader ('s' signature, 'k' public key line, 'a'
// allowed-signers text; anything else: all three), the rest is the text.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string_view>

#include "bridge/allowed_signers.h"
#include "bridge/ssh_key.h"
#include "bridge/ssh_signature.h"

namespace {

#define check(cond)                                                                         \
  do {                                                                                      \
    if (!(cond)) {                                                                          \
      std::fprintf(stderr, "invariant violated at %s:%d: %s\n", __FILE__, __LINE__, #cond); \
      __builtin_trap();                                                                     \
    }                                                                                       \
  } while (0)

void signature(std::string_view text) {
  auto sig = kakeya::bridge::parse_ssh_signature(text);
  if (!sig.ok()) {
    check(!sig.error().message.empty());
    return;
  }
  // The seed signs "commit message\n"; this message differs, so no input verifies.
  const auto verified = kakeya::bridge::verify_sshsig(*sig, kakeya::bridge::kGitSignatureNamespace,
                                                      "a message no seed signs\n");
  check(!verified.ok());
}

void public_key(std::string_view text) {
  auto key = kakeya::bridge::parse_public_key_text(text);
  if (!key.ok()) check(!key.error().message.empty());
}

void allowed_signers(std::string_view text) {
  auto signers = kakeya::bridge::AllowedSigners::parse(text, "fuzz");
  if (!signers.ok()) check(!signers.error().message.empty());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0]) {
    case 's': signature(text); break;
    case 'k': public_key(text); break;
    case 'a': allowed_signers(text); break;
    default:
      signature(text);
      public_key(text);
      allowed_signers(text);
  }
  return 0;
}
