#pragma once
// The runner's observation endpoint: a small HTTP/1.1 server on an operator-chosen loopback
// address (config `metrics_listen`, off by default) with two paths:
//   GET /metrics   200, Prometheus text format 0.0.4 (Telemetry::metrics_text)
//   GET /healthz   200 "ok: <reason>" or 503 "unhealthy: <reason>" (Telemetry::health)
// anything else 404; methods other than GET/HEAD 405. One connection at a time, each closed after
// its response (Connection: close); a request must arrive within 5 s and fit in 8 KiB. There is no
// authentication, which is why only loopback addresses are accepted: expose it further through a
// proxy or an SSH tunnel.
#include <atomic>
#include <memory>
#include <string>
#include <string_view>
#include <thread>

#include "bridge/result.h"
#include "runner/listen_address.h"
#include "runner/telemetry.h"

namespace kakeya::runner {

class MetricsServer {
 public:
  // Binds and starts serving on its own thread. Errors: `bad_value` (see parse_listen_address),
  // `io` (socket/bind/listen failed: the message names the address and errno's text).
  // REQUIRES: `telemetry` outlives the server.
  static Result<std::unique_ptr<MetricsServer>> start(const ListenAddress& address, const Telemetry& telemetry);
  ~MetricsServer();  // stops the thread and closes the socket
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  // "127.0.0.1:9464" / "[::1]:9464" with the bound port.
  const std::string& address() const { return address_; }
  int port() const { return port_; }

 private:
  MetricsServer(const Telemetry& telemetry) : telemetry_(telemetry) {}
  void serve();
  void handle(int fd);

  const Telemetry& telemetry_;
  int listen_fd_ = -1;
  int wake_r_ = -1, wake_w_ = -1;
  int port_ = 0;
  std::string address_;
  std::thread thread_;
};

// The response for a request line `method` + `target` (exposed for tests): status code,
// content type and body.
struct HttpResponse {
  int status = 200;
  std::string content_type;
  std::string body;
};
HttpResponse metrics_response(const Telemetry& telemetry, std::string_view method, std::string_view target);

}  // namespace kakeya::runner
