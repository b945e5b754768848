#pragma once
// Running a short-lived helper program to completion (ssh-keygen, git): argv only, never a shell;
// standard input from a byte string; standard output and error captured; bounded in time.
// For jobs (process groups, streaming output, cancellation) see runner/process.h instead.
//
// The child: argv[0] is looked up in PATH by the parent before fork (no allocation between fork
// and exec); the signal mask is cleared and dispositions reset to default (a runner blocks
// SIGTERM/SIGINT in its threads); it inherits the environment and the controlling terminal (so
// ssh-keygen can ask for a passphrase on a terminal, as it does for git). At `timeout_s` it gets
// SIGKILL.
#include <string>
#include <string_view>
#include <vector>

#include "bridge/result.h"

namespace kakeya::bridge {

struct ChildOutput {
  int exit_code = -1;    // WEXITSTATUS when the child exited, else -1
  int term_signal = 0;   // the signal that ended it, else 0
  std::string out, err;  // everything it wrote on stdout and stderr

  bool succeeded() const { return exit_code == 0; }
};

// Runs `argv` with `input` on its standard input. Errors: `not_found` (argv[0] not in PATH),
// `child_failed` (cannot start: pipe/fork/exec), `timeout` (killed at `timeout_s`, the message
// names the program). A non-zero exit status is NOT an error: look at ChildOutput.
Result<ChildOutput> run_child(const std::vector<std::string>& argv, std::string_view input, double timeout_s);

// "prog arg1 arg2" for messages.
std::string describe_argv(const std::vector<std::string>& argv);

}  // namespace kakeya::bridge
