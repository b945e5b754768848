// SSH keys, SSHSIG signatures and allowed-signers files against the real ssh-keygen: what it
// signs verifies here, for every key type it makes; tampering, another namespace or another key
// does not; fingerprints equal `ssh-keygen -l`'s.
#include "bridge/ssh_signature.h"

#include <gtest/gtest.h>

#include "bridge/allowed_signers.h"
#include "bridge/child_process.h"
#include "bridge/ssh_key.h"
#include "bridge/ssh_wire.h"
#include "tests/harness/paths.h"
#include "tests/harness/ssh_keys.h"

namespace kakeya::bridge {
namespace {

using testing::first_line;
using testing::make_ssh_key;

struct KeyKind {
  const char* type;
  int bits;
  const char* ssh_type;
};

class SshSignatureTest : public ::testing::TestWithParam<KeyKind> {
 protected:
  testing::TempDir dir_{"kakeya-sshsig"};
};

TEST_P(SshSignatureTest, WhatSshKeygenSignsVerifiesAndTamperingDoesNot) {
  const KeyKind k = GetParam();
  auto key = make_ssh_key(dir_.path(), "signer", k.type, k.bits);
  ASSERT_TRUE(key.ok()) << key.error().str();
  const std::string message = "tree 4b825dc642cb6eb9a060e54bf8d69288fbee4904\nauthor a <a@x> 1 +0000\n\nmsg\n";
  auto armored = sign_with_ssh_keygen(*key, "git", message);
  ASSERT_TRUE(armored.ok()) << armored.error().str();
  ASSERT_TRUE(is_armored_ssh_signature(*armored));

  auto sig = parse_ssh_signature(*armored);
  ASSERT_TRUE(sig.ok()) << sig.error().str();
  EXPECT_EQ(sig->key.type, k.ssh_type);
  EXPECT_EQ(sig->sig_namespace, "git");
  auto pub = parse_public_key_text(first_line(key->string() + ".pub"));
  ASSERT_TRUE(pub.ok()) << pub.error().str();
  EXPECT_EQ(sig->key, *pub);

  // The fingerprint is ssh-keygen's own.
  auto listed = run_child({"ssh-keygen", "-l", "-E", "sha256", "-f", key->string() + ".pub"}, "", 30);
  ASSERT_TRUE(listed.ok() && listed->succeeded());
  EXPECT_NE(listed->out.find(" " + pub->fingerprint() + " "), std::string::npos) << listed->out << pub->fingerprint();

  EXPECT_TRUE(verify_sshsig(*sig, "git", message).ok());
  auto tampered = verify_sshsig(*sig, "git", message + "x");
  ASSERT_FALSE(tampered.ok());
  EXPECT_EQ(tampered.error().code, errc::kBadSignature);
  auto other_ns = verify_sshsig(*sig, "file", message);
  ASSERT_FALSE(other_ns.ok());
  EXPECT_EQ(other_ns.error().code, errc::kBadSignature);
  EXPECT_NE(other_ns.error().message.find("namespace 'git'"), std::string::npos) << other_ns.error().message;

  // The same signature claimed by another key of the same type does not verify.
  auto other_key = make_ssh_key(dir_.path(), "other", k.type, k.bits);
  ASSERT_TRUE(other_key.ok());
  SshSignature forged = *sig;
  forged.key = *parse_public_key_text(first_line(other_key->string() + ".pub"));
  auto wrong = verify_sshsig(forged, "git", message);
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.error().code, errc::kBadSignature);
}

INSTANTIATE_TEST_SUITE_P(KeyTypes, SshSignatureTest,
                         ::testing::Values(KeyKind{"ed25519", 0, "ssh-ed25519"}, KeyKind{"rsa", 2048, "ssh-rsa"},
                                           KeyKind{"ecdsa", 256, "ecdsa-sha2-nistp256"},
                                           KeyKind{"ecdsa", 384, "ecdsa-sha2-nistp384"},
                                           KeyKind{"ecdsa", 521, "ecdsa-sha2-nistp521"}),
                         [](const ::testing::TestParamInfo<KeyKind>& p) {
                           return std::string(p.param.type) + (p.param.bits ? std::to_string(p.param.bits) : "");
                         });

TEST(SshSignatureParse, MalformedArmorAndBlobsAreErrors) {
  EXPECT_EQ(parse_ssh_signature("").error().code, errc::kBadKey);
  EXPECT_EQ(parse_ssh_signature("-----BEGIN PGP SIGNATURE-----\nx\n-----END PGP SIGNATURE-----").error().code,
            errc::kBadKey);
  EXPECT_EQ(parse_ssh_signature("-----BEGIN SSH SIGNATURE-----\n!!!\n-----END SSH SIGNATURE-----").error().code,
            errc::kBadKey);
  // Valid base64 of a blob that is not SSHSIG, and of a truncated SSHSIG.
  const std::string not_magic = "-----BEGIN SSH SIGNATURE-----\n" + base64_encode("NOTSIG....") + "\n-----END SSH SIGNATURE-----";
  auto bad_magic = parse_ssh_signature(not_magic);
  ASSERT_FALSE(bad_magic.ok());
  EXPECT_NE(bad_magic.error().message.find("SSHSIG"), std::string::npos);
  std::string blob = "SSHSIG";
  put_u32(blob, 1);
  put_u32(blob, 1000);  // a key string longer than what follows
  auto truncated = parse_ssh_signature("-----BEGIN SSH SIGNATURE-----\n" + base64_encode(blob) + "\n-----END SSH SIGNATURE-----");
  ASSERT_FALSE(truncated.ok());
  EXPECT_EQ(truncated.error().code, errc::kBadKey);
  EXPECT_NE(truncated.error().message.find("truncated"), std::string::npos) << truncated.error().message;
}

TEST(SshWire, Base64RoundTripsAndRefusesGarbage) {
  for (std::string s : {std::string(), std::string("f"), std::string("fo"), std::string("foo"), std::string("foob"),
                        std::string("\x00\xff\x10", 3)}) {
    auto back = base64_decode(base64_encode(s), "x");
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(*back, s);
  }
  EXPECT_EQ(base64_encode("foobar"), "Zm9vYmFy");
  EXPECT_EQ(*base64_decode("Zm9v\nYmE=", "x"), "fooba");
  EXPECT_FALSE(base64_decode("Zm9v*", "x").ok());
  EXPECT_FALSE(base64_decode("Z", "x").ok());
  EXPECT_FALSE(base64_decode("Zm==Zm", "x").ok());
}

TEST(SshKey, TextFormMustAgreeWithTheBlob) {
  testing::TempDir dir("kakeya-sshkey");
  auto key = make_ssh_key(dir.path(), "k");
  ASSERT_TRUE(key.ok());
  const std::string line = first_line(key->string() + ".pub");
  auto pub = parse_public_key_text(line);
  ASSERT_TRUE(pub.ok()) << pub.error().str();
  EXPECT_EQ(pub->text() + " kakeya-test", line);
  auto lie = parse_public_key_text("ssh-rsa " + line.substr(line.find(' ') + 1));
  ASSERT_FALSE(lie.ok());
  EXPECT_NE(lie.error().message.find("'ssh-ed25519' key"), std::string::npos) << lie.error().message;
  EXPECT_FALSE(parse_public_key_text("ssh-ed25519").ok());
  // An ed25519 blob with a 31-byte key.
  std::string blob;
  put_string(blob, "ssh-ed25519");
  put_string(blob, std::string(31, 'k'));
  auto short_key = parse_public_key_blob(blob);
  ASSERT_FALSE(short_key.ok());
  EXPECT_NE(short_key.error().message.find("31 bytes"), std::string::npos);
  // Types that cannot be verified still parse (host keys are compared, not verified) ...
  std::string dss;
  put_string(dss, "ssh-dss");
  put_string(dss, "p");
  auto parsed = parse_public_key_blob(dss);
  ASSERT_TRUE(parsed.ok());
  // ... but refuse to verify.
  std::string sig;
  put_string(sig, "ssh-dss");
  put_string(sig, "x");
  auto v = verify_ssh_signature(*parsed, sig, "data");
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.error().code, errc::kBadKey);
  EXPECT_NE(v.error().message.find("ssh-dss"), std::string::npos);
}

// ---- allowed signers -----------------------------------------------------------------------------

class AllowedSignersTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto a = make_ssh_key(dir_.path(), "alice");
    auto b = make_ssh_key(dir_.path(), "bob", "ecdsa", 256);
    ASSERT_TRUE(a.ok() && b.ok());
    alice_ = first_line(a->string() + ".pub");
    bob_ = first_line(b->string() + ".pub");
    alice_key_ = *parse_public_key_text(alice_);
    bob_key_ = *parse_public_key_text(bob_);
  }
  testing::TempDir dir_{"kakeya-allowed"};
  std::string alice_, bob_;
  SshPublicKey alice_key_, bob_key_;
};

TEST_F(AllowedSignersTest, PrincipalsNamespacesAndValidity) {
  const std::string text = "# runners\n\n"
                           "alice@example.com,ops@example.com " + alice_ + "\n" +
                           "alice-git@example.com namespaces=\"git,file\",valid-after=\"20200101Z\" " + alice_ + "\n" +
                           "bob@example.com namespaces=\"file\" " + bob_ + "\n" +
                           "old@example.com valid-before=\"20000101Z\" " + bob_ + "\n" +
                           "ca@example.com cert-authority " + bob_ + "\n";
  auto s = AllowedSigners::parse(text, "signers");
  ASSERT_TRUE(s.ok()) << s.error().str();
  EXPECT_EQ(s->entries().size(), 4u);  // the cert-authority line is left out
  const int64_t now = 1800000000;        // 2027
  auto a = s->principals_for(alice_key_, "git", now);
  ASSERT_TRUE(a.ok()) << a.error().str();
  EXPECT_EQ(*a, (std::vector<std::string>{"alice@example.com", "ops@example.com", "alice-git@example.com"}));
  auto before = s->principals_for(alice_key_, "git", 1500000000);  // 2017: the second line is not valid yet
  ASSERT_TRUE(before.ok());
  EXPECT_EQ(*before, (std::vector<std::string>{"alice@example.com", "ops@example.com"}));

  auto b = s->principals_for(bob_key_, "git", now);
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.error().code, errc::kUntrustedSigner);
  EXPECT_NE(b.error().message.find(bob_key_.fingerprint()), std::string::npos) << b.error().message;
  EXPECT_NE(b.error().message.find("signers:5 allows it only for namespaces other than 'git'"), std::string::npos)
      << b.error().message;
  EXPECT_NE(b.error().message.find("signers:6 allows it only until 2000-01-01T00:00:00Z"), std::string::npos)
      << b.error().message;
  auto file_ns = s->principals_for(bob_key_, "file", now);
  ASSERT_TRUE(file_ns.ok());
  EXPECT_EQ(*file_ns, (std::vector<std::string>{"bob@example.com"}));
}

TEST_F(AllowedSignersTest, UnknownKeyAndBadLinesNameTheLine) {
  auto only_alice = AllowedSigners::parse("alice@example.com " + alice_ + "\n", "f");
  ASSERT_TRUE(only_alice.ok());
  auto bob = only_alice->principals_for(bob_key_, "git", 0);
  ASSERT_FALSE(bob.ok());
  EXPECT_EQ(bob.error().message, "signing key ecdsa-sha2-nistp256 " + bob_key_.fingerprint() + " is not in f");

  auto unknown_opt = AllowedSigners::parse("\nx@y nosuch=\"1\" " + alice_ + "\n", "f");
  ASSERT_FALSE(unknown_opt.ok());
  EXPECT_EQ(unknown_opt.error().code, errc::kBadKey);
  EXPECT_NE(unknown_opt.error().message.find("f:2: unknown option"), std::string::npos) << unknown_opt.error().message;
  auto bad_time = AllowedSigners::parse("x@y valid-after=\"2020\" " + alice_ + "\n", "f");
  ASSERT_FALSE(bad_time.ok());
  EXPECT_NE(bad_time.error().message.find("f:1: valid-after '2020'"), std::string::npos);
  auto bad_key = AllowedSigners::parse("x@y ssh-ed25519 AAAA\n", "f");
  ASSERT_FALSE(bad_key.ok());
  EXPECT_NE(bad_key.error().message.find("f:1: "), std::string::npos);
  auto missing = AllowedSigners::load_file(dir_.path() / "nope");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code, errc::kIo);
}

TEST(SignerTime, FormatsOfSshKeygen) {
  EXPECT_EQ(parse_signer_time("20200101Z"), 1577836800);
  EXPECT_EQ(parse_signer_time("202001010102Z"), 1577836800 + 3720);
  EXPECT_EQ(parse_signer_time("20200101010203Z"), 1577836800 + 3723);
  EXPECT_TRUE(parse_signer_time("20200101").has_value());  // local time
  EXPECT_FALSE(parse_signer_time("2020010").has_value());
  EXPECT_FALSE(parse_signer_time("20201301Z").has_value());
  EXPECT_FALSE(parse_signer_time("2020-01-01").has_value());
}

}  // namespace
}  // namespace kakeya::bridge
