#include "bridge/commit_signature.h"

#include "bridge/ssh_signature.h"

namespace kakeya::bridge {

Result<CommitSigner> verify_commit_signature(const CommitInfo& commit, const AllowedSigners& signers) {
  const std::string which = "commit " + commit.oid.substr(0, 12);
  auto named = [&](const Error& e) { return make_error(e.code, which + ": " + e.message); };
  if (!commit.signature) return make_error(errc::kNotSigned, which + " is not signed");
  if (!is_armored_ssh_signature(*commit.signature)) {
    return make_error(errc::kBadKey, which + " carries a signature that is not an SSH signature (e.g. PGP)");
  }
  auto sig = parse_ssh_signature(*commit.signature);
  if (!sig.ok()) return named(sig.error());
  if (auto v = verify_sshsig(*sig, kGitSignatureNamespace, commit.signed_payload); !v.ok()) return named(v.error());
  auto principals = signers.principals_for(sig->key, kGitSignatureNamespace, commit.committer_time);
  if (!principals.ok()) return named(principals.error());
  return CommitSigner{std::move(principals).value(), sig->key.type, sig->key.fingerprint()};
}

}  // namespace kakeya::bridge
