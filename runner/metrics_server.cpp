#include "runner/metrics_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include <spdlog/spdlog.h>

#include "bridge/utf8.h"

namespace kakeya::runner {
namespace {

constexpr std::size_t kMaxRequestBytes = 8192;
constexpr int kRequestTimeoutMs = 5000;

const char* reason_phrase(int status) {
  switch (status) {
    case 200: return "OK";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 400: return "Bad Request";
    case 503: return "Service Unavailable";
    default: return "Error";
  }
}

void write_all(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    data.remove_prefix(static_cast<std::size_t>(n));
  }
}

}  // namespace

HttpResponse metrics_response(const Telemetry& telemetry, std::string_view method, std::string_view target) {
  if (method != "GET" && method != "HEAD") return {405, "text/plain; charset=utf-8", "only GET and HEAD\n"};
  const std::string_view path = target.substr(0, target.find('?'));
  if (path == "/metrics") return {200, "text/plain; version=0.0.4; charset=utf-8", telemetry.metrics_text()};
  if (path == "/healthz") {
    const Health h = telemetry.health();
    return {h.healthy ? 200 : 503, "text/plain; charset=utf-8",
            std::string(h.healthy ? "ok: " : "unhealthy: ") + h.reason + "\n"};
  }
  return {404, "text/plain; charset=utf-8", "not found: /metrics and /healthz are served\n"};
}

Result<std::unique_ptr<MetricsServer>> MetricsServer::start(const ListenAddress& address, const Telemetry& telemetry) {
  std::unique_ptr<MetricsServer> s(new MetricsServer(telemetry));
  const bool v6 = address.host == "::1";
  const std::string host = address.host == "localhost" ? "127.0.0.1" : address.host;
  const std::string where = (v6 ? "[" + host + "]" : host) + ":" + std::to_string(address.port);
  s->listen_fd_ = ::socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s->listen_fd_ < 0) return make_error(errc::kIo, "metrics_listen " + where + ": socket: " + std::strerror(errno));
  const int one = 1;
  ::setsockopt(s->listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_storage ss{};
  socklen_t len = 0;
  if (v6) {
    auto* a6 = reinterpret_cast<sockaddr_in6*>(&ss);
    a6->sin6_family = AF_INET6;
    a6->sin6_port = htons(static_cast<uint16_t>(address.port));
    ::inet_pton(AF_INET6, host.c_str(), &a6->sin6_addr);
    len = sizeof *a6;
  } else {
    auto* a4 = reinterpret_cast<sockaddr_in*>(&ss);
    a4->sin_family = AF_INET;
    a4->sin_port = htons(static_cast<uint16_t>(address.port));
    ::inet_pton(AF_INET, host.c_str(), &a4->sin_addr);
    len = sizeof *a4;
  }
  if (::bind(s->listen_fd_, reinterpret_cast<sockaddr*>(&ss), len) != 0 || ::listen(s->listen_fd_, 16) != 0) {
    const std::string why = std::strerror(errno);
    ::close(s->listen_fd_);
    s->listen_fd_ = -1;
    return make_error(errc::kIo, "metrics_listen " + where + ": cannot listen: " + why);
  }
  if (::getsockname(s->listen_fd_, reinterpret_cast<sockaddr*>(&ss), &len) == 0) {
    s->port_ = ntohs(v6 ? reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port : reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
  }
  s->address_ = (v6 ? "[" + host + "]" : host) + ":" + std::to_string(s->port_);
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC | O_NONBLOCK) != 0) {
    ::close(s->listen_fd_);
    s->listen_fd_ = -1;
    return make_error(errc::kIo, std::string("metrics server: pipe: ") + std::strerror(errno));
  }
  s->wake_r_ = pipe_fds[0];
  s->wake_w_ = pipe_fds[1];
  MetricsServer* raw = s.get();
  s->thread_ = std::thread([raw] { raw->serve(); });
  return s;
}

MetricsServer::~MetricsServer() {
  if (thread_.joinable()) {
    const char byte = 1;
    (void)!::write(wake_w_, &byte, 1);
    thread_.join();
  }
  for (int fd : {listen_fd_, wake_r_, wake_w_}) {
    if (fd >= 0) ::close(fd);
  }
}

void MetricsServer::serve() {
  while (true) {
    pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {wake_r_, POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      spdlog::error("metrics server: poll: {}", std::strerror(errno));
      return;
    }
    if (fds[1].revents != 0) return;
    if ((fds[0].revents & POLLIN) == 0) continue;
    const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    try {
      handle(fd);
    } catch (const std::exception& e) {
      spdlog::error("metrics server: {}", bridge::printable(e.what(), 256));
    }
    ::close(fd);
  }
}

void MetricsServer::handle(int fd) {
  std::string req;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kRequestTimeoutMs);
  while (req.find("\r\n\r\n") == std::string::npos && req.find("\n\n") == std::string::npos &&
         req.size() < kMaxRequestBytes) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return;
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) return;
    char buf[1024];
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) return;
    req.append(buf, static_cast<std::size_t>(n));
  }
  const std::string_view line = std::string_view(req).substr(0, req.find_first_of("\r\n"));
  const auto sp1 = line.find(' ');
  const auto sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  HttpResponse r;
  std::string_view method;
  if (sp1 == std::string_view::npos || sp2 == std::string_view::npos) {
    r = {400, "text/plain; charset=utf-8", "bad request line\n"};
  } else {
    method = line.substr(0, sp1);
    r = metrics_response(telemetry_, method, line.substr(sp1 + 1, sp2 - sp1 - 1));
  }
  std::string head = "HTTP/1.1 " + std::to_string(r.status) + " " + reason_phrase(r.status) +
                     "\r\nContent-Type: " + r.content_type + "\r\nContent-Length: " + std::to_string(r.body.size()) +
                     "\r\nConnection: close\r\n\r\n";
  write_all(fd, head);
  if (method != "HEAD") write_all(fd, r.body);
}

}  // namespace kakeya::runner
