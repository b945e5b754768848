#include "tests/harness/ssh_server.h"

#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <iostream>

#include "tests/harness/ssh_keys.h"

namespace kakeya::testing {
namespace fs = std::filesystem;

std::unique_ptr<SshGitServer> SshGitServer::start(fs::path base_path) {
  std::unique_ptr<SshGitServer> s(new SshGitServer(std::move(base_path), free_tcp_port()));
  Status st = s->prepare();
  if (st.ok()) st = s->restart();
  if (!st.ok()) {
    std::cerr << "SshGitServer::start: " << st.error().str() << "\n";
    return nullptr;
  }
  return s;
}

Status SshGitServer::prepare() {
  const passwd* pw = ::getpwuid(::geteuid());
  if (pw == nullptr || pw->pw_name == nullptr) return make_error(errc::kNotFound, "no passwd entry for the current user");
  user_ = pw->pw_name;
  if (::geteuid() == 0) {
    std::error_code ec;
    if (!fs::exists("/run/sshd", ec) && ::mkdir("/run/sshd", 0755) != 0) {
      return make_error(errc::kIo, "cannot create sshd's privilege-separation directory /run/sshd");
    }
  }
  const fs::path dir = work_.path();
  for (const char* name : {"host_key", "client_key"}) {
    auto k = make_ssh_key(dir, name);
    if (!k.ok()) return k.error();
  }
  std::ofstream(dir / "authorized_keys") << first_line(dir / "client_key.pub") << "\n";
  std::ofstream(dir / "known_hosts") << "[127.0.0.1]:" << port_ << " " << first_line(dir / "host_key.pub") << "\n";
  std::ofstream conf(dir / "sshd_config");
  conf << "Port " << port_ << "\n"
       << "ListenAddress 127.0.0.1\n"
       << "HostKey " << (dir / "host_key").string() << "\n"
       << "PidFile " << (dir / "sshd.pid").string() << "\n"
       << "AuthorizedKeysFile " << (dir / "authorized_keys").string() << "\n"
       << "AllowUsers " << user_ << "\n"
       << "PermitRootLogin prohibit-password\n"
       << "PubkeyAuthentication yes\n"
       << "PasswordAuthentication no\n"
       << "KbdInteractiveAuthentication no\n"
       << "UsePAM no\n"
       << "StrictModes no\n"
       << "PrintMotd no\n"
       << "LogLevel VERBOSE\n";
  conf.close();
  fs::permissions(dir / "sshd_config", fs::perms::owner_read | fs::perms::owner_write);
  return ok_status();
}

Status SshGitServer::restart() {
  return proc_.start({"/usr/sbin/sshd", "-D", "-e", "-f", (work_.path() / "sshd_config").string()},
                     work_.path() / "sshd.log", port_);
}

std::string SshGitServer::url(const std::string& repo) const {
  return "ssh://" + user_ + "@127.0.0.1:" + std::to_string(port_) + (base_ / repo).string();
}

bridge::Credentials SshGitServer::credentials() const {
  bridge::Credentials c;
  c.ssh_private_key = client_key().string();
  c.ssh_public_key = client_key().string() + ".pub";
  c.ssh_known_hosts = known_hosts().string();
  return c;
}

void SshGitServer::stop() { proc_.stop(); }
SshGitServer::~SshGitServer() { stop(); }

}  // namespace kakeya::testing
