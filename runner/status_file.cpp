#include "runner/status_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "bridge/json_strict.h"
#include "bridge/json_text.h"

namespace kakeya::runner {

namespace fs = std::filesystem;

Status write_state_file(const fs::path& path, const nlohmann::json& state) {
  const fs::path tmp = path.string() + ".tmp";
  const std::string text = bridge::to_json_file(state);
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640);
  if (fd < 0) return make_error(errc::kIo, "open " + tmp.string() + ": " + std::strerror(errno));
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const std::string why = std::strerror(errno);
      ::close(fd);
      return make_error(errc::kIo, "write " + tmp.string() + ": " + why);
    }
    done += static_cast<std::size_t>(n);
  }
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    return make_error(errc::kIo, "rename " + tmp.string() + " to " + path.string() + ": " + std::strerror(errno));
  }
  return ok_status();
}

Result<nlohmann::json> read_state_file(const fs::path& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) {
    return make_error(errc::kNotFound, path.string() + " does not exist: no runner daemon has run with this work_dir");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error(errc::kIo, "cannot read " + path.string() + ": " + std::strerror(errno));
  std::stringstream buf;
  buf << in.rdbuf();
  auto doc = bridge::parse_json_strict(buf.str());
  if (!doc.ok()) return make_error(errc::kParseError, path.string() + ": " + doc.error().message);
  if (!doc->is_object()) return make_error(errc::kParseError, path.string() + ": not a JSON object");
  return doc;
}

}  // namespace kakeya::runner
