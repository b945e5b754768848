#pragma once
// Readiness, liveness and status for the service manager (systemd `Type=notify`, sd_notify(3)
// through libsystemd). Without NOTIFY_SOCKET in the environment (not started by systemd, or a
// build without libsystemd) every call is a no-op.
//
// What the runner sends (deploy/kakeya-runner.service):
//   READY=1          once, after the first poll that reached the remote (`ready`)
//   STATUS=<line>    a one-line summary ("serving: 1 running, 0 spooled, last poll 2s ago"),
//                    whenever it changes (`status`)
//   WATCHDOG=1       from the agent loop (`watchdog`), at most every half WatchdogSec; when the
//                    loop stops calling, systemd kills and restarts the runner after WatchdogSec
//   STOPPING=1       when draining starts (`stopping`), with EXTEND_TIMEOUT_USEC set to the
//                    drain grace plus kill grace plus a minute to publish, so systemd's stop
//                    timeout always covers the drain (TimeoutStopSec in the unit matches the
//                    defaults; the extension follows the config when it differs)
// REQUIRES: external synchronization (the daemon's loop thread only).
#include <chrono>
#include <optional>
#include <string>

namespace kakeya::runner {

class ServiceNotifier {
 public:
  // Reads NOTIFY_SOCKET, WATCHDOG_USEC and WATCHDOG_PID (sd_watchdog_enabled).
  ServiceNotifier();

  // True when a service manager listens (NOTIFY_SOCKET set and libsystemd built in).
  bool active() const { return active_; }
  // The watchdog interval systemd asked for (WatchdogSec), if any.
  std::optional<std::chrono::microseconds> watchdog_interval() const { return watchdog_; }

  // READY=1 with STATUS=`line`; only the first call sends.
  void ready(const std::string& line);
  // STATUS=`line` when it differs from the last one sent.
  void status(const std::string& line);
  // WATCHDOG=1 when half the interval has passed since the last one (or none was sent).
  void watchdog();
  // STOPPING=1 (first call), STATUS=`line` (when changed) and EXTEND_TIMEOUT_USEC: the stop may
  // take `stop_within_s` more seconds from now. The drain loop calls it while jobs run; the
  // extension is re-sent at most every 10 s, with the caller's remaining budget.
  void stopping(const std::string& line, double stop_within_s);

 private:
  void send(const std::string& state);

  bool active_ = false;
  bool ready_sent_ = false;
  bool stopping_sent_ = false;
  std::string last_status_;
  std::optional<std::chrono::microseconds> watchdog_;
  std::optional<std::chrono::steady_clock::time_point> last_watchdog_, last_extend_;
};

}  // namespace kakeya::runner
