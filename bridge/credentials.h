#pragma once
// Credentials for the git bus: where they come from and what they hold.
// Secrets held here are never logged, never put into error messages.

#include <filesystem>
#include <optional>
#include <string>

#include "bridge/result.h"

namespace kakeya::bridge {

// What the libgit2 credential callback answers with. Empty strings mean "not set".
struct Credentials {
  std::string username, token;  // HTTP(S) basic auth; token is sent as the password
  std::string ssh_public_key, ssh_private_key, ssh_passphrase;  // key file paths / passphrase
  std::string ca_bundle;  // explicit CA file for HTTPS (GIT_OPT_SET_SSL_CERT_LOCATIONS); process-wide
  // Where the username/token came from, for messages and doctor (never a secret):
  // "KAKEYA_GIT_TOKEN", "KAKEYA_GIT_TOKEN_FILE (<path>)", "credentials file <path> line N" or
  // "none (anonymous)"; then ", ssh key <path>" when KAKEYA_GIT_SSH_KEY is set.
  std::string source;
  // OpenSSH known_hosts file that pins ssh:// servers' host keys (bridge/known_hosts.h); an
  // unknown, changed or revoked host key refuses the connection before any credential is sent.
  std::string ssh_known_hosts;
};

// Loads credentials for `remote_url`, first source that applies wins:
//  1. Environment: KAKEYA_GIT_TOKEN, or KAKEYA_GIT_TOKEN_FILE (first line of the file, trailing
//     whitespace stripped); username from KAKEYA_GIT_USERNAME, default "x-access-token" (what
//     GitHub/Gitea accept for a token). Set both TOKEN and TOKEN_FILE -> error `credentials_conflict`.
//  2. `credentials_file`: git-credential-store format, one `scheme://user:token@host[:port][/path]`
//     per line (user/token percent-encoded as git writes them; blank lines and `#` comments are
//     skipped). The first line whose scheme and host[:port] equal the remote's is used. No matching
//     line -> error `credentials_not_found` naming the file and host.
//  3. Neither: empty credentials (anonymous; fine for git:// and public remotes).
// A remote URL that embeds a password or token (`https://user:token@host/...`) is refused with
// `credentials_in_url`: it would be written to logs, caches and status files.
// Independently of the source: KAKEYA_GIT_SSH_KEY (private key path; public key = path + ".pub" when
// that file exists), KAKEYA_GIT_SSH_PASSPHRASE, KAKEYA_GIT_CA_BUNDLE fill the ssh/CA fields;
// KAKEYA_GIT_SSH_KNOWN_HOSTS names the known_hosts file (default $HOME/.ssh/known_hosts).
// Errors (`credentials_file`, `bad_credentials_line`, `bad_remote_url`) name the file and line
// number, never the token.
Result<Credentials> load_credentials(const std::string& remote_url,
                                     const std::optional<std::filesystem::path>& credentials_file);

// How credentials for `remote_url` are supplied, one line for messages: for http(s) the token
// variables and a credential-store line `<scheme>://USER:TOKEN@<host>` in the file that
// `file_option` names (the client's "--credentials-file", the runner's "credentials_file in
// <config>"); for ssh the key variables.
std::string credential_sources_help(const std::string& remote_url, const std::string& file_option);

// An `auth_failed` error (bridge/gitbus.h) restated for people: which remote, what was sent
// (`used.source`) and where credentials come from (credential_sources_help), instead of
// libgit2's wording. Any other error is returned unchanged.
Error explain_auth_failure(const Error& error, const std::string& remote_url, const Credentials& used,
                           const std::string& file_option);

// Components of a URL as the credential lookup sees them. Exposed for tests.
struct UrlParts {
  std::string scheme;    // "https", "http", "ssh", "git", ... ("" for scp-like user@host:path)
  std::string username;  // percent-decoded, may be empty
  std::string password;  // percent-decoded, may be empty
  std::string host;      // host[:port], lower-cased host
};
// Parses `scheme://[user[:password]@]host[:port][/path]` or scp-like `user@host:path`.
// Error `bad_remote_url` (message never contains the password) when no host can be found.
Result<UrlParts> parse_url(const std::string& url);

// The URL with any `user:password@` userinfo removed: safe to put into logs and errors.
std::string redact_url(const std::string& url);

}  // namespace kakeya::bridge
