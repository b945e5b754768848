#pragma once
// Small helpers shared by the fleet integration tests (tests/integration/fleet_*_test.cpp).
#include <signal.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "tests/harness/bus_world.h"

namespace kakeya::testing::fleet {

// Nonce of a request branch <ns>/<preset>-<nonce>.
inline std::string nonce_of(const std::string& branch, const std::string& preset) {
  const std::string key = "/" + preset + "-";
  const auto at = branch.find(key);
  return at == std::string::npos ? "" : branch.substr(at + key.size());
}

inline int count_of(const std::vector<std::string>& v, const std::string& x) {
  return static_cast<int>(std::count(v.begin(), v.end(), x));
}

// Occurrences of `needle` (non-empty) in `text`, e.g. how often a runner's log says one thing.
inline int count_in(const std::string& text, const std::string& needle) {
  int n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

// Highest number of executions of one runner that overlapped in time.
inline int max_overlap(const std::vector<JobSpan>& spans, const std::string& runner) {
  std::vector<std::pair<long long, int>> ev;
  for (const auto& s : spans) {
    if (s.runner != runner) continue;
    ev.push_back({s.start_ms, +1});
    ev.push_back({s.end_ms, -1});
  }
  std::sort(ev.begin(), ev.end());  // at equal times the end (-1) sorts first
  int cur = 0, best = 0;
  for (const auto& e : ev) best = std::max(best, cur += e.second);
  return best;
}

inline bool alive(pid_t pid) { return pid > 0 && ::kill(pid, 0) == 0; }

// Entries under <runner work_dir>/spool that hold a spooled result.
inline int spooled(const BusWorld& w, const std::string& runner_id) {
  std::error_code ec;
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator(w.dir() / ("runner-" + runner_id) / "spool", ec)) {
    n += std::filesystem::exists(e.path() / "meta.json") ? 1 : 0;
  }
  return n;
}

}  // namespace kakeya::testing::fleet
