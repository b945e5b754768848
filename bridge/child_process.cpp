#include "bridge/child_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>

extern char** environ;

namespace kakeya::bridge {
namespace {

// argv[0] itself when it holds a '/', else the first executable PATH entry (PATH unset: the
// usual system directories).
Result<std::string> find_program(const std::string& name) {
  if (name.find('/') != std::string::npos) return name;
  const char* env = std::getenv("PATH");
  const std::string path = env != nullptr && *env != '\0' ? env : "/usr/local/bin:/usr/bin:/bin";
  std::size_t start = 0;
  while (start <= path.size()) {
    const std::size_t colon = std::min(path.find(':', start), path.size());
    const std::string dir = colon > start ? path.substr(start, colon - start) : ".";
    const std::string candidate = dir + "/" + name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    start = colon + 1;
  }
  return make_error(errc::kNotFound, "program '" + name + "' is not in PATH (" + path + ")");
}

// Standard input for the child: an anonymous in-memory file holding `input` (no pipe to fill,
// no SIGPIPE when the child exits without reading).
Result<int> input_fd(std::string_view input) {
  const int fd = ::memfd_create("kakeya-child-stdin", MFD_CLOEXEC);
  if (fd < 0) return make_error(errc::kChildFailed, std::string("memfd_create: ") + std::strerror(errno));
  std::size_t done = 0;
  while (done < input.size()) {
    const ssize_t n = ::write(fd, input.data() + done, input.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = errno;
      ::close(fd);
      return make_error(errc::kChildFailed, std::string("writing the child's input: ") + std::strerror(err));
    }
    done += static_cast<std::size_t>(n);
  }
  ::lseek(fd, 0, SEEK_SET);
  return fd;
}

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

}  // namespace

std::string describe_argv(const std::vector<std::string>& argv) {
  std::string s;
  for (const auto& a : argv) s += (s.empty() ? "" : " ") + a;
  return s;
}

Result<ChildOutput> run_child(const std::vector<std::string>& argv, std::string_view input, double timeout_s) {
  if (argv.empty()) return make_error(errc::kBadValue, "run_child: empty argv");
  KAKEYA_ASSIGN_OR_RETURN(std::string program, find_program(argv[0]));
  KAKEYA_ASSIGN_OR_RETURN(int in_fd, input_fd(input));
  int out_pipe[2] = {-1, -1}, err_pipe[2] = {-1, -1}, exec_pipe[2] = {-1, -1};
  if (::pipe2(out_pipe, O_CLOEXEC) != 0 || ::pipe2(err_pipe, O_CLOEXEC) != 0 || ::pipe2(exec_pipe, O_CLOEXEC) != 0) {
    const int err = errno;
    for (int* fd : {&in_fd, &out_pipe[0], &out_pipe[1], &err_pipe[0], &err_pipe[1], &exec_pipe[0], &exec_pipe[1]}) {
      close_fd(*fd);
    }
    return make_error(errc::kChildFailed, std::string("pipe: ") + std::strerror(err));
  }
  std::vector<char*> cargv;
  std::vector<std::string> args = argv;
  for (auto& a : args) cargv.push_back(a.data());
  cargv.push_back(nullptr);

  const pid_t pid = ::fork();
  if (pid == 0) {
    // Child: async-signal-safe calls only.
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    for (int sig = 1; sig < NSIG; ++sig) ::signal(sig, SIG_DFL);
    ::dup2(in_fd, 0);
    ::dup2(out_pipe[1], 1);
    ::dup2(err_pipe[1], 2);
    ::execve(program.c_str(), cargv.data(), environ);
    const int err = errno;
    (void)!::write(exec_pipe[1], &err, sizeof err);
    ::_exit(127);
  }
  const int fork_errno = errno;
  close_fd(in_fd);
  close_fd(out_pipe[1]);
  close_fd(err_pipe[1]);
  close_fd(exec_pipe[1]);
  if (pid < 0) {
    for (int* fd : {&out_pipe[0], &err_pipe[0], &exec_pipe[0]}) close_fd(*fd);
    return make_error(errc::kChildFailed, "fork for " + argv[0] + ": " + std::strerror(fork_errno));
  }

  ChildOutput result;
  using clock = std::chrono::steady_clock;
  const auto deadline = clock::now() + std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(timeout_s));
  bool timed_out = false;
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  std::string* sinks[2] = {&result.out, &result.err};
  int open_fds = 2;
  char buf[8192];
  while (open_fds > 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock::now()).count();
    if (left <= 0) {
      timed_out = true;
      ::kill(pid, SIGKILL);
      break;
    }
    const int rc = ::poll(fds, 2, static_cast<int>(std::min<long long>(left, 1000)));
    if (rc < 0 && errno != EINTR) break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
      const ssize_t n = ::read(fds[i].fd, buf, sizeof buf);
      if (n > 0) {
        sinks[i]->append(buf, static_cast<std::size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        close_fd(fds[i].fd);
        --open_fds;
      }
    }
  }
  for (auto& p : fds) close_fd(p.fd);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  int exec_errno = 0;
  const bool exec_failed = ::read(exec_pipe[0], &exec_errno, sizeof exec_errno) == sizeof exec_errno;
  close_fd(exec_pipe[0]);
  if (exec_failed) return make_error(errc::kChildFailed, "exec " + program + ": " + std::strerror(exec_errno));
  if (timed_out) {
    return make_error(errc::kTimeout, "`" + describe_argv(argv) + "` did not finish within " +
                                          std::to_string(static_cast<int>(timeout_s)) + " s and was killed");
  }
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) result.term_signal = WTERMSIG(status);
  return result;
}

}  // namespace kakeya::bridge
