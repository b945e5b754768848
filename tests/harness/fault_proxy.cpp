#include "tests/harness/fault_proxy.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>

namespace kakeya::testing {

namespace {
void reset_close(int fd) {
  linger l{1, 0};  // RST instead of FIN
  ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
  ::close(fd);
}
}  // namespace

std::unique_ptr<FaultProxy> FaultProxy::start(int target_port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return nullptr;
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  socklen_t len = sizeof a;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd, 64) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    ::close(fd);
    return nullptr;
  }
  std::unique_ptr<FaultProxy> p(new FaultProxy(fd, ntohs(a.sin_port), target_port));
  p->acceptor_ = std::thread([raw = p.get()] { raw->accept_loop(); });
  return p;
}

FaultProxy::FaultProxy(int listen_fd, int port, int target_port)
    : listen_fd_(listen_fd), port_(port), target_port_(target_port) {}

FaultProxy::~FaultProxy() {
  stop_ = true;
  if (acceptor_.joinable()) acceptor_.join();
  std::vector<std::thread> w;
  {
    std::lock_guard<std::mutex> lock(mu_);
    w.swap(workers_);
  }
  for (auto& t : w) t.join();
  ::close(listen_fd_);
}

void FaultProxy::set_mode(Mode m, int delay_ms) {
  delay_ms_ = delay_ms;
  const Mode old = mode_.exchange(m);
  if (m == Mode::Refuse || m == Mode::Blackhole || old == Mode::Blackhole) ++generation_;
}

void FaultProxy::accept_loop() {
  while (!stop_) {
    pollfd p{listen_fd_, POLLIN, 0};
    if (::poll(&p, 1, 50) <= 0) continue;
    const int c = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (c < 0) continue;
    ++accepted_;
    if (mode_ == Mode::Refuse) {
      reset_close(c);
      continue;
    }
    const int gen = generation_.load();
    std::lock_guard<std::mutex> lock(mu_);
    workers_.emplace_back([this, c, gen] { serve(c, gen); });
  }
}

void FaultProxy::serve(int client, int generation) {
  auto cut = [&] { return stop_ || generation_.load() != generation; };
  if (mode_ == Mode::Blackhole) {
    char buf[4096];
    while (!cut()) {
      pollfd p{client, POLLIN, 0};
      if (::poll(&p, 1, 50) > 0 && ::read(client, buf, sizeof buf) <= 0) break;
    }
    reset_close(client);
    return;
  }
  const int up = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<uint16_t>(target_port_));
  if (up < 0 || ::connect(up, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    if (up >= 0) ::close(up);
    reset_close(client);
    return;
  }
  pollfd fds[2] = {{client, POLLIN, 0}, {up, POLLIN, 0}};
  char buf[16384];
  bool open = true;
  while (open && !cut()) {
    if (::poll(fds, 2, 50) <= 0) continue;
    for (int i = 0; i < 2 && open; ++i) {
      if ((fds[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
      const ssize_t n = ::read(fds[i].fd, buf, sizeof buf);
      if (n <= 0) {
        open = false;
        break;
      }
      if (mode_ == Mode::Delay) std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms_.load()));
      if (mode_ == Mode::Blackhole) continue;  // swallow
      const int dst = fds[1 - i].fd;
      (i == 0 ? up_bytes_ : down_bytes_) += n;
      for (ssize_t off = 0; off < n;) {
        const ssize_t w = ::send(dst, buf + off, static_cast<size_t>(n - off), MSG_NOSIGNAL);
        if (w <= 0) {
          open = false;
          break;
        }
        off += w;
      }
    }
  }
  if (cut()) {
    reset_close(client);
    reset_close(up);
  } else {
    ::close(client);
    ::close(up);
  }
}

}  // namespace kakeya::testing
