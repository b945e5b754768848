#include "runner/workspace.h"

#include <algorithm>
#include <vector>

namespace kakeya::runner {

namespace fs = std::filesystem;

uint64_t directory_bytes(const fs::path& dir) {
  std::error_code ec;
  uint64_t total = 0;
  for (fs::recursive_directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec), end;
       !ec && it != end; it.increment(ec)) {
    std::error_code fec;
    if (it->is_regular_file(fec) && !it->is_symlink(fec)) total += it->file_size(fec);
  }
  return total;
}

PruneResult prune_job_dirs(const fs::path& jobs_root, const std::set<fs::path>& active, int keep, uint64_t keep_bytes) {
  struct Entry {
    fs::path path;
    fs::file_time_type mtime;
  };
  std::vector<Entry> dirs;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(jobs_root, ec)) {
    std::error_code dec;
    if (!e.is_directory(dec) || active.count(e.path())) continue;
    dirs.push_back({e.path(), e.last_write_time(dec)});
  }
  std::sort(dirs.begin(), dirs.end(), [](const Entry& a, const Entry& b) {
    return a.mtime != b.mtime ? a.mtime > b.mtime : a.path < b.path;
  });
  PruneResult r;
  for (const auto& d : dirs) {
    const uint64_t bytes = directory_bytes(d.path);
    if (r.kept < keep && r.kept_bytes + bytes <= keep_bytes) {
      ++r.kept;
      r.kept_bytes += bytes;
      continue;
    }
    std::error_code rec;
    fs::remove_all(d.path, rec);
    if (!rec) ++r.removed;
  }
  return r;
}

void release_job_dir(const fs::path& dir, bool keep) {
  std::error_code ec;
  if (!keep) {
    fs::remove_all(dir, ec);
    return;
  }
  fs::last_write_time(dir, fs::file_time_type::clock::now(), ec);
}

}  // namespace kakeya::runner
