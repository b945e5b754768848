#pragma once
// The allowed-signers file of ssh-keygen(1) ("ALLOWED SIGNERS"), the one git reads through
// `gpg.ssh.allowedSignersFile`: which SSH keys may sign, as whom, for what and when.
//
//   # comment
//   runner-1@example.com,ops@example.com namespaces="git" ssh-ed25519 AAAAC3Nza... runner 1
//   alice@example.com valid-after="20260101",valid-before="20270101Z" ecdsa-sha2-nistp256 AAAAE2Vj...
//
// Fields: principals (comma-separated), optional options, key type, base64 key, optional comment.
// Options (comma-separated; values may be double-quoted): namespaces="n1,n2" (the line only
// serves signatures in those namespaces), valid-after / valid-before = "YYYYMMDD[HHMM[SS]]" with
// a trailing "Z" for UTC (local time otherwise), compared with the signing time git uses (the
// committer date), and cert-authority (certificate signers are not supported: such lines are
// kept out, so they never match). An unknown option, or a line that does not parse, is an error
// naming the file and line, as ssh-keygen treats it. Principals are taken as written (OpenSSH
// allows patterns there; a pattern is a principal name here).
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bridge/result.h"
#include "bridge/ssh_key.h"

namespace kakeya::bridge {

struct AllowedSigner {
  std::vector<std::string> principals;
  std::vector<std::string> namespaces;  // empty: every namespace
  std::optional<int64_t> valid_after;   // seconds since the Unix epoch
  std::optional<int64_t> valid_before;
  SshPublicKey key;
  int line = 0;  // 1-based, for messages
};

class AllowedSigners {
 public:
  // Reads `path` (at most 1 MiB). Errors: `io`, `too_large`, `bad_key` ("<path>:<line>: ...").
  static Result<AllowedSigners> load_file(const std::filesystem::path& path);
  // Same from text; `origin` names the file in messages.
  static Result<AllowedSigners> parse(std::string_view text, std::string origin);

  // The principals that `key` may sign as in `ns` at `time` (seconds since the epoch): the
  // union over every line with that key whose namespaces and validity allow it, in file order.
  // Error `untrusted_signer` naming the key's fingerprint and the file when no line does, saying
  // why when a line has the key but refuses the namespace or the time.
  Result<std::vector<std::string>> principals_for(const SshPublicKey& key, std::string_view ns, int64_t time) const;

  const std::string& origin() const { return origin_; }
  const std::vector<AllowedSigner>& entries() const { return entries_; }

 private:
  std::string origin_;
  std::vector<AllowedSigner> entries_;
};

// "YYYYMMDD", "YYYYMMDDHHMM" or "YYYYMMDDHHMMSS", with a trailing "Z" for UTC, else local time
// (ssh-keygen's rule). nullopt when it is none of these.
std::optional<int64_t> parse_signer_time(std::string_view text);

}  // namespace kakeya::bridge
