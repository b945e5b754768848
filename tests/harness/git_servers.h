#pragma once
// Real git servers on 127.0.0.1 for integration tests: `git daemon` (git://) and lighttpd running
// `git http-backend` behind HTTP basic auth (smart HTTP). Both speak the real receive-pack, which
// compares old oids under the ref lock: what the git bus's compare-and-swap relies on.
// Every child process runs via fork/execv (argv, never a shell) in its own process group; stop()
// kills the whole group. Servers keep their port across stop()/restart() (fault tests).

#include <sys/types.h>

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bridge/result.h"
#include "tests/harness/paths.h"

namespace kakeya::testing {

// Runs `git <args...>` (PATH lookup, no shell), stdin from `input` (bytes as given) or else
// /dev/null. Returns stdout with one trailing newline stripped; error `child_failed` with the argv,
// exit status and stderr otherwise.
Result<std::string> run_git(const std::vector<std::string>& args, const std::optional<std::string>& input = std::nullopt);

// Creates bare repository `root/name` (`git init --bare -b main`) holding one commit on `main`
// (README.md, made in a temporary clone and pushed), with `http.receivepack true` and
// `receive.denyNonFastForwards true`. Returns the oid (hex) of refs/heads/main.
Result<std::string> make_bare_repo(const std::filesystem::path& root, const std::string& name);

// A process group started by the harness; killed (SIGTERM, then SIGKILL after 2 s) on stop().
class ServerProcess {
 public:
  ServerProcess() = default;
  ~ServerProcess();
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;

  // Starts argv[0] (absolute path or PATH lookup) with stdout+stderr appended to `log`, then waits
  // (up to 15 s) until 127.0.0.1:`port` accepts a TCP connection. Error `server_start` (with the
  // log's tail) if the process exits or the port never opens.
  Status start(const std::vector<std::string>& argv, const std::filesystem::path& log, int port);
  void stop();
  bool running() const { return pid_ > 0; }

 private:
  pid_t pid_ = -1;
};

// `git daemon --reuseaddr --listen=127.0.0.1 --port=P --base-path=B --export-all
//  --enable=receive-pack --informative-errors` serving the bare repositories under `base_path`.
class GitDaemon {
 public:
  // Picks a free port; nullptr (with the reason on stderr) when the daemon cannot start.
  static std::unique_ptr<GitDaemon> start(std::filesystem::path base_path);
  std::string url(const std::string& repo) const;  // git://127.0.0.1:PORT/repo
  void stop();
  Status restart();  // same port
  int port() const { return port_; }
  ~GitDaemon();

 private:
  GitDaemon(std::filesystem::path base, int port) : base_(std::move(base)), port_(port) {}
  std::filesystem::path base_;
  int port_;
  TempDir work_{"kakeya-gitd"};
  ServerProcess proc_;
};

// lighttpd (`/usr/sbin/lighttpd -D -f CONF`) with mod_cgi running `git http-backend` for every
// URL under /git/ (GIT_PROJECT_ROOT = base_path, GIT_HTTP_EXPORT_ALL), and mod_auth +
// mod_authn_file basic auth (plain user file) required for every URL. Config, user file and logs
// live in a private temp dir.
class HttpGitServer {
 public:
  static std::unique_ptr<HttpGitServer> start(std::filesystem::path base_path, std::string user,
                                              std::string password);
  std::string url(const std::string& repo) const;  // http://127.0.0.1:PORT/git/repo
  void stop();
  Status restart();  // same port
  int port() const { return port_; }
  ~HttpGitServer();

 private:
  HttpGitServer(std::filesystem::path base, int port) : base_(std::move(base)), port_(port) {}
  Status write_config(const std::string& user, const std::string& password);
  std::filesystem::path base_;
  int port_;
  TempDir work_{"kakeya-httpd"};
  ServerProcess proc_;
};

}  // namespace kakeya::testing
