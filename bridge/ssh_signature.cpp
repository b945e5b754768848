#include "bridge/ssh_signature.h"

#include <openssl/evp.h>

#include "bridge/child_process.h"
#include "bridge/ssh_wire.h"
#include "bridge/utf8.h"

namespace kakeya::bridge {
namespace {

constexpr std::string_view kBegin = "-----BEGIN SSH SIGNATURE-----";
constexpr std::string_view kEnd = "-----END SSH SIGNATURE-----";
constexpr std::string_view kMagic = "SSHSIG";
constexpr uint32_t kVersion = 1;

Result<std::string> digest(std::string_view algorithm, std::string_view message) {
  const EVP_MD* md = algorithm == "sha512" ? EVP_sha512() : algorithm == "sha256" ? EVP_sha256() : nullptr;
  if (md == nullptr) {
    return make_error(errc::kBadSignature, "SSH signature hash algorithm '" + printable(algorithm, 32) +
                                               "' is not sha256 or sha512");
  }
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_Digest(message.data(), message.size(), out, &len, md, nullptr) != 1) {
    return make_error(errc::kBadSignature, "OpenSSL cannot hash with " + std::string(algorithm));
  }
  return std::string(reinterpret_cast<const char*>(out), len);
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\n' || s.front() == '\r')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\n' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

}  // namespace

bool is_armored_ssh_signature(std::string_view text) { return trim(text).starts_with(kBegin); }

Result<SshSignature> parse_ssh_signature(std::string_view armored) {
  const std::string_view t = trim(armored);
  if (!t.starts_with(kBegin) || !t.ends_with(kEnd) || t.size() < kBegin.size() + kEnd.size()) {
    return make_error(errc::kBadKey, "not an armored SSH signature (expected " + std::string(kBegin) + " ... " +
                                         std::string(kEnd) + ")");
  }
  const std::string_view body = t.substr(kBegin.size(), t.size() - kBegin.size() - kEnd.size());
  KAKEYA_ASSIGN_OR_RETURN(std::string blob, base64_decode(body, "the SSH signature"));
  SshWireReader r(blob);
  KAKEYA_ASSIGN_OR_RETURN(std::string_view magic, r.bytes(kMagic.size(), "SSHSIG magic"));
  if (magic != kMagic) return make_error(errc::kBadKey, "SSH signature does not start with SSHSIG");
  KAKEYA_ASSIGN_OR_RETURN(uint32_t version, r.u32("SSHSIG version"));
  if (version != kVersion) {
    return make_error(errc::kBadKey, "SSHSIG version " + std::to_string(version) + " is not supported (1)");
  }
  KAKEYA_ASSIGN_OR_RETURN(std::string_view key_blob, r.string("SSHSIG public key"));
  KAKEYA_ASSIGN_OR_RETURN(std::string_view ns, r.string("SSHSIG namespace"));
  KAKEYA_ASSIGN_OR_RETURN(std::string_view reserved, r.string("SSHSIG reserved field"));
  KAKEYA_ASSIGN_OR_RETURN(std::string_view hash, r.string("SSHSIG hash algorithm"));
  KAKEYA_ASSIGN_OR_RETURN(std::string_view sig, r.string("SSHSIG signature"));
  if (!r.done()) return make_error(errc::kBadKey, "trailing bytes after the SSHSIG signature");
  (void)reserved;  // PROTOCOL.sshsig: verifiers ignore its contents
  KAKEYA_ASSIGN_OR_RETURN(SshPublicKey key, parse_public_key_blob(key_blob));
  return SshSignature{std::move(key), std::string(ns), std::string(hash), std::string(sig)};
}

Status verify_sshsig(const SshSignature& sig, std::string_view expected_namespace, std::string_view message) {
  if (sig.sig_namespace != expected_namespace) {
    return make_error(errc::kBadSignature, "the signature is for namespace '" + printable(sig.sig_namespace, 64) +
                                               "', not '" + std::string(expected_namespace) + "'");
  }
  KAKEYA_ASSIGN_OR_RETURN(std::string h, digest(sig.hash_algorithm, message));
  std::string signed_data(kMagic);
  put_string(signed_data, sig.sig_namespace);
  put_string(signed_data, "");
  put_string(signed_data, sig.hash_algorithm);
  put_string(signed_data, h);
  return verify_ssh_signature(sig.key, sig.signature, signed_data);
}

Result<std::string> sign_with_ssh_keygen(const std::filesystem::path& key_path, std::string_view ns,
                                         std::string_view message) {
  const std::vector<std::string> argv{"ssh-keygen", "-Y", "sign", "-n", std::string(ns), "-f", key_path.string()};
  KAKEYA_ASSIGN_OR_RETURN(ChildOutput r, run_child(argv, message, kSignTimeoutS));
  if (!r.succeeded() || !is_armored_ssh_signature(r.out)) {
    std::string err(trim(r.err));
    if (err.empty()) err = "no signature on its output";
    return make_error(errc::kChildFailed, "`" + describe_argv(argv) + "` failed (exit " + std::to_string(r.exit_code) +
                                              "): " + printable(err, 1024));
  }
  return std::string(trim(r.out));
}

}  // namespace kakeya::bridge
