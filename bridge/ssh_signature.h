#pragma once
// SSHSIG signatures (OpenSSH PROTOCOL.sshsig): what `ssh-keygen -Y sign` writes and what git
// stores in a commit's `gpgsig` header when `gpg.format=ssh`.
//
// Armored: "-----BEGIN SSH SIGNATURE-----", base64 lines, "-----END SSH SIGNATURE-----".
// Blob:    "SSHSIG" | uint32 version (1) | string publickey | string namespace | string reserved |
//          string hash_algorithm ("sha256" | "sha512") | string signature.
// Signed:  "SSHSIG" | string namespace | string reserved | string hash_algorithm | string H(message)
// git signs commits in the namespace "git"; the message is the commit object without its gpgsig
// header (libgit2: git_commit_extract_signature).
//
// Signing is done the way git does it, by `ssh-keygen -Y sign -n <namespace> -f <key>` (argv, no
// shell; the message on stdin, the armored signature on stdout): every key type OpenSSH has, keys
// held by ssh-agent (give the public key file), and encrypted keys on a terminal work as they do
// for git. Verification is done here (bridge/ssh_key.h), so a verifier needs no ssh-keygen.
#include <filesystem>
#include <string>
#include <string_view>

#include "bridge/result.h"
#include "bridge/ssh_key.h"

namespace kakeya::bridge {

inline constexpr std::string_view kGitSignatureNamespace = "git";
// Wall-clock bound of one ssh-keygen signing call, seconds.
inline constexpr double kSignTimeoutS = 30;

struct SshSignature {
  SshPublicKey key;            // the signer's public key, as carried in the signature
  std::string sig_namespace;   // e.g. "git"
  std::string hash_algorithm;  // "sha256" or "sha512"
  std::string signature;       // SSH signature blob (string format, string bytes)
};

// Whether `text` starts like an armored SSH signature (as opposed to, e.g., a PGP one).
bool is_armored_ssh_signature(std::string_view text);

// Parses an armored SSHSIG. Errors `bad_key` naming what is wrong (armor, base64, magic, version,
// a field), never throwing; the public key must parse (bridge/ssh_key.h).
Result<SshSignature> parse_ssh_signature(std::string_view armored);

// Checks that `sig` signs `message` in `expected_namespace`: the namespace must match, the hash
// algorithm be sha256 or sha512, and the signature verify with sig.key. Errors: `bad_signature`
// (wrong namespace, or the signature does not verify), `bad_key`. Who the key belongs to is the
// caller's question (bridge/allowed_signers.h).
Status verify_sshsig(const SshSignature& sig, std::string_view expected_namespace, std::string_view message);

// Signs `message` with `ssh-keygen -Y sign -n <ns> -f <key_path>` and returns the armored
// signature (without a trailing newline). `key_path` is a private key file, or a public key file whose private half is in
// ssh-agent. Errors: `not_found` (no ssh-keygen in PATH), `child_failed` (it failed; the message
// carries its stderr, e.g. a missing key or wrong permissions), `timeout` (kSignTimeoutS).
Result<std::string> sign_with_ssh_keygen(const std::filesystem::path& key_path, std::string_view ns,
                                         std::string_view message);

}  // namespace kakeya::bridge
