#pragma once
// Process exit codes shared by kakeya, kakeya-runner, kakeya-engine and the bench tools (0, 1 and
// 64 there; documented in README.md "Exit codes"; scripts and CI branch on them). sysexits.h values
// where one fits.
//
//   0   ok
//   1   the job or the check failed (a terminal state other than succeeded, a failed doctor
//       check, an engine command that ran and failed)
//   2   kakeya-runner: the config, catalog or credentials cannot be used (systemd does not
//       restart the runner for it: RestartPreventExitStatus)
//   64  usage: a command line that cannot be parsed or a value refused before anything ran, for
//       every command of every binary (CLI11's own 105/106 are mapped to it)
//   75  the remote could not be reached, timed out or refused the credentials: retryable once the
//       network or the credentials are fixed (EX_TEMPFAIL)
// `kakeya run`/`wait` add 2 (still running at the deadline) and 3 (never claimed), see
// client/wait_outcome.h.

#include "bridge/error_codes.h"

namespace kakeya {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitConfig = 2;
inline constexpr int kExitUsage = 64;   // EX_USAGE
inline constexpr int kExitRemote = 75;  // EX_TEMPFAIL

// Whether `code` means the remote could not be reached or refused the credentials (exit 75):
// transport, timeout, auth_failed, and the credential sources that cannot be used
// (credentials_file, credentials_not_found, credentials_conflict, bad_credentials_line).
constexpr bool is_remote_error(ErrorCode code) {
  return code == errc::kTransport || code == errc::kTimeout || code == errc::kAuthFailed ||
         code == errc::kCredentialsFile || code == errc::kCredentialsNotFound ||
         code == errc::kCredentialsConflict || code == errc::kBadCredentialsLine;
}

}  // namespace kakeya
