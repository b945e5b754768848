#include "runner/listen_address.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include "bridge/error_codes.h"
#include "bridge/utf8.h"

namespace kakeya::runner {
namespace {

bool is_loopback_v4(const std::string& host) {
  in_addr a{};
  if (::inet_pton(AF_INET, host.c_str(), &a) != 1) return false;
  return (ntohl(a.s_addr) >> 24) == 127;
}

}  // namespace

Result<ListenAddress> parse_listen_address(std::string_view text) {
  const std::string shown = bridge::printable(text, 80);
  auto bad = [&](const std::string& why) {
    return make_error(errc::kBadValue, "metrics_listen '" + shown + "' " + why +
                                           " (e.g. 127.0.0.1:9464 or [::1]:9464; /metrics is unauthenticated, so only "
                                           "loopback addresses are accepted)");
  };
  ListenAddress a;
  std::string_view port;
  if (text.starts_with("[")) {
    const auto close = text.find("]:");
    if (close == std::string_view::npos) return bad("needs [HOST]:PORT");
    a.host = std::string(text.substr(1, close - 1));
    port = text.substr(close + 2);
  } else {
    const auto colon = text.rfind(':');
    if (colon == std::string_view::npos) return bad("needs HOST:PORT");
    a.host = std::string(text.substr(0, colon));
    port = text.substr(colon + 1);
  }
  if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string_view::npos) {
    return bad("has no port number");
  }
  a.port = std::stoi(std::string(port));
  if (a.port > 65535) return bad("has a port above 65535");
  if (a.host != "localhost" && a.host != "::1" && !is_loopback_v4(a.host)) return bad("is not a loopback address");
  return a;
}

}  // namespace kakeya::runner
