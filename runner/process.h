#pragma once
// Child processes for jobs: execve-style spawning (never a shell), one process group per job,
// output through pipes, timeout and cancellation enforced on the whole group.
//
// Lifecycle ("what happens on SIGTERM" in one place):
//   spawn   fork(); the child calls setpgid(0,0), resets signal dispositions and mask,
//           takes stdin from /dev/null and stdout/stderr from two pipes, chdir()s to
//           spec.cwd, closes every other fd, execve()s argv[0] with exactly spec.env.
//           An exec (or chdir) failure travels back over a CLOEXEC pipe and becomes
//           ProcessResult::spawn_error, e.g. "exec /x/y: No such file or directory".
//   running an I/O thread poll()s the pipes and calls on_output(1|2, bytes).
//   stop    at the deadline (timeout_s after spawn) or on cancel(): SIGTERM to the group
//           (kill(-pgid)), then after kill_grace_s SIGKILL to the group.
//   exit    when the leader exits by itself, surviving group members get the same
//           SIGTERM/grace/SIGKILL treatment. wait() returns only once the group is empty
//           (kill(-pgid, 0) fails with ESRCH) and the pipes are drained.
// The calling process is made a child subreaper (Linux PR_SET_CHILD_SUBREAPER) on the first
// spawn so that orphaned job processes are re-parented to it and reaped here (otherwise they
// would stay zombies, and members of the group, under an init that does not reap).
// Limits: a process that leaves the group (setsid/setpgid) escapes group signals; use a
// cgroup or a container for hard isolation.

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "bridge/result.h"

namespace kakeya::runner {

struct ProcessSpec {
  std::vector<std::string> argv;            // argv[0] must be an absolute path (resolve_program)
  std::map<std::string, std::string> env;   // the COMPLETE environment of the child
  std::filesystem::path cwd;                // empty: inherit the runner's working directory
  double timeout_s = 0;                     // seconds from spawn; <= 0 or inf: no deadline
  double kill_grace_s = 5;                  // seconds between SIGTERM and SIGKILL; >= 0
};

struct ProcessResult {
  int exit_code = -1;      // WEXITSTATUS when the leader exited normally, else -1
  int term_signal = 0;     // WTERMSIG when the leader was killed by a signal
  bool timed_out = false;  // the deadline passed and the group was stopped
  bool cancelled = false;  // cancel() stopped the group
  double seconds = 0;      // spawn -> leader reaped, steady clock
  bool started = false;    // execve succeeded
  std::string spawn_error; // non-empty iff !started
};

// Receives output chunks: stream 1 = stdout, 2 = stderr. Called from the process's I/O
// thread (one thread per process; never concurrently for one process). Must not throw.
using OutputCallback = std::function<void(int stream, std::string_view data)>;

class Process {
 public:
  // Validates the spec and starts the child. Errors (nothing was started): "bad_value"
  // (empty argv, relative argv[0], NUL bytes, an env name that is not bridge/names.h
  // is_env_name, bad timeout/grace), "io" (pipe/fork failed). An exec failure is NOT an
  // error here: the returned Process is already finished and wait() reports started = false
  // with spawn_error.
  static Result<std::unique_ptr<Process>> spawn(const ProcessSpec& spec, OutputCallback on_output);

  // Stops a running job if it has not finished yet: cancel(), then wait().
  ~Process();
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;

  // Requests SIGTERM to the group, grace, SIGKILL. Thread-safe, non-blocking, idempotent; a
  // no-op once the leader has exited.
  void cancel();

  // Blocks until the leader is reaped, the group is empty and output is drained; returns the
  // result (the same result on every call). Thread-safe.
  ProcessResult wait();

  pid_t pgid() const { return pid_; }  // the leader's pid; also the process group id
  pid_t pid() const { return pid_; }

 private:
  Process() = default;
  void io_loop();

  pid_t pid_ = -1;
  int out_fd_ = -1, err_fd_ = -1;   // read ends of the child's stdout/stderr
  int wake_r_ = -1, wake_w_ = -1;   // self-pipe: cancel() wakes the I/O thread
  int pidfd_ = -1;                  // pidfd of the leader when the kernel has pidfd_open
  double timeout_s_ = 0, grace_s_ = 0;
  std::chrono::steady_clock::time_point started_at_;
  OutputCallback on_output_;
  std::atomic<bool> cancel_requested_{false};
  std::thread io_;
  std::mutex wait_mu_;
  ProcessResult result_;
};

// Finds a program for argv[0]. A name containing '/' must be absolute and executable and is
// returned as is. Otherwise the first `search_dirs` entry (absolute dirs only; relative ones
// are skipped) holding an executable regular file `name` wins. The runner's own PATH is never
// consulted. Errors: "bad_value" (empty, ".", "..", relative path), "not_found" (message lists
// the dirs searched).
Result<std::filesystem::path> resolve_program(const std::string& name,
                                              const std::vector<std::filesystem::path>& search_dirs);

// The directory of the running executable (/proc/self/exe), searched after tool_dirs for the
// engine; empty when unreadable.
std::filesystem::path self_exe_dir();

// The runner's environment (environ) as a map, without the names that are not is_env_name
// (bridge/names.h): lower-case names such as http_proxy and exported shell functions are never
// passed on.
std::map<std::string, std::string> current_environment();

// The complete environment of a job. Contains only:
//   PATH (runner's, or "/usr/bin:/bin" when unset), HOME and LANG (when set in the runner),
//   every `allowed_names` entry present in the runner's environment (the preset's declared
//   env names), and every `kakeya_vars` entry whose name starts with "KAKEYA_" (these win).
// Names starting with "KAKEYA_GIT_" are NEVER copied from the runner's environment, even when
// listed in allowed_names: the runner's git credentials must not reach jobs. (A caller can
// still pass such a name explicitly in kakeya_vars; the runner must not do that with its
// token.) kakeya_vars entries without the KAKEYA_ prefix are ignored.
std::map<std::string, std::string> build_job_environment(
    const std::vector<std::string>& allowed_names,
    const std::map<std::string, std::string>& kakeya_vars);

// Same, from an explicit runner environment (testable without touching environ).
std::map<std::string, std::string> build_job_environment_from(
    const std::map<std::string, std::string>& runner_env,
    const std::vector<std::string>& allowed_names,
    const std::map<std::string, std::string>& kakeya_vars);

}  // namespace kakeya::runner
