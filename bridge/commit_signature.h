#pragma once
// Who signed a commit, checked the way `git verify-commit` checks it with gpg.format=ssh and
// gpg.ssh.allowedSignersFile: the gpgsig header must hold an SSH signature (SSHSIG, namespace
// "git") over the commit without that header, made by a key the allowed-signers file lists for
// namespace "git" at the commit's committer date. Verification is done here
// (bridge/ssh_signature.h), not by ssh-keygen.
#include <string>
#include <vector>

#include "bridge/allowed_signers.h"
#include "bridge/gitbus.h"
#include "bridge/result.h"

namespace kakeya::bridge {

struct CommitSigner {
  std::vector<std::string> principals;  // from the allowed-signers lines that allow the key
  std::string key_type;                 // e.g. "ssh-ed25519"
  std::string fingerprint;              // "SHA256:..."
};

// Errors, each naming the commit (12 hex digits): `not_signed` (no gpgsig header), `bad_key` (a
// signature that is not an armored SSH signature, e.g. PGP, or is malformed), `bad_signature`
// (wrong namespace, or it does not verify over the commit), `untrusted_signer` (a good signature
// by a key the file does not allow; the message names the fingerprint).
Result<CommitSigner> verify_commit_signature(const CommitInfo& commit, const AllowedSigners& signers);

}  // namespace kakeya::bridge
