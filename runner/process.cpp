#include "runner/process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstring>

#include "bridge/names.h"

extern char** environ;

namespace kakeya::runner {
namespace {

using Clock = std::chrono::steady_clock;

// Child -> parent report over the CLOEXEC pipe when the child fails before/at execve.
struct ChildFailure {
  int stage;  // kStage*
  int err;    // errno
};
constexpr int kStageChdir = 1;
constexpr int kStageExec = 2;
constexpr int kStageSetup = 3;

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

// Moves `fd` to a descriptor >= 3 (so dup2 onto 0/1/2 in the child never hits itself),
// keeping O_CLOEXEC. Returns the new fd or -1.
int lift_fd(int fd) {
  if (fd < 0 || fd >= 3) return fd;
  const int high = ::fcntl(fd, F_DUPFD_CLOEXEC, 3);
  ::close(fd);
  return high;
}

bool has_nul(std::string_view s) { return s.find('\0') != std::string_view::npos; }

std::chrono::nanoseconds to_duration(double seconds) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::duration<double>(seconds));
}

void become_subreaper_once() {
  static std::once_flag once;
  std::call_once(once, [] { ::prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); });
}

int open_pidfd(pid_t pid) {
#ifdef SYS_pidfd_open
  const long fd = ::syscall(SYS_pidfd_open, pid, 0);
  return fd < 0 ? -1 : static_cast<int>(fd);
#else
  (void)pid;
  return -1;
#endif
}

// Runs in the forked child: only async-signal-safe calls. Never returns.
[[noreturn]] void child_exec(const char* path, char* const* argv, char* const* envp, const char* cwd,
                             int devnull, int out_w, int err_w, int report_w, int max_fd) {
  auto fail = [report_w](int stage) {
    const ChildFailure f{stage, errno};
    (void)!::write(report_w, &f, sizeof f);
    ::_exit(127);
  };
  ::setpgid(0, 0);
  struct sigaction dfl;
  std::memset(&dfl, 0, sizeof dfl);
  dfl.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; ++sig) ::sigaction(sig, &dfl, nullptr);  // KILL/STOP: EINVAL
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  if (::dup2(devnull, 0) < 0 || ::dup2(out_w, 1) < 0 || ::dup2(err_w, 2) < 0) fail(kStageSetup);
  if (cwd != nullptr && ::chdir(cwd) != 0) fail(kStageChdir);
  // Close everything except 0,1,2 and the report pipe (which closes itself on exec).
  bool closed = false;
#ifdef SYS_close_range
  closed = (report_w <= 3 || ::syscall(SYS_close_range, 3u, static_cast<unsigned>(report_w - 1), 0u) == 0) &&
           ::syscall(SYS_close_range, static_cast<unsigned>(report_w + 1), ~0u, 0u) == 0;
#endif
  if (!closed) {
    for (int fd = 3; fd < max_fd; ++fd) {
      if (fd != report_w) ::close(fd);
    }
  }
  ::execve(path, argv, envp);
  fail(kStageExec);
  ::_exit(127);  // unreachable
}

}  // namespace

Result<std::unique_ptr<Process>> Process::spawn(const ProcessSpec& spec, OutputCallback on_output) {
  // ---- validate (before anything is created) ----
  if (spec.argv.empty()) return make_error(errc::kBadValue, "process argv is empty");
  const std::string& prog = spec.argv[0];
  if (prog.empty() || prog[0] != '/') {
    return make_error(errc::kBadValue, "argv[0] '" + prog +
                                       "' is not an absolute path (resolve it with resolve_program)");
  }
  for (std::size_t i = 0; i < spec.argv.size(); ++i) {
    if (has_nul(spec.argv[i])) return make_error(errc::kBadValue, "argv[" + std::to_string(i) + "] contains a NUL byte");
  }
  for (const auto& [k, v] : spec.env) {
    if (!bridge::is_env_name(k)) {
      return make_error(errc::kBadValue, "environment name '" + k + "' does not match " + std::string(bridge::kEnvNamePattern));
    }
    if (has_nul(v)) return make_error(errc::kBadValue, "environment value of " + k + " contains a NUL byte");
  }
  if (has_nul(spec.cwd.native())) return make_error(errc::kBadValue, "cwd contains a NUL byte");
  if (std::isnan(spec.timeout_s)) return make_error(errc::kBadValue, "timeout_s is NaN");
  if (!(spec.kill_grace_s >= 0) || !std::isfinite(spec.kill_grace_s)) {
    return make_error(errc::kBadValue, "kill_grace_s must be a finite number >= 0, got " +
                                       std::to_string(spec.kill_grace_s));
  }

  // ---- prepare everything the child needs; no allocation after fork ----
  std::vector<char*> argv;
  for (const std::string& a : spec.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::vector<std::string> env_storage;
  for (const auto& [k, v] : spec.env) env_storage.push_back(k + "=" + v);
  std::vector<char*> envp;
  for (std::string& e : env_storage) envp.push_back(e.data());
  envp.push_back(nullptr);
  const char* cwd = spec.cwd.empty() ? nullptr : spec.cwd.c_str();
  const long open_max = ::sysconf(_SC_OPEN_MAX);
  const int max_fd = open_max > 0 && open_max < INT_MAX ? static_cast<int>(open_max) : 65536;

  become_subreaper_once();

  std::unique_ptr<Process> p(new Process());
  int out_p[2] = {-1, -1}, err_p[2] = {-1, -1}, rep_p[2] = {-1, -1}, wake_p[2] = {-1, -1};
  int devnull = -1;
  auto cleanup = [&] {
    for (int* fd : {&out_p[0], &out_p[1], &err_p[0], &err_p[1], &rep_p[0], &rep_p[1], &wake_p[0],
                    &wake_p[1], &devnull}) {
      close_fd(*fd);
    }
  };
  if (::pipe2(out_p, O_CLOEXEC) != 0 || ::pipe2(err_p, O_CLOEXEC) != 0 ||
      ::pipe2(rep_p, O_CLOEXEC) != 0 || ::pipe2(wake_p, O_CLOEXEC | O_NONBLOCK) != 0 ||
      (devnull = ::open("/dev/null", O_RDONLY | O_CLOEXEC)) < 0) {
    const std::string why = std::strerror(errno);
    cleanup();
    return make_error(errc::kIo, "creating pipes for " + prog + ": " + why);
  }
  for (int* fd : {&out_p[0], &out_p[1], &err_p[0], &err_p[1], &rep_p[0], &rep_p[1], &devnull}) {
    *fd = lift_fd(*fd);
  }

  // Block signals across fork so no parent handler runs in the child before it resets them.
  sigset_t all, old;
  sigfillset(&all);
  ::pthread_sigmask(SIG_BLOCK, &all, &old);
  p->started_at_ = Clock::now();
  const pid_t pid = ::fork();
  if (pid == 0) {
    child_exec(argv[0], argv.data(), envp.data(), cwd, devnull, out_p[1], err_p[1], rep_p[1], max_fd);
  }
  const int fork_errno = errno;
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (pid < 0) {
    cleanup();
    return make_error(errc::kIo, "fork for " + prog + ": " + std::strerror(fork_errno));
  }
  ::setpgid(pid, pid);  // also done by the child; whichever runs first wins, errors are benign
  close_fd(out_p[1]);
  close_fd(err_p[1]);
  close_fd(rep_p[1]);
  close_fd(devnull);

  p->pid_ = pid;
  p->timeout_s_ = spec.timeout_s;
  p->grace_s_ = spec.kill_grace_s;
  p->on_output_ = std::move(on_output);

  // Wait for exec (the report pipe closes on success) or a failure report.
  ChildFailure failure{0, 0};
  std::size_t got = 0;
  while (got < sizeof failure) {
    const ssize_t n = ::read(rep_p[0], reinterpret_cast<char*>(&failure) + got, sizeof failure - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<std::size_t>(n);
  }
  close_fd(rep_p[0]);
  if (got == sizeof failure) {
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    const char* what = failure.stage == kStageExec    ? "exec "
                       : failure.stage == kStageChdir ? "chdir "
                                                      : "redirect stdio for ";
    const std::string target = failure.stage == kStageChdir ? spec.cwd.string() : prog;
    p->result_.started = false;
    p->result_.spawn_error = std::string(what) + target + ": " + std::strerror(failure.err);
    p->result_.seconds = std::chrono::duration<double>(Clock::now() - p->started_at_).count();
    close_fd(out_p[0]);
    close_fd(err_p[0]);
    close_fd(wake_p[0]);
    close_fd(wake_p[1]);
    return p;
  }

  p->result_.started = true;
  p->out_fd_ = out_p[0];
  p->err_fd_ = err_p[0];
  p->wake_r_ = wake_p[0];
  p->wake_w_ = wake_p[1];
  ::fcntl(p->out_fd_, F_SETFL, O_NONBLOCK);
  ::fcntl(p->err_fd_, F_SETFL, O_NONBLOCK);
  p->pidfd_ = open_pidfd(pid);
  if (p->pidfd_ >= 0) ::fcntl(p->pidfd_, F_SETFD, FD_CLOEXEC);
  Process* raw = p.get();
  p->io_ = std::thread([raw] { raw->io_loop(); });
  return p;
}

void Process::io_loop() {
  const bool has_deadline = timeout_s_ > 0 && std::isfinite(timeout_s_);
  const Clock::time_point deadline =
      has_deadline ? started_at_ + to_duration(timeout_s_) : Clock::time_point::max();
  const auto grace = to_duration(grace_s_);

  bool leader_done = false, term_sent = false, kill_sent = false, group_gone = false;
  Clock::time_point kill_at{}, drain_until{}, give_up_at{};
  std::array<char, 65536> buf;

  auto signal_group = [this](int sig) { ::kill(-pid_, sig); };
  auto start_stop = [&](Clock::time_point now) {
    signal_group(SIGTERM);
    signal_group(SIGCONT);  // a stopped process must run to act on SIGTERM
    term_sent = true;
    kill_at = now + grace;
  };

  for (;;) {
    const Clock::time_point now = Clock::now();

    // -- reap: the leader, then any orphaned group members re-parented to us (subreaper) --
    auto leader_exited = [&](int status) {
      leader_done = true;
      result_.seconds = std::chrono::duration<double>(now - started_at_).count();
      if (WIFEXITED(status)) result_.exit_code = WEXITSTATUS(status);
      if (WIFSIGNALED(status)) result_.term_signal = WTERMSIG(status);
      close_fd(pidfd_);
    };
    if (!leader_done) {
      int status = 0;
      const pid_t r = ::waitpid(pid_, &status, WNOHANG);
      // ECHILD: someone else reaped the leader (a foreign waitpid(-1)); its status is lost.
      if (r == pid_ || (r < 0 && errno == ECHILD)) leader_exited(status);
    }
    // The group's members, the leader among them while it is still in the group: a leader that
    // exits between the two waits is reaped here, with its status kept (dropping it once turned a
    // failed command into exit code 0).
    for (;;) {
      int status = 0;
      const pid_t r = ::waitpid(-pid_, &status, WNOHANG);
      if (r <= 0) break;
      if (r == pid_ && !leader_done) leader_exited(status);
    }
    if (leader_done && !group_gone && ::kill(-pid_, 0) != 0 && errno == ESRCH) {
      group_gone = true;
      drain_until = now + std::chrono::seconds(1);  // escaped holders of the pipes: bounded
    }

    // -- decide on signals --
    if (!term_sent) {
      if (!leader_done && cancel_requested_.load()) {
        result_.cancelled = true;
        start_stop(now);
      } else if (!leader_done && now >= deadline) {
        result_.timed_out = true;
        start_stop(now);
      } else if (leader_done && !group_gone) {
        start_stop(now);  // leftovers of a job whose leader exited
      }
    }
    if (term_sent && !kill_sent && !group_gone && now >= kill_at) {
      signal_group(SIGKILL);
      kill_sent = true;
      give_up_at = now + std::chrono::seconds(10);
    }

    // -- done? --
    const bool pipes_closed = out_fd_ < 0 && err_fd_ < 0;
    if (leader_done && group_gone && (pipes_closed || now >= drain_until)) break;
    if (kill_sent && leader_done && now >= give_up_at) break;  // e.g. EPERM members: stop trying

    // -- wait for output, exit, cancel, or the next timer --
    Clock::time_point next = Clock::time_point::max();
    if (!term_sent && !leader_done) next = std::min(next, deadline);
    if (term_sent && !kill_sent) next = std::min(next, kill_at);
    if (group_gone) next = std::min(next, drain_until);
    // Without a pidfd, or while waiting for the group to empty, poll the process table.
    const bool need_tick = (leader_done && !group_gone) || (!leader_done && pidfd_ < 0);
    if (need_tick) next = std::min(next, now + std::chrono::milliseconds(leader_done ? 5 : 20));
    int timeout_ms = -1;
    if (next != Clock::time_point::max()) {
      const auto ms = std::chrono::ceil<std::chrono::milliseconds>(next - now).count();
      timeout_ms = static_cast<int>(std::clamp<long long>(ms, 0, 60'000));
    }

    std::array<pollfd, 4> fds{};
    int nfds = 0;
    int out_idx = -1, err_idx = -1;
    if (out_fd_ >= 0) {
      out_idx = nfds;
      fds[nfds++] = {out_fd_, POLLIN, 0};
    }
    if (err_fd_ >= 0) {
      err_idx = nfds;
      fds[nfds++] = {err_fd_, POLLIN, 0};
    }
    fds[nfds++] = {wake_r_, POLLIN, 0};
    if (pidfd_ >= 0) fds[nfds++] = {pidfd_, POLLIN, 0};
    const int pr = ::poll(fds.data(), static_cast<nfds_t>(nfds), timeout_ms);
    if (pr < 0 && errno != EINTR) ::usleep(1000);
    if (pr <= 0) continue;

    auto drain = [&](int idx, int& fd, int stream) {
      if (idx < 0 || fds[idx].revents == 0) return;
      for (int reads = 0; reads < 16; ++reads) {  // bounded: a flood must not starve timers
        const ssize_t n = ::read(fd, buf.data(), buf.size());
        if (n > 0) {
          if (on_output_) on_output_(stream, std::string_view(buf.data(), static_cast<std::size_t>(n)));
          if (static_cast<std::size_t>(n) < buf.size()) return;
          continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
        close_fd(fd);  // EOF or error
        return;
      }
    };
    drain(out_idx, out_fd_, 1);
    drain(err_idx, err_fd_, 2);
    char sink[64];
    while (::read(wake_r_, sink, sizeof sink) > 0) {
    }
  }
  close_fd(out_fd_);
  close_fd(err_fd_);
  close_fd(pidfd_);
}

void Process::cancel() {
  cancel_requested_.store(true);
  if (wake_w_ >= 0) {
    const char c = 'c';
    (void)!::write(wake_w_, &c, 1);
  }
}

ProcessResult Process::wait() {
  std::lock_guard<std::mutex> lock(wait_mu_);
  if (io_.joinable()) {
    io_.join();
    close_fd(wake_r_);
    close_fd(wake_w_);
  }
  return result_;
}

Process::~Process() {
  if (io_.joinable()) {
    cancel();
    wait();
  }
}

Result<std::filesystem::path> resolve_program(const std::string& name,
                                              const std::vector<std::filesystem::path>& search_dirs) {
  if (name.empty() || name == "." || name == ".." || has_nul(name)) {
    return make_error(errc::kBadValue, "program name '" + name + "' is invalid");
  }
  auto is_executable_file = [](const std::filesystem::path& p) {
    struct stat st;
    return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(p.c_str(), X_OK) == 0;
  };
  if (name.find('/') != std::string::npos) {
    if (name[0] != '/') {
      return make_error(errc::kBadValue, "program path '" + name + "' must be absolute or a bare name");
    }
    if (!is_executable_file(name)) {
      return make_error(errc::kNotFound, "program '" + name + "' is not an executable file");
    }
    return std::filesystem::path(name);
  }
  std::string searched;
  for (const std::filesystem::path& dir : search_dirs) {
    if (!dir.is_absolute()) continue;
    searched += (searched.empty() ? "" : ", ") + dir.string();
    const std::filesystem::path candidate = dir / name;
    if (is_executable_file(candidate)) return candidate;
  }
  return make_error(errc::kNotFound, "program '" + name + "' not found in tool dirs [" + searched + "]");
}

std::filesystem::path self_exe_dir() {
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::filesystem::path() : exe.parent_path();
}

std::map<std::string, std::string> current_environment() {
  std::map<std::string, std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string_view kv(*e);
    const std::size_t eq = kv.find('=');
    if (eq == std::string_view::npos || !bridge::is_env_name(kv.substr(0, eq))) continue;
    env.emplace(std::string(kv.substr(0, eq)), std::string(kv.substr(eq + 1)));
  }
  return env;
}

std::map<std::string, std::string> build_job_environment_from(
    const std::map<std::string, std::string>& runner_env, const std::vector<std::string>& allowed_names,
    const std::map<std::string, std::string>& kakeya_vars) {
  std::map<std::string, std::string> env;
  auto copy = [&](const std::string& name) {
    if (name.rfind("KAKEYA_GIT_", 0) == 0) return;  // never the runner's git credentials
    const auto it = runner_env.find(name);
    if (it != runner_env.end()) env[name] = it->second;
  };
  env["PATH"] = "/usr/bin:/bin";
  copy("PATH");
  copy("HOME");
  copy("LANG");
  for (const std::string& name : allowed_names) {
    if (bridge::is_env_name(name)) copy(name);
  }
  for (const auto& [k, v] : kakeya_vars) {
    if (k.rfind("KAKEYA_", 0) == 0 && bridge::is_env_name(k)) env[k] = v;
  }
  return env;
}

std::map<std::string, std::string> build_job_environment(
    const std::vector<std::string>& allowed_names, const std::map<std::string, std::string>& kakeya_vars) {
  return build_job_environment_from(current_environment(), allowed_names, kakeya_vars);
}

}  // namespace kakeya::runner
