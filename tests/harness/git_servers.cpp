#include "tests/harness/git_servers.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

namespace kakeya::testing {
namespace {

std::vector<char*> to_argv(std::vector<std::string>& args) {
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  return argv;
}

std::string join(const std::vector<std::string>& args) {
  std::string s;
  for (const auto& a : args) s += (s.empty() ? "" : " ") + a;
  return s;
}

bool port_accepts(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return false;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  ::close(fd);
  return ok;
}

std::string file_tail(const std::filesystem::path& p, size_t max = 2000) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string s = ss.str();
  return s.size() > max ? s.substr(s.size() - max) : s;
}

Status write_file(const std::filesystem::path& p, const std::string& content) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << content;
  if (!out) return make_error(errc::kIo, "cannot write '" + p.string() + "'");
  return ok_status();
}

}  // namespace

Result<std::string> run_git(const std::vector<std::string>& args, const std::optional<std::string>& input) {
  // Standard input comes from a file, so a large input cannot block on a full pipe.
  int in_fd = -1;
  if (input) {
    char tmpl[] = "/tmp/kakeya-git-stdin-XXXXXX";
    in_fd = ::mkostemp(tmpl, O_CLOEXEC);
    if (in_fd < 0) return make_error(errc::kChildFailed, "mkostemp() failed");
    ::unlink(tmpl);
    std::size_t done = 0;
    while (done < input->size()) {
      const ssize_t n = ::write(in_fd, input->data() + done, input->size() - done);
      if (n <= 0) {
        ::close(in_fd);
        return make_error(errc::kChildFailed, "cannot write git's standard input");
      }
      done += static_cast<std::size_t>(n);
    }
    ::lseek(in_fd, 0, SEEK_SET);
  }
  std::vector<std::string> full{"git"};
  full.insert(full.end(), args.begin(), args.end());
  std::vector<char*> argv = to_argv(full);
  int out_pipe[2], err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0) return make_error(errc::kChildFailed, "pipe() failed");
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) {
    ::close(out_pipe[0]);
    ::close(out_pipe[1]);
    return make_error(errc::kChildFailed, "pipe() failed");
  }
  pid_t pid = ::fork();
  if (pid < 0) return make_error(errc::kChildFailed, "fork() failed");
  if (pid == 0) {
    int stdin_fd = in_fd >= 0 ? in_fd : ::open("/dev/null", O_RDONLY);
    if (stdin_fd >= 0) ::dup2(stdin_fd, 0);
    ::dup2(out_pipe[1], 1);
    ::dup2(err_pipe[1], 2);
    ::execvp("git", argv.data());
    ::_exit(127);
  }
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  if (in_fd >= 0) ::close(in_fd);
  std::string out, err;
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  int open_fds = 2;
  char buf[4096];
  while (open_fds > 0) {
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
      ssize_t n = ::read(fds[i].fd, buf, sizeof buf);
      if (n > 0) {
        (i == 0 ? out : err).append(buf, static_cast<size_t>(n));
      } else {
        ::close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      }
    }
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return make_error(errc::kChildFailed, "`" + join(full) + "` exited with status " +
                                        std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1) + ": " + err);
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

Result<std::string> make_bare_repo(const std::filesystem::path& root, const std::string& name) {
  const std::string bare = (root / name).string();
  KAKEYA_TRY(run_git({"init", "-q", "--bare", "-b", "main", bare}));
  KAKEYA_TRY(run_git({"-C", bare, "config", "http.receivepack", "true"}));
  KAKEYA_TRY(run_git({"-C", bare, "config", "receive.denyNonFastForwards", "true"}));
  TempDir work("kakeya-seed");
  const std::string wt = (work.path() / "wt").string();
  KAKEYA_TRY(run_git({"init", "-q", "-b", "main", wt}));
  KAKEYA_TRY(write_file(work.path() / "wt" / "README.md", "# " + name + "\n\nTest repository for the git bus.\n"));
  KAKEYA_TRY(run_git({"-C", wt, "add", "README.md"}));
  KAKEYA_TRY(run_git({"-C", wt, "-c", "user.name=Kakeya Test", "-c", "user.email=test@kakeya.invalid", "-c",
                      "commit.gpgsign=false", "commit", "-q", "-m", "initial commit"}));
  KAKEYA_TRY(run_git({"-C", wt, "push", "-q", bare, "main:refs/heads/main"}));
  return run_git({"-C", bare, "rev-parse", "refs/heads/main"});
}

ServerProcess::~ServerProcess() { stop(); }

Status ServerProcess::start(const std::vector<std::string>& argv_in, const std::filesystem::path& log, int port) {
  stop();
  std::vector<std::string> args = argv_in;
  std::vector<char*> argv = to_argv(args);
  int log_fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log_fd < 0) return make_error(errc::kServerStart, "cannot open log '" + log.string() + "'");
  pid_t pid = ::fork();
  if (pid < 0) {
    ::close(log_fd);
    return make_error(errc::kServerStart, "fork() failed");
  }
  if (pid == 0) {
    ::setpgid(0, 0);
    int devnull = ::open("/dev/null", O_RDONLY);
    if (devnull >= 0) ::dup2(devnull, 0);
    ::dup2(log_fd, 1);
    ::dup2(log_fd, 2);
    ::execvp(argv[0], argv.data());
    ::_exit(127);
  }
  ::setpgid(pid, pid);
  ::close(log_fd);
  pid_ = pid;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(15);
  while (std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return make_error(errc::kServerStart, "`" + join(argv_in) + "` exited early; log: " + file_tail(log));
    }
    if (port_accepts(port)) return ok_status();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  stop();
  return make_error(errc::kServerStart, "`" + join(argv_in) + "` did not open port " + std::to_string(port) +
                                        "; log: " + file_tail(log));
}

void ServerProcess::stop() {
  if (pid_ <= 0) return;
  ::kill(-pid_, SIGTERM);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  int status = 0;
  bool reaped = false;
  while (std::chrono::steady_clock::now() < deadline) {
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      reaped = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ::kill(-pid_, SIGKILL);  // the rest of the group (CGI / per-connection children)
  if (!reaped) ::waitpid(pid_, &status, 0);
  pid_ = -1;
}

// ---- git daemon -------------------------------------------------------------------------------

std::unique_ptr<GitDaemon> GitDaemon::start(std::filesystem::path base_path) {
  std::unique_ptr<GitDaemon> d(new GitDaemon(std::move(base_path), free_tcp_port()));
  Status s = d->restart();
  if (!s.ok()) {
    std::cerr << "GitDaemon::start: " << s.error().str() << "\n";
    return nullptr;
  }
  return d;
}

Status GitDaemon::restart() {
  const std::string base = base_.string();
  return proc_.start({"git", "daemon", "--reuseaddr", "--listen=127.0.0.1", "--port=" + std::to_string(port_),
                      "--base-path=" + base, "--export-all", "--enable=receive-pack", "--informative-errors", base},
                     work_.path() / "daemon.log", port_);
}

std::string GitDaemon::url(const std::string& repo) const {
  return "git://127.0.0.1:" + std::to_string(port_) + "/" + repo;
}

void GitDaemon::stop() { proc_.stop(); }
GitDaemon::~GitDaemon() { stop(); }

// ---- lighttpd + git http-backend --------------------------------------------------------------

std::unique_ptr<HttpGitServer> HttpGitServer::start(std::filesystem::path base_path, std::string user,
                                                    std::string password) {
  std::unique_ptr<HttpGitServer> h(new HttpGitServer(std::move(base_path), free_tcp_port()));
  Status s = h->write_config(user, password);
  if (s.ok()) s = h->restart();
  if (!s.ok()) {
    std::cerr << "HttpGitServer::start: " << s.error().str() << "\n";
    return nullptr;
  }
  return h;
}

Status HttpGitServer::write_config(const std::string& user, const std::string& password) {
  KAKEYA_ASSIGN_OR_RETURN(std::string exec_path, run_git({"--exec-path"}));
  const auto& w = work_.path();
  std::filesystem::create_directories(w / "www");
  std::filesystem::create_directories(w / "upload");
  KAKEYA_TRY(write_file(w / "users", user + ":" + password + "\n"));
  std::string conf;
  conf += "server.document-root = \"" + (w / "www").string() + "\"\n";
  conf += "server.bind = \"127.0.0.1\"\n";
  conf += "server.port = " + std::to_string(port_) + "\n";
  conf += "server.errorlog = \"" + (w / "lighttpd-error.log").string() + "\"\n";
  conf += "server.upload-dirs = ( \"" + (w / "upload").string() + "\" )\n";
  conf += "server.modules = ( \"mod_auth\", \"mod_authn_file\", \"mod_alias\", \"mod_setenv\", \"mod_cgi\" )\n";
  conf += "alias.url = ( \"/git\" => \"" + exec_path + "/git-http-backend\" )\n";
  conf += "$HTTP[\"url\"] =~ \"^/git\" {\n";
  conf += "  cgi.assign = ( \"\" => \"\" )\n";
  conf += "  setenv.add-environment = ( \"GIT_PROJECT_ROOT\" => \"" + base_.string() +
          "\", \"GIT_HTTP_EXPORT_ALL\" => \"1\" )\n";
  conf += "}\n";
  conf += "auth.backend = \"plain\"\n";
  conf += "auth.backend.plain.userfile = \"" + (w / "users").string() + "\"\n";
  conf += "auth.require = ( \"/\" => ( \"method\" => \"basic\", \"realm\" => \"kakeya-git\", "
          "\"require\" => \"valid-user\" ) )\n";
  return write_file(w / "lighttpd.conf", conf);
}

Status HttpGitServer::restart() {
  return proc_.start({"/usr/sbin/lighttpd", "-D", "-f", (work_.path() / "lighttpd.conf").string()},
                     work_.path() / "lighttpd.log", port_);
}

std::string HttpGitServer::url(const std::string& repo) const {
  return "http://127.0.0.1:" + std::to_string(port_) + "/git/" + repo;
}

void HttpGitServer::stop() { proc_.stop(); }
HttpGitServer::~HttpGitServer() { stop(); }

}  // namespace kakeya::testing
