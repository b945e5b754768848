#pragma once
// A real OpenSSH server (`/usr/sbin/sshd -D -e -f CONF`, Debian openssh-server) on 127.0.0.1 for
// the git bus's ssh:// transport: a throwaway ed25519 host key and client key made by ssh-keygen,
// the client key authorised for the current user (StrictModes no, public keys only, no PAM), and
// a known_hosts file that pins the host key as `[127.0.0.1]:PORT`. The user's own shell runs
// git-upload-pack / git-receive-pack (no ForceCommand), so receive-pack compares old oids under
// the ref lock as with the other servers. Repositories are addressed by absolute path:
// ssh://USER@127.0.0.1:PORT/<base_path>/<repo>. Run as root, sshd needs its privilege-separation
// directory /run/sshd: start() creates it (0755) when it is missing, as the package does at boot.
#include <filesystem>
#include <memory>
#include <string>

#include "bridge/credentials.h"
#include "tests/harness/git_servers.h"
#include "tests/harness/paths.h"

namespace kakeya::testing {

class SshGitServer {
 public:
  // Picks a free port; nullptr (with the reason on stderr) when sshd cannot start.
  static std::unique_ptr<SshGitServer> start(std::filesystem::path base_path);
  std::string url(const std::string& repo) const;  // ssh://USER@127.0.0.1:PORT/<base>/<repo>
  void stop();
  Status restart();  // same port, same host key
  int port() const { return port_; }
  ~SshGitServer();

  // Credentials that log in: the authorised client key, known_hosts pinning this server.
  bridge::Credentials credentials() const;
  std::filesystem::path client_key() const { return work_.path() / "client_key"; }
  std::filesystem::path known_hosts() const { return work_.path() / "known_hosts"; }
  std::filesystem::path host_public_key() const { return work_.path() / "host_key.pub"; }
  std::filesystem::path work_dir() const { return work_.path(); }

 private:
  SshGitServer(std::filesystem::path base, int port) : base_(std::move(base)), port_(port) {}
  Status prepare();
  std::filesystem::path base_;
  int port_;
  std::string user_;
  TempDir work_{"kakeya-sshd"};
  ServerProcess proc_;
};

}  // namespace kakeya::testing
