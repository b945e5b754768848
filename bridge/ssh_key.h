#pragma once
// SSH public keys as OpenSSH writes them, and SSH signature verification with OpenSSL.
//
// A key is its wire blob (RFC 4253 §6.6): string type, then the type's fields. Two keys are the
// same key exactly when their blobs are equal (what OpenSSH compares in known_hosts and
// allowed_signers). The text form is the one line of *.pub, authorized_keys, known_hosts and
// allowed_signers: "<type> <base64 blob> [comment]". Fingerprints are `ssh-keygen -l`'s default:
// "SHA256:" + base64 (no padding) of SHA-256 over the blob.
//
// Verification (verify_ssh_signature) supports the types OpenSSH signs with today:
//   ssh-ed25519                      (RFC 8709)          signature "ssh-ed25519"
//   ssh-rsa                          (RFC 8332)          signature "rsa-sha2-256" or "rsa-sha2-512"
//                                                        (never "ssh-rsa": SHA-1)
//   ecdsa-sha2-nistp256/384/521      (RFC 5656)          SHA-256/384/512
// Other types (DSA, security keys sk-*, certificates *-cert-v01@openssh.com) parse as keys, so they
// can be compared (host keys), but verifying with them is `bad_key` naming the type.
#include <string>
#include <string_view>

#include "bridge/result.h"

namespace kakeya::bridge {

struct SshPublicKey {
  std::string type;  // the blob's leading type string, e.g. "ssh-ed25519"
  std::string blob;  // the whole wire-format key blob

  // "SHA256:<base64 without '=' padding>" of the blob, as `ssh-keygen -lf` prints it.
  std::string fingerprint() const;
  // "<type> <base64 blob>" (the text form without a comment).
  std::string text() const;

  friend bool operator==(const SshPublicKey& a, const SshPublicKey& b) { return a.blob == b.blob; }
};

// Reads a key blob: its type string, and for the verifiable types the fields that type has (an
// ed25519 key of 32 bytes, RSA e and n, an ECDSA curve that agrees with the type and a point).
// Trailing bytes are an error. Error `bad_key`.
Result<SshPublicKey> parse_public_key_blob(std::string_view blob);

// Reads the text form `<type> <base64>` (a comment after them is ignored). The type written in
// the text must equal the blob's. Error `bad_key` naming the text's type.
Result<SshPublicKey> parse_public_key_text(std::string_view line);

// Verifies `signature_blob` (string sig_format, string sig — an SSH signature as in RFC 4253
// §6.6) over `data` with `key`. Errors: `bad_key` (unsupported key type, a signature format that
// does not belong to the key type, a malformed blob), `bad_signature` (well-formed but wrong).
Status verify_ssh_signature(const SshPublicKey& key, std::string_view signature_blob, std::string_view data);

}  // namespace kakeya::bridge
