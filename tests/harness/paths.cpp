#include "tests/harness/paths.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <system_error>

namespace kakeya::testing {

std::filesystem::path source_dir() { return KAKEYA_SOURCE_DIR; }
std::filesystem::path binary_dir() { return KAKEYA_BINARY_DIR; }
std::filesystem::path data_dir() { return source_dir() / "tests" / "data"; }
std::filesystem::path models_dir() { return source_dir() / "models"; }

std::filesystem::path shared_dir() {
  if (const char* env = std::getenv("KAKEYA_SHARED_DIR"); env != nullptr && *env != '\0') return env;
  return source_dir().parent_path() / "shared";
}

std::string shared_dir_missing(const std::filesystem::path& sub) {
  const std::filesystem::path p = shared_dir() / sub;
  std::error_code ec;
  if (std::filesystem::exists(p, ec)) return {};
  return "third-party test data " + p.string() +
         " is absent (kept outside the repository; set KAKEYA_SHARED_DIR to the shared folder)";
}

std::string file_text(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TempDir::TempDir(const std::string& prefix) {
  const char* base = std::getenv("TMPDIR");
  std::string tmpl = std::string(base ? base : "/tmp") + "/" + prefix + "-XXXXXX";
  if (mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed: " + tmpl);
  path_ = tmpl;
}

TempDir::~TempDir() {
  if (std::getenv("KAKEYA_KEEP_TMP") != nullptr) return;
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

int free_tcp_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw std::runtime_error("socket() failed");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    throw std::runtime_error("bind() failed");
  }
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  int port = ntohs(addr.sin_port);
  ::close(fd);
  return port;
}

}  // namespace kakeya::testing
