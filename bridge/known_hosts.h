#pragma once
// SSH host-key pinning against an OpenSSH known_hosts file (sshd(8) "SSH_KNOWN_HOSTS FILE
// FORMAT"), for the git bus's ssh:// remotes (bridge/git_session.h checks every SSH connection
// with it before any credential is sent).
//
// Lines: `[marker] hostnames keytype base64-key [comment]`. hostnames is a comma-separated list
// of patterns (`*` and `?` wildcards, `!` negation) or one hashed name `|1|salt|hmac`
// (HMAC-SHA1 of the name with the salt: `ssh-keygen -H`, HashKnownHosts). A server on a port
// other than 22 is looked up as `[host]:port` (what ssh-keyscan -p writes). Markers:
// `@revoked` (that key is refused for every host), `@cert-authority` (host certificates are not
// supported: such lines are skipped). Lines that do not parse are skipped, as ssh does.
//
// The verdict for a host and the key it presented:
//   Revoked  a @revoked line holds this key (whatever other lines say);
//   Known    a line for the host holds exactly this key;
//   Changed  lines for the host hold other keys of the same type, none this one (a possible
//            man-in-the-middle, or a re-keyed server: replace the line after checking);
//   Unknown  no line for the host has a key of this type (the file may be missing).
#include <filesystem>
#include <string>
#include <string_view>

#include "bridge/ssh_key.h"

namespace kakeya::bridge {

enum class HostKeyVerdict { Known, Unknown, Changed, Revoked };

struct HostKeyCheck {
  HostKeyVerdict verdict = HostKeyVerdict::Unknown;
  std::string detail;  // one line: the file and line numbers that decided, fingerprints
};

// The name a host is looked up by: "host" on port 22 (or port <= 0), else "[host]:port".
std::string known_hosts_name(std::string_view host, int port);

// Checks `key`, presented by `host`:`port`, against the known_hosts file at `path`. A missing or
// unreadable file is Unknown with a detail saying so.
HostKeyCheck check_known_host(const std::filesystem::path& path, std::string_view host, int port,
                              const SshPublicKey& key);

// The same over the file's text; `origin` names it in details.
HostKeyCheck check_known_host_text(std::string_view text, const std::string& origin, std::string_view host, int port,
                                   const SshPublicKey& key);

}  // namespace kakeya::bridge
