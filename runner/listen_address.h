#pragma once
// The address `metrics_listen` names (runner config): parsed here, apart from the server
// (runner/metrics_server.h), so the config reader and its fuzz target need no HTTP code.
#include <string>
#include <string_view>

#include "bridge/result.h"

namespace kakeya::runner {

struct ListenAddress {
  std::string host;  // "127.0.0.1" (any 127.0.0.0/8), "::1" or "localhost"
  int port = 0;      // 0: any free port (the bound one is reported by MetricsServer::address)
};

// Parses "HOST:PORT" or "[::1]:PORT". Errors (`bad_value`, naming the value): no port, a port
// outside 0..65535, a host that is not a loopback address (/metrics is unauthenticated).
Result<ListenAddress> parse_listen_address(std::string_view text);

}  // namespace kakeya::runner
