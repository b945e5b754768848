#include "bridge/ssh_key.h"

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>

#include <memory>

#include "bridge/ssh_wire.h"
#include "bridge/utf8.h"

namespace kakeya::bridge {
namespace {

template <typename T, void (*Free)(T*)>
struct SslFree {
  void operator()(T* p) const { Free(p); }
};
using Pkey = std::unique_ptr<EVP_PKEY, SslFree<EVP_PKEY, EVP_PKEY_free>>;
using PkeyCtx = std::unique_ptr<EVP_PKEY_CTX, SslFree<EVP_PKEY_CTX, EVP_PKEY_CTX_free>>;
using MdCtx = std::unique_ptr<EVP_MD_CTX, SslFree<EVP_MD_CTX, EVP_MD_CTX_free>>;
using Bn = std::unique_ptr<BIGNUM, SslFree<BIGNUM, BN_free>>;
using ParamBld = std::unique_ptr<OSSL_PARAM_BLD, SslFree<OSSL_PARAM_BLD, OSSL_PARAM_BLD_free>>;
using Params = std::unique_ptr<OSSL_PARAM, SslFree<OSSL_PARAM, OSSL_PARAM_free>>;
using EcSig = std::unique_ptr<ECDSA_SIG, SslFree<ECDSA_SIG, ECDSA_SIG_free>>;

constexpr std::string_view kEd25519 = "ssh-ed25519";
constexpr std::string_view kRsa = "ssh-rsa";

struct EcdsaCurve {
  std::string_view key_type, curve, openssl_group;
  const EVP_MD* (*digest)();
};
const EcdsaCurve kCurves[] = {
    {"ecdsa-sha2-nistp256", "nistp256", "prime256v1", EVP_sha256},
    {"ecdsa-sha2-nistp384", "nistp384", "secp384r1", EVP_sha384},
    {"ecdsa-sha2-nistp521", "nistp521", "secp521r1", EVP_sha512},
};

const EcdsaCurve* find_curve(std::string_view key_type) {
  for (const auto& c : kCurves) {
    if (c.key_type == key_type) return &c;
  }
  return nullptr;
}

// A positive mpint (RFC 4251 §5) as a BIGNUM.
Result<Bn> read_mpint(SshWireReader& r, std::string_view what) {
  KAKEYA_ASSIGN_OR_RETURN(std::string_view bytes, r.string(what));
  if (!bytes.empty() && (static_cast<unsigned char>(bytes[0]) & 0x80) != 0) {
    return make_error(errc::kBadKey, std::string(what) + " is negative");
  }
  Bn bn(BN_bin2bn(reinterpret_cast<const unsigned char*>(bytes.data()), static_cast<int>(bytes.size()), nullptr));
  if (!bn) return make_error(errc::kOutOfMemory, "BN_bin2bn failed reading " + std::string(what));
  return bn;
}

Error openssl_failure(const std::string& what) { return make_error(errc::kBadKey, "OpenSSL cannot " + what); }

Result<Pkey> pkey_from_params(const char* algorithm, const OSSL_PARAM* params, const std::string& what) {
  PkeyCtx ctx(EVP_PKEY_CTX_new_from_name(nullptr, algorithm, nullptr));
  EVP_PKEY* raw = nullptr;
  if (!ctx || EVP_PKEY_fromdata_init(ctx.get()) <= 0 ||
      EVP_PKEY_fromdata(ctx.get(), &raw, EVP_PKEY_PUBLIC_KEY, const_cast<OSSL_PARAM*>(params)) <= 0) {
    return openssl_failure("load " + what);
  }
  return Pkey(raw);
}

// The key as an OpenSSL public key, with the digest its signatures use (nullptr for Ed25519).
struct VerifyKey {
  Pkey pkey;
  const EVP_MD* md = nullptr;
};

Result<VerifyKey> load_ed25519(SshWireReader& r) {
  KAKEYA_ASSIGN_OR_RETURN(std::string_view pk, r.string("ssh-ed25519 public key"));
  if (pk.size() != 32) {
    return make_error(errc::kBadKey, "ssh-ed25519 public key is " + std::to_string(pk.size()) + " bytes, not 32");
  }
  Pkey pkey(EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, nullptr, reinterpret_cast<const unsigned char*>(pk.data()),
                                        pk.size()));
  if (!pkey) return openssl_failure("load an ssh-ed25519 key");
  return VerifyKey{std::move(pkey), nullptr};
}

Result<VerifyKey> load_rsa(SshWireReader& r) {
  KAKEYA_ASSIGN_OR_RETURN(Bn e, read_mpint(r, "ssh-rsa exponent"));
  KAKEYA_ASSIGN_OR_RETURN(Bn n, read_mpint(r, "ssh-rsa modulus"));
  if (BN_num_bits(n.get()) < 1024) {
    return make_error(errc::kBadKey, "ssh-rsa modulus of " + std::to_string(BN_num_bits(n.get())) +
                                         " bits is too small (at least 1024)");
  }
  ParamBld bld(OSSL_PARAM_BLD_new());
  if (!bld || OSSL_PARAM_BLD_push_BN(bld.get(), OSSL_PKEY_PARAM_RSA_N, n.get()) != 1 ||
      OSSL_PARAM_BLD_push_BN(bld.get(), OSSL_PKEY_PARAM_RSA_E, e.get()) != 1) {
    return openssl_failure("build RSA parameters");
  }
  Params params(OSSL_PARAM_BLD_to_param(bld.get()));
  if (!params) return openssl_failure("build RSA parameters");
  KAKEYA_ASSIGN_OR_RETURN(Pkey pkey, pkey_from_params("RSA", params.get(), "an ssh-rsa key"));
  return VerifyKey{std::move(pkey), nullptr};
}

Result<VerifyKey> load_ecdsa(SshWireReader& r, const EcdsaCurve& curve) {
  KAKEYA_ASSIGN_OR_RETURN(std::string_view name, r.string("ECDSA curve name"));
  if (name != curve.curve) {
    return make_error(errc::kBadKey, "key type " + std::string(curve.key_type) + " names curve '" + printable(name, 32) +
                                         "', not " + std::string(curve.curve));
  }
  KAKEYA_ASSIGN_OR_RETURN(std::string_view q, r.string("ECDSA public point"));
  std::string group(curve.openssl_group);
  std::string point(q);
  const OSSL_PARAM params[] = {
      OSSL_PARAM_construct_utf8_string(OSSL_PKEY_PARAM_GROUP_NAME, group.data(), 0),
      OSSL_PARAM_construct_octet_string(OSSL_PKEY_PARAM_PUB_KEY, point.data(), point.size()),
      OSSL_PARAM_construct_end()};
  KAKEYA_ASSIGN_OR_RETURN(Pkey pkey, pkey_from_params("EC", params, "an " + std::string(curve.key_type) + " key"));
  return VerifyKey{std::move(pkey), curve.digest()};
}

// The key as OpenSSL verifies with it; also the structure check of parse_public_key_blob.
Result<VerifyKey> load_verify_key(const SshPublicKey& key) {
  SshWireReader r(key.blob);
  KAKEYA_TRY(r.string("key type"));
  Result<VerifyKey> out = make_error(errc::kBadKey, "");
  if (key.type == kEd25519) {
    out = load_ed25519(r);
  } else if (key.type == kRsa) {
    out = load_rsa(r);
  } else if (const EcdsaCurve* c = find_curve(key.type)) {
    out = load_ecdsa(r, *c);
  } else {
    return make_error(errc::kBadKey, "SSH key type '" + printable(key.type, 64) +
                                         "' is not supported for signatures (ssh-ed25519, ssh-rsa, ecdsa-sha2-nistp256/384/521)");
  }
  if (out.ok() && !r.done()) {
    return make_error(errc::kBadKey, std::to_string(r.rest().size()) + " trailing byte(s) after the " + key.type + " key");
  }
  return out;
}

// The ECDSA signature (mpint r, mpint s) re-encoded as DER, the form OpenSSL verifies.
Result<std::string> ecdsa_der(std::string_view ssh_sig) {
  SshWireReader r(ssh_sig);
  KAKEYA_ASSIGN_OR_RETURN(Bn rr, read_mpint(r, "ECDSA signature r"));
  KAKEYA_ASSIGN_OR_RETURN(Bn ss, read_mpint(r, "ECDSA signature s"));
  if (!r.done()) return make_error(errc::kBadKey, "trailing bytes after the ECDSA signature");
  EcSig sig(ECDSA_SIG_new());
  if (!sig || ECDSA_SIG_set0(sig.get(), rr.get(), ss.get()) != 1) return openssl_failure("build an ECDSA signature");
  (void)rr.release();  // owned by sig now
  (void)ss.release();
  unsigned char* der = nullptr;
  const int len = i2d_ECDSA_SIG(sig.get(), &der);
  if (len <= 0) return openssl_failure("encode an ECDSA signature");
  std::string out(reinterpret_cast<char*>(der), static_cast<std::size_t>(len));
  OPENSSL_free(der);
  return out;
}

}  // namespace

std::string SshPublicKey::fingerprint() const {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(blob.data(), blob.size(), md, &len, EVP_sha256(), nullptr);
  std::string b64 = base64_encode(std::string_view(reinterpret_cast<const char*>(md), len));
  while (!b64.empty() && b64.back() == '=') b64.pop_back();
  return "SHA256:" + b64;
}

std::string SshPublicKey::text() const { return type + " " + base64_encode(blob); }

Result<SshPublicKey> parse_public_key_blob(std::string_view blob) {
  SshWireReader r(blob);
  KAKEYA_ASSIGN_OR_RETURN(std::string_view type, r.string("key type"));
  if (type.empty()) return make_error(errc::kBadKey, "SSH key blob has an empty type");
  SshPublicKey key{std::string(type), std::string(blob)};
  if (key.type == kEd25519 || key.type == kRsa || find_curve(key.type) != nullptr) {
    KAKEYA_TRY(load_verify_key(key));  // the structure of a type we can verify with
  }
  return key;
}

Result<SshPublicKey> parse_public_key_text(std::string_view line) {
  const std::size_t sp = line.find_first_of(" \t");
  if (sp == std::string_view::npos) {
    return make_error(errc::kBadKey, "expected '<key type> <base64 key>', got '" + printable(line, 64) + "'");
  }
  const std::string_view type = line.substr(0, sp);
  std::string_view rest = line.substr(sp);
  rest.remove_prefix(std::min(rest.size(), rest.find_first_not_of(" \t")));
  const std::string_view b64 = rest.substr(0, rest.find_first_of(" \t"));
  if (b64.empty()) return make_error(errc::kBadKey, "no base64 key after type '" + printable(type, 64) + "'");
  KAKEYA_ASSIGN_OR_RETURN(std::string blob, base64_decode(b64, "the " + printable(type, 64) + " key"));
  KAKEYA_ASSIGN_OR_RETURN(SshPublicKey key, parse_public_key_blob(blob));
  if (key.type != type) {
    return make_error(errc::kBadKey, "key written as type '" + printable(type, 64) + "' is a '" +
                                         printable(key.type, 64) + "' key");
  }
  return key;
}

Status verify_ssh_signature(const SshPublicKey& key, std::string_view signature_blob, std::string_view data) {
  SshWireReader r(signature_blob);
  KAKEYA_ASSIGN_OR_RETURN(std::string_view format, r.string("signature format"));
  KAKEYA_ASSIGN_OR_RETURN(std::string_view sig, r.string("signature"));
  if (!r.done()) return make_error(errc::kBadKey, "trailing bytes after the signature blob");
  KAKEYA_ASSIGN_OR_RETURN(VerifyKey vk, load_verify_key(key));
  std::string der;
  const EVP_MD* md = vk.md;
  if (key.type == kEd25519) {
    if (format != kEd25519) {
      return make_error(errc::kBadKey, "signature format '" + printable(format, 64) + "' with an ssh-ed25519 key");
    }
  } else if (key.type == kRsa) {
    if (format == "rsa-sha2-256") {
      md = EVP_sha256();
    } else if (format == "rsa-sha2-512") {
      md = EVP_sha512();
    } else {
      return make_error(errc::kBadKey, "signature format '" + printable(format, 64) +
                                           "' with an ssh-rsa key (rsa-sha2-256 or rsa-sha2-512 expected; SHA-1 "
                                           "ssh-rsa signatures are not accepted)");
    }
  } else {
    if (format != key.type) {
      return make_error(errc::kBadKey, "signature format '" + printable(format, 64) + "' with an " + key.type + " key");
    }
    KAKEYA_ASSIGN_OR_RETURN(der, ecdsa_der(sig));
    sig = der;
  }
  MdCtx ctx(EVP_MD_CTX_new());
  if (!ctx || EVP_DigestVerifyInit(ctx.get(), nullptr, md, nullptr, vk.pkey.get()) != 1) {
    return openssl_failure("start verifying with an " + key.type + " key");
  }
  const int rc = EVP_DigestVerify(ctx.get(), reinterpret_cast<const unsigned char*>(sig.data()), sig.size(),
                                  reinterpret_cast<const unsigned char*>(data.data()), data.size());
  if (rc != 1) {
    return make_error(errc::kBadSignature, "the " + std::string(format) + " signature does not verify with key " +
                                               key.fingerprint());
  }
  return ok_status();
}

}  // namespace kakeya::bridge
