#include "client/run_files.h"

#include <fstream>
#include <system_error>

#include "bridge/layout.h"
#include "client/fetch_paths.h"

namespace kakeya::client {
namespace fs = std::filesystem;

Result<std::vector<fs::path>> fetch_run_files(bridge::GitBus& bus, const std::string& oid, const fs::path& dest) {
  const std::string run_dir(bridge::kRunDir);  // ".kakeya/run/"
  KAKEYA_ASSIGN_OR_RETURN(auto files, bus.list_dir(oid, run_dir.substr(0, run_dir.size() - 1)));
  if (files.empty()) {
    return make_error(errc::kNothingToFetch, "commit " + oid.substr(0, 12) + " has no " + run_dir +
                                              " (the request has not been claimed yet)");
  }
  std::error_code ec;
  fs::create_directories(dest, ec);
  if (ec) return make_error(errc::kIo, "cannot create '" + dest.string() + "': " + ec.message());
  std::vector<fs::path> written;
  for (const auto& path : files) {
    if (!path.starts_with(run_dir)) continue;
    KAKEYA_ASSIGN_OR_RETURN(auto target, safe_join(dest, std::string_view(path).substr(run_dir.size())));
    KAKEYA_ASSIGN_OR_RETURN(auto content, bus.read_file(oid, path));
    if (!content) continue;
    fs::create_directories(target.parent_path(), ec);
    if (ec) return make_error(errc::kIo, "cannot create '" + target.parent_path().string() + "': " + ec.message());
    // Re-check after creating parents: a directory may not have become a way out.
    KAKEYA_ASSIGN_OR_RETURN(target, safe_join(dest, std::string_view(path).substr(run_dir.size())));
    std::ofstream out(target, std::ios::binary | std::ios::trunc);
    out.write(content->data(), static_cast<std::streamsize>(content->size()));
    out.close();
    if (!out) return make_error(errc::kIo, "cannot write '" + target.string() + "'");
    written.push_back(target);
  }
  return written;
}

}  // namespace kakeya::client
