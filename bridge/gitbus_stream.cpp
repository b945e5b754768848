#include "bridge/gitbus_stream.h"

#include <fcntl.h>
#include <git2.h>
#include <git2/sys/stream.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <cstring>
#include <mutex>
#include <string>

namespace kakeya::bridge {
namespace {

using clock_type = std::chrono::steady_clock;

struct ThreadDeadline {
  bool set = false;
  clock_type::time_point at;
  std::atomic<bool>* expired = nullptr;
};
thread_local ThreadDeadline t_deadline;

clock_type::time_point deadline_now() {
  return t_deadline.set ? t_deadline.at : clock_type::now() + std::chrono::seconds(kDefaultNetDeadlineS);
}

bool aborted() { return t_deadline.expired != nullptr && t_deadline.expired->load(); }

int fail_deadline(const char* what) {
  if (t_deadline.expired != nullptr) t_deadline.expired->store(true);
  const std::string msg = std::string("kakeya git bus: network deadline passed while ") + what;
  git_error_set_str(GIT_ERROR_NET, msg.c_str());
  return -1;
}

int fail_errno(const std::string& what, int err) {
  const std::string msg = "kakeya git bus: " + what + ": " + std::strerror(err);
  git_error_set_str(GIT_ERROR_NET, msg.c_str());
  return -1;
}

// Waits for `events` on fd until the thread's deadline. 1 = ready, -1 = deadline/abort/error.
int wait_fd(int fd, short events, clock_type::time_point until, const char* what) {
  for (;;) {
    if (aborted()) return fail_deadline(what);
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - clock_type::now()).count();
    if (left <= 0) return fail_deadline(what);
    pollfd p{fd, events, 0};
    const int rc = ::poll(&p, 1, static_cast<int>(std::min<long long>(left, 100)));
    if (rc > 0) return 1;
    if (rc < 0 && errno != EINTR) return fail_errno(std::string("poll while ") + what, errno);
  }
}

// Standard layout (git_stream first), so git_stream* <-> DeadlineStream* casts are valid. The
// first four members mirror libgit2's private git_socket_stream {parent, host, port, s}: its SSH
// transport takes the socket for libssh2 from `s` of whatever GIT_STREAM_STANDARD made, so the
// fd must sit where `s` does (libssh2 then does its own reads and writes on it).
struct DeadlineStream {
  git_stream parent;
  char* host;  // -> host_buf
  char* port;  // -> port_buf
  int fd;      // git_socket_stream::s
  char host_buf[256];
  char port_buf[32];
};

int s_connect(git_stream* stream) {
  auto* s = reinterpret_cast<DeadlineStream*>(stream);
  const auto until = deadline_now();
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (int rc = ::getaddrinfo(s->host, s->port, &hints, &res); rc != 0) {
    const std::string msg = "kakeya git bus: cannot resolve " + std::string(s->host) + ": " + gai_strerror(rc);
    git_error_set_str(GIT_ERROR_NET, msg.c_str());
    return -1;
  }
  int last_err = ECONNREFUSED;
  for (addrinfo* a = res; a != nullptr; a = a->ai_next) {
    const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) {
      last_err = errno;
      continue;
    }
    if (::connect(fd, a->ai_addr, a->ai_addrlen) == 0) {
      s->fd = fd;
      break;
    }
    if (errno != EINPROGRESS) {
      last_err = errno;
      ::close(fd);
      continue;
    }
    if (wait_fd(fd, POLLOUT, until, "connecting") < 0) {
      ::close(fd);
      ::freeaddrinfo(res);
      return -1;
    }
    int soerr = 0;
    socklen_t len = sizeof soerr;
    ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len);
    if (soerr == 0) {
      s->fd = fd;
      break;
    }
    last_err = soerr;
    ::close(fd);
  }
  ::freeaddrinfo(res);
  if (s->fd < 0) return fail_errno("failed to connect to " + std::string(s->host) + ":" + s->port, last_err);
  return 0;
}

ssize_t s_read(git_stream* stream, void* data, size_t len) {
  auto* s = reinterpret_cast<DeadlineStream*>(stream);
  const auto until = deadline_now();
  for (;;) {
    const ssize_t n = ::recv(s->fd, data, len, 0);
    if (n >= 0) return n;
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) return fail_errno("recv", errno);
    if (wait_fd(s->fd, POLLIN, until, "reading from the server") < 0) return -1;
  }
}

ssize_t s_write(git_stream* stream, const char* data, size_t len, int /*flags*/) {
  auto* s = reinterpret_cast<DeadlineStream*>(stream);
  const auto until = deadline_now();
  for (;;) {
    const ssize_t n = ::send(s->fd, data, len, MSG_NOSIGNAL);
    if (n >= 0) return n;
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) return fail_errno("send", errno);
    if (wait_fd(s->fd, POLLOUT, until, "writing to the server") < 0) return -1;
  }
}

int s_close(git_stream* stream) {
  auto* s = reinterpret_cast<DeadlineStream*>(stream);
  if (s->fd >= 0) ::close(s->fd);
  s->fd = -1;
  return 0;
}

void s_free(git_stream* stream) {
  auto* s = reinterpret_cast<DeadlineStream*>(stream);
  s_close(stream);
  delete s;
}

int s_init(git_stream** out, const char* host, const char* port) {
  if (host == nullptr || port == nullptr || std::strlen(host) >= sizeof(DeadlineStream::host_buf) ||
      std::strlen(port) >= sizeof(DeadlineStream::port_buf)) {
    git_error_set_str(GIT_ERROR_NET, "kakeya git bus: host or port name too long");
    return -1;
  }
  auto* s = new DeadlineStream{};
  s->fd = -1;
  std::strcpy(s->host_buf, host);
  std::strcpy(s->port_buf, port);
  s->host = s->host_buf;
  s->port = s->port_buf;
  s->parent.version = GIT_STREAM_VERSION;
  s->parent.encrypted = 0;
  s->parent.proxy_support = 0;
  s->parent.connect = s_connect;
  s->parent.read = s_read;
  s->parent.write = s_write;
  s->parent.close = s_close;
  s->parent.free = s_free;
  *out = &s->parent;
  return 0;
}

}  // namespace

void install_deadline_stream() {
  static std::once_flag once;
  std::call_once(once, [] {
    git_stream_registration reg{};
    reg.version = GIT_STREAM_VERSION;
    reg.init = s_init;
    reg.wrap = nullptr;
    git_stream_register(GIT_STREAM_STANDARD, &reg);
  });
}

ScopedNetDeadline::ScopedNetDeadline(clock_type::time_point at, std::atomic<bool>* expired) {
  t_deadline = ThreadDeadline{true, at, expired};
}

ScopedNetDeadline::~ScopedNetDeadline() { t_deadline = ThreadDeadline{}; }

}  // namespace kakeya::bridge
