#include "client/fetch_paths.h"

#include <string>
#include <system_error>

namespace kakeya::client {
namespace fs = std::filesystem;

namespace {

Error escape(std::string_view relative, std::string_view why) {
  return make_error(errc::kPathEscape,
                    "refusing path '" + std::string(relative) + "': " + std::string(why));
}

}  // namespace

Result<fs::path> safe_join(const fs::path& dest, std::string_view relative) {
  if (relative.empty()) return escape(relative, "empty path");
  if (relative.front() == '/') return escape(relative, "absolute path");
  if (relative.find('\\') != std::string_view::npos) return escape(relative, "backslash in path");
  if (relative.find('\0') != std::string_view::npos) return escape(relative, "NUL byte in path");
  fs::path out = dest;
  std::size_t start = 0;
  while (true) {
    std::size_t slash = relative.find('/', start);
    std::string_view part = relative.substr(start, slash == std::string_view::npos
                                                       ? std::string_view::npos
                                                       : slash - start);
    if (part.empty()) return escape(relative, "empty path component");
    if (part == "." || part == "..") return escape(relative, "'" + std::string(part) + "' component");
    out /= std::string(part);
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  // Existing symlinks (in dest or below it) must not lead outside dest.
  std::error_code ec;
  fs::path root = fs::weakly_canonical(fs::absolute(dest, ec), ec);
  if (ec) return escape(relative, "cannot resolve destination: " + ec.message());
  fs::path resolved = fs::weakly_canonical(fs::absolute(out, ec), ec);
  if (ec) return escape(relative, "cannot resolve path: " + ec.message());
  auto rel = resolved.lexically_relative(root);
  if (rel.empty() || *rel.begin() == "..") return escape(relative, "resolves outside the destination");
  return out;
}

}  // namespace kakeya::client
