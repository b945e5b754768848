#include "runner/process.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <thread>

#include "tests/harness/paths.h"

namespace kakeya::runner {
namespace {

struct Captured {
  std::mutex mu;
  std::string out, err;
  std::size_t out_bytes = 0;
  OutputCallback callback() {
    return [this](int stream, std::string_view d) {
      std::lock_guard<std::mutex> l(mu);
      if (stream == 1) {
        out_bytes += d.size();
        if (out.size() < 4096) out.append(d);
      } else {
        err.append(d);
      }
    };
  }
};

ProcessSpec spec_of(std::vector<std::string> argv, double timeout_s = 30, double grace = 5) {
  ProcessSpec s;
  s.argv = std::move(argv);
  s.env = {{"PATH", "/usr/bin:/bin"}};
  s.timeout_s = timeout_s;
  s.kill_grace_s = grace;
  return s;
}

ProcessResult run(const ProcessSpec& spec, Captured& cap) {
  auto p = Process::spawn(spec, cap.callback());
  EXPECT_TRUE(p.ok()) << p.error().str();
  if (!p.ok()) return {};
  return (*p)->wait();
}

bool group_exists(pid_t pgid) { return ::kill(-pgid, 0) == 0 || errno != ESRCH; }

TEST(Process, EchoStdoutAndExitCode) {
  Captured cap;
  const ProcessResult r = run(spec_of({"/bin/echo", "hello", "--not-a-flag"}), cap);
  EXPECT_TRUE(r.started);
  EXPECT_EQ(r.spawn_error, "");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.term_signal, 0);
  EXPECT_FALSE(r.timed_out);
  EXPECT_FALSE(r.cancelled);
  EXPECT_GT(r.seconds, 0.0);
  EXPECT_EQ(cap.out, "hello --not-a-flag\n");
}

TEST(Process, ArgumentsAreNotInterpretedByAShell) {
  Captured cap;
  run(spec_of({"/bin/echo", "$HOME", "a;b", "`id`", "*"}), cap);
  EXPECT_EQ(cap.out, "$HOME a;b `id` *\n");
}

TEST(Process, SeparatesStreamsAndReportsExitCode) {
  Captured cap;
  const ProcessResult r = run(spec_of({"/bin/sh", "-c", "echo out; echo err >&2; exit 3"}), cap);
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(cap.out, "out\n");
  EXPECT_EQ(cap.err, "err\n");
}

TEST(Process, ReportsTerminatingSignal) {
  Captured cap;
  const ProcessResult r = run(spec_of({"/bin/sh", "-c", "kill -9 $$"}), cap);
  EXPECT_EQ(r.exit_code, -1);
  EXPECT_EQ(r.term_signal, SIGKILL);
  EXPECT_FALSE(r.timed_out);
}

TEST(Process, EnvironmentIsExactlyTheSpec) {
  ::setenv("KAKEYA_TEST_PARENT_ONLY", "leak", 1);
  Captured cap;
  ProcessSpec s = spec_of({"/usr/bin/env"});
  s.env = {{"FOO", "bar baz"}, {"EMPTY", ""}};
  run(s, cap);
  ::unsetenv("KAKEYA_TEST_PARENT_ONLY");
  EXPECT_EQ(cap.out, "EMPTY=\nFOO=bar baz\n");
}

TEST(Process, RunsInCwdWithStdinFromDevNull) {
  testing::TempDir dir;
  Captured cap;
  ProcessSpec s = spec_of({"/bin/sh", "-c", "pwd; cat; echo done"});
  s.cwd = dir.path();
  const ProcessResult r = run(s, cap);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(cap.out, std::filesystem::canonical(dir.path()).string() + "\ndone\n");
}

TEST(Process, ChildInheritsNoOtherDescriptorsAndDefaultSignals) {
  const int leaked = ::fcntl(1, F_DUPFD, 100);  // deliberately without FD_CLOEXEC
  ASSERT_GE(leaked, 100);
  const auto old_pipe = ::signal(SIGPIPE, SIG_IGN);
  sigset_t block, old_mask;
  sigemptyset(&block);
  sigaddset(&block, SIGUSR1);
  ::pthread_sigmask(SIG_BLOCK, &block, &old_mask);
  // The exec'd programs inspect themselves (no shell in between that could change state).
  Captured fds, sigs;
  run(spec_of({"/bin/ls", "/proc/self/fd"}), fds);
  run(spec_of({"/bin/grep", "-E", "^Sig(Ign|Blk)", "/proc/self/status"}), sigs);
  ::pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
  ::signal(SIGPIPE, old_pipe);
  ::close(leaked);
  EXPECT_EQ(fds.out, "0\n1\n2\n3\n");  // 3 is ls's own directory handle
  EXPECT_EQ(sigs.out, "SigBlk:\t0000000000000000\nSigIgn:\t0000000000000000\n");
}

TEST(Process, ExecFailureIsReportedAsSpawnError) {
  Captured cap;
  auto p = Process::spawn(spec_of({"/nonexistent/prog", "x"}), cap.callback());
  ASSERT_TRUE(p.ok());
  const ProcessResult r = (*p)->wait();
  EXPECT_FALSE(r.started);
  EXPECT_EQ(r.spawn_error, "exec /nonexistent/prog: No such file or directory");
  EXPECT_EQ(r.exit_code, -1);
}

TEST(Process, ChdirFailureIsReportedAsSpawnError) {
  Captured cap;
  ProcessSpec s = spec_of({"/bin/echo"});
  s.cwd = "/nonexistent-dir-kakeya";
  const ProcessResult r = run(s, cap);
  EXPECT_FALSE(r.started);
  EXPECT_EQ(r.spawn_error, "chdir /nonexistent-dir-kakeya: No such file or directory");
  EXPECT_EQ(cap.out, "");
}

TEST(Process, RejectsInvalidSpecs) {
  EXPECT_EQ(Process::spawn(spec_of({}), nullptr).error().code, errc::kBadValue);
  auto rel = Process::spawn(spec_of({"echo", "x"}), nullptr);
  ASSERT_FALSE(rel.ok());
  EXPECT_NE(rel.error().message.find("'echo'"), std::string::npos);
  ProcessSpec bad_env = spec_of({"/bin/echo"});
  bad_env.env["A=B"] = "x";
  EXPECT_EQ(Process::spawn(bad_env, nullptr).error().code, errc::kBadValue);
  ProcessSpec lower_env = spec_of({"/bin/echo"});
  lower_env.env["http_proxy"] = "x";  // one env-name rule everywhere (bridge/names.h)
  auto lower = Process::spawn(lower_env, nullptr);
  ASSERT_FALSE(lower.ok());
  EXPECT_NE(lower.error().message.find("'http_proxy'"), std::string::npos) << lower.error().message;
  ProcessSpec bad_grace = spec_of({"/bin/echo"}, 1, -1);
  EXPECT_EQ(Process::spawn(bad_grace, nullptr).error().code, errc::kBadValue);
}

TEST(Process, TimeoutTerminatesTheGroup) {
  Captured cap;
  auto p = Process::spawn(spec_of({"/bin/sleep", "30"}, 0.3, 5), cap.callback());
  ASSERT_TRUE(p.ok());
  const pid_t pgid = (*p)->pgid();
  const ProcessResult r = (*p)->wait();
  EXPECT_TRUE(r.started);
  EXPECT_TRUE(r.timed_out);
  EXPECT_FALSE(r.cancelled);
  EXPECT_EQ(r.term_signal, SIGTERM);
  EXPECT_GE(r.seconds, 0.3);
  EXPECT_LT(r.seconds, 10.0);
  EXPECT_FALSE(group_exists(pgid));
}

// The job (a shell used here as the job) ignores SIGTERM and forks a grandchild that also
// ignores it; after the timeout and grace the whole group must be gone.
TEST(Process, TimeoutKillsGrandchildThatIgnoresTerm) {
  Captured cap;
  auto p = Process::spawn(
      spec_of({"/bin/sh", "-c", "trap '' TERM; /bin/sleep 60 & echo $!; wait; wait; echo never"},
              0.5, 0.5),
      cap.callback());
  ASSERT_TRUE(p.ok());
  const pid_t pgid = (*p)->pgid();
  const ProcessResult r = (*p)->wait();
  EXPECT_TRUE(r.timed_out);
  EXPECT_EQ(r.term_signal, SIGKILL);
  EXPECT_FALSE(group_exists(pgid));
  errno = 0;
  EXPECT_EQ(::kill(-pgid, 0), -1);
  EXPECT_EQ(errno, ESRCH);
  const pid_t grandchild = static_cast<pid_t>(std::atoi(cap.out.c_str()));
  ASSERT_GT(grandchild, 0) << cap.out;
  EXPECT_EQ(::kill(grandchild, 0), -1);
  EXPECT_EQ(cap.out.find("never"), std::string::npos);
}

TEST(Process, CancelFromAnotherThread) {
  Captured cap;
  auto p = Process::spawn(spec_of({"/bin/sh", "-c", "trap '' TERM; /bin/sleep 60 & wait"}, 60, 0.3),
                          cap.callback());
  ASSERT_TRUE(p.ok());
  Process& proc = **p;
  std::thread canceller([&proc] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    proc.cancel();
  });
  const ProcessResult r = proc.wait();
  canceller.join();
  EXPECT_TRUE(r.cancelled);
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.term_signal, SIGKILL);
  EXPECT_LT(r.seconds, 20.0);
  EXPECT_FALSE(group_exists(proc.pgid()));
  proc.cancel();  // after the end: no effect
  EXPECT_TRUE(proc.wait().cancelled);
}

TEST(Process, LeftoverGroupMembersAreStoppedAfterLeaderExits) {
  Captured cap;
  auto p = Process::spawn(spec_of({"/bin/sh", "-c", "/bin/sleep 60 & echo started"}, 60, 0.2),
                          cap.callback());
  ASSERT_TRUE(p.ok());
  const ProcessResult r = (*p)->wait();
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(cap.out, "started\n");
  EXPECT_FALSE(group_exists((*p)->pgid()));
}

TEST(Process, LargeOutputIsDeliveredCompletely) {
  Captured cap;
  const ProcessResult r =
      run(spec_of({"/bin/sh", "-c", "head -c 3000000 /dev/zero; echo tail >&2"}), cap);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(cap.out_bytes, 3000000u);
  EXPECT_EQ(cap.err, "tail\n");
}

TEST(Process, DestructorStopsARunningJob) {
  pid_t pgid = -1;
  {
    auto p = Process::spawn(spec_of({"/bin/sleep", "60"}, 60, 0.2), nullptr);
    ASSERT_TRUE(p.ok());
    pgid = (*p)->pgid();
    EXPECT_TRUE(group_exists(pgid));
  }
  EXPECT_FALSE(group_exists(pgid));
}

TEST(ResolveProgram, SearchesOnlyTheGivenDirs) {
  testing::TempDir dir;
  const auto plain = dir.path() / "tool";
  std::ofstream(plain) << "#!/bin/sh\n";  // not executable: skipped
  auto r = resolve_program("sh", {"relative/dir", dir.path(), "/nonexistent", "/bin"});
  ASSERT_TRUE(r.ok()) << r.error().str();
  EXPECT_EQ(*r, std::filesystem::path("/bin/sh"));
  auto missing = resolve_program("tool", {dir.path(), "relative"});
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code, errc::kNotFound);
  EXPECT_NE(missing.error().message.find(dir.path().string()), std::string::npos);
  EXPECT_EQ(missing.error().message.find("relative"), std::string::npos);
  std::filesystem::permissions(plain, std::filesystem::perms::owner_exec,
                               std::filesystem::perm_options::add);
  EXPECT_EQ(*resolve_program("tool", {dir.path(), "/bin"}), plain);
  EXPECT_EQ(*resolve_program("/bin/sh", {}), std::filesystem::path("/bin/sh"));
  EXPECT_EQ(resolve_program("bin/sh", {"/"}).error().code, errc::kBadValue);
  EXPECT_EQ(resolve_program("", {"/bin"}).error().code, errc::kBadValue);
  EXPECT_EQ(resolve_program("..", {"/bin"}).error().code, errc::kBadValue);
  EXPECT_EQ(resolve_program("/nonexistent/x", {}).error().code, errc::kNotFound);
}

TEST(JobEnvironment, OnlyBaseAllowedAndKakeyaVars) {
  const std::map<std::string, std::string> runner_env = {
      {"PATH", "/opt/bin:/usr/bin"}, {"HOME", "/home/runner"}, {"LANG", "C.UTF-8"},
      {"HF_TOKEN", "hf_x"},          {"AWS_SECRET", "nope"},   {"KAKEYA_GIT_TOKEN", "ghp_secret"},
      {"KAKEYA_OTHER", "runner-side"}};
  const auto env = build_job_environment_from(
      runner_env, {"HF_TOKEN", "KAKEYA_GIT_TOKEN", "MISSING", "BAD=NAME"},
      {{"KAKEYA_OUT", "/out"}, {"KAKEYA_JOB", "j1"}, {"NOT_KAKEYA", "x"}});
  const std::map<std::string, std::string> want = {
      {"PATH", "/opt/bin:/usr/bin"}, {"HOME", "/home/runner"}, {"LANG", "C.UTF-8"},
      {"HF_TOKEN", "hf_x"},          {"KAKEYA_OUT", "/out"},   {"KAKEYA_JOB", "j1"}};
  EXPECT_EQ(env, want);
}

TEST(JobEnvironment, CurrentEnvironmentKeepsOnlyPortableNames) {
  ::setenv("kakeya_test_lower", "x", 1);
  ::setenv("KAKEYA_TEST_UPPER", "y", 1);
  const auto env = current_environment();
  ::unsetenv("kakeya_test_lower");
  ::unsetenv("KAKEYA_TEST_UPPER");
  EXPECT_EQ(env.count("kakeya_test_lower"), 0u);
  EXPECT_EQ(env.at("KAKEYA_TEST_UPPER"), "y");
}

TEST(JobEnvironment, DefaultsPath) {
  const auto env = build_job_environment_from({}, {}, {});
  const std::map<std::string, std::string> want = {{"PATH", "/usr/bin:/bin"}};
  EXPECT_EQ(env, want);
}

TEST(JobEnvironment, GitTokenInRunnerEnvironmentNeverReachesTheJob) {
  ::setenv("KAKEYA_GIT_TOKEN", "ghp_do_not_leak", 1);
  ::setenv("KAKEYA_TEST_ALLOWED", "visible", 1);
  const auto env = build_job_environment({"KAKEYA_GIT_TOKEN", "KAKEYA_TEST_ALLOWED"}, {});
  EXPECT_EQ(env.count("KAKEYA_GIT_TOKEN"), 0u);
  EXPECT_EQ(env.at("KAKEYA_TEST_ALLOWED"), "visible");
  Captured cap;
  ProcessSpec s = spec_of({"/usr/bin/env"});
  s.env = env;
  run(s, cap);
  EXPECT_EQ(cap.out.find("ghp_do_not_leak"), std::string::npos);
  EXPECT_NE(cap.out.find("KAKEYA_TEST_ALLOWED=visible\n"), std::string::npos);
  // Only an explicit value gets through.
  const auto explicit_env = build_job_environment({}, {{"KAKEYA_GIT_TOKEN", "given"}});
  EXPECT_EQ(explicit_env.at("KAKEYA_GIT_TOKEN"), "given");
  ::unsetenv("KAKEYA_GIT_TOKEN");
  ::unsetenv("KAKEYA_TEST_ALLOWED");
}

}  // namespace
}  // namespace kakeya::runner
