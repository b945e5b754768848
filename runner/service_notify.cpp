#include "runner/service_notify.h"

#include <cstdint>
#include <cstdlib>

#include <spdlog/spdlog.h>

#ifdef KAKEYA_HAVE_LIBSYSTEMD
#include <systemd/sd-daemon.h>
#endif

namespace kakeya::runner {

ServiceNotifier::ServiceNotifier() {
#ifdef KAKEYA_HAVE_LIBSYSTEMD
  const char* socket = std::getenv("NOTIFY_SOCKET");
  active_ = socket != nullptr && *socket != '\0';
  uint64_t usec = 0;
  // 0: keep WATCHDOG_* in the environment (jobs never see it: their environment is an allow-list).
  if (active_ && sd_watchdog_enabled(0, &usec) > 0 && usec > 0) watchdog_ = std::chrono::microseconds(usec);
#endif
}

void ServiceNotifier::send(const std::string& state) {
  if (!active_) return;
#ifdef KAKEYA_HAVE_LIBSYSTEMD
  if (const int rc = sd_notify(0, state.c_str()); rc < 0) {
    spdlog::debug("sd_notify failed: {}", rc);
  }
#endif
}

void ServiceNotifier::ready(const std::string& line) {
  if (ready_sent_) return;
  ready_sent_ = true;
  last_status_ = line;
  send("READY=1\nSTATUS=" + line);
}

void ServiceNotifier::status(const std::string& line) {
  if (line == last_status_) return;
  last_status_ = line;
  send("STATUS=" + line);
}

void ServiceNotifier::watchdog() {
  if (!watchdog_) return;
  const auto now = std::chrono::steady_clock::now();
  if (last_watchdog_ && now - *last_watchdog_ < *watchdog_ / 2) return;
  last_watchdog_ = now;
  send("WATCHDOG=1");
}

void ServiceNotifier::stopping(const std::string& line, double stop_within_s) {
  const auto now = std::chrono::steady_clock::now();
  // The extension counts from the message: re-sent every 10 s while draining.
  const bool extend = !last_extend_ || now - *last_extend_ >= std::chrono::seconds(10);
  std::string msg;
  if (!stopping_sent_) msg += "STOPPING=1\n";
  if (line != last_status_) msg += "STATUS=" + line + "\n";
  if (extend) {
    msg += "EXTEND_TIMEOUT_USEC=" + std::to_string(static_cast<uint64_t>(stop_within_s * 1e6)) + "\n";
    last_extend_ = now;
  }
  stopping_sent_ = true;
  last_status_ = line;
  if (!msg.empty()) send(msg);
}

}  // namespace kakeya::runner
