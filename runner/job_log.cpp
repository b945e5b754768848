#include "runner/job_log.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <mutex>
#include <utility>

namespace kakeya::runner {

std::string truncation_marker(std::size_t cap_bytes) {
  return "[kakeya: log truncated at " + std::to_string(cap_bytes) + " bytes]\n";
}

struct JobLog::State {
  std::filesystem::path path;
  std::size_t cap = 0;
  int fd = -1;
  mutable std::mutex mu;
  // Everything below is guarded by mu.
  std::size_t written = 0;
  std::size_t dropped = 0;
  bool truncated = false;
  bool closed = false;
  char last_byte = '\n';
  std::string tail;
  std::optional<Error> error;
  std::unique_ptr<LogFilter> filter;
  JobLog::Tee tee;

  // REQUIRES: mu held.
  void put_raw(std::string_view data) {
    if (data.empty()) return;
    tail.append(data);
    if (tail.size() > 2 * kTailKeepBytes) tail.erase(0, tail.size() - kTailKeepBytes);
    last_byte = data.back();
    if (error.has_value() || fd < 0) return;
    while (!data.empty()) {
      const ssize_t n = ::write(fd, data.data(), data.size());
      if (n < 0) {
        if (errno == EINTR) continue;
        error = make_error(errc::kIo, "write " + path.string() + ": " + std::strerror(errno));
        return;
      }
      data.remove_prefix(static_cast<std::size_t>(n));
    }
  }

  // Redacted, well-formed bytes (whole characters) arrive here. REQUIRES: mu held.
  void sink(std::string_view data) {
    if (tee) tee(data);
    if (truncated) {
      dropped += data.size();
      return;
    }
    const std::size_t room = cap - written;
    // Cut on a character boundary: the file stays well-formed UTF-8.
    const std::size_t take = bridge::utf8_head(data, room).size();
    put_raw(data.substr(0, take));
    written += take;
    if (take < data.size()) {
      truncated = true;
      dropped += data.size() - take;
      put_raw(last_byte == '\n' ? truncation_marker(cap) : "\n" + truncation_marker(cap));
    }
  }
};

JobLog::JobLog(std::unique_ptr<State> state) : s_(std::move(state)) {}
JobLog::JobLog(JobLog&&) noexcept = default;
JobLog& JobLog::operator=(JobLog&& other) noexcept {
  if (this != &other) {
    close();
    s_ = std::move(other.s_);
  }
  return *this;
}
JobLog::~JobLog() { close(); }

Result<JobLog> JobLog::create(const std::filesystem::path& path, std::size_t cap_bytes,
                              std::vector<std::string> secrets, Tee tee) {
  if (cap_bytes == 0) return make_error(errc::kBadValue, "log cap_bytes must be > 0, got 0");
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640);
  if (fd < 0) return make_error(errc::kIo, "open " + path.string() + ": " + std::strerror(errno));
  auto st = std::make_unique<State>();
  st->path = path;
  st->cap = cap_bytes;
  st->fd = fd;
  st->tee = std::move(tee);
  State* raw = st.get();
  st->filter = std::make_unique<LogFilter>(secrets, [raw](std::string_view d) { raw->sink(d); });
  return JobLog(std::move(st));
}

void JobLog::write(std::string_view data) {
  if (!s_) return;
  std::lock_guard<std::mutex> lock(s_->mu);
  if (s_->closed) return;
  s_->filter->write(data);
}

std::size_t JobLog::bytes_written() const {
  std::lock_guard<std::mutex> lock(s_->mu);
  return s_->written;
}

std::size_t JobLog::bytes_dropped() const {
  std::lock_guard<std::mutex> lock(s_->mu);
  return s_->dropped;
}

bool JobLog::truncated() const {
  std::lock_guard<std::mutex> lock(s_->mu);
  return s_->truncated;
}

std::string JobLog::tail(std::size_t max_bytes) const {
  std::lock_guard<std::mutex> lock(s_->mu);
  const std::string& t = s_->tail;
  std::size_t n = std::min({max_bytes, kTailKeepBytes, t.size()});
  std::size_t start = t.size() - n;
  // Skip UTF-8 continuation bytes (10xxxxxx) so the tail starts on a character boundary.
  while (start < t.size() && (static_cast<unsigned char>(t[start]) & 0xC0) == 0x80) ++start;
  return t.substr(start);
}

std::vector<IgnoredSecret> JobLog::ignored_secrets() const {
  std::lock_guard<std::mutex> lock(s_->mu);
  return s_->filter->ignored();
}

std::optional<Error> JobLog::error() const {
  std::lock_guard<std::mutex> lock(s_->mu);
  return s_->error;
}

void JobLog::close() {
  if (!s_) return;
  std::lock_guard<std::mutex> lock(s_->mu);
  if (s_->closed) return;
  s_->filter->flush();
  s_->closed = true;
  if (s_->fd >= 0 && ::close(s_->fd) != 0 && !s_->error.has_value()) {
    s_->error = make_error(errc::kIo, "close " + s_->path.string() + ": " + std::strerror(errno));
  }
  s_->fd = -1;
}

const std::filesystem::path& JobLog::path() const { return s_->path; }

}  // namespace kakeya::runner
