#include "client/log_dedupe.h"

#include <algorithm>

namespace kakeya::client {

std::vector<std::string> complete_lines(std::string_view text) {
  std::vector<std::string> lines;
  std::size_t start = 0;
  for (std::size_t nl = text.find('\n'); nl != std::string_view::npos; nl = text.find('\n', start)) {
    std::string_view line = text.substr(start, nl - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    lines.emplace_back(line);
    start = nl + 1;
  }
  return lines;
}

std::vector<std::string> LogTailDedupe::update(std::string_view tail) {
  std::vector<std::string> cur = complete_lines(tail);
  if (cur.empty()) return {};
  const std::size_t n = shown_.size();
  std::size_t overlap = 0;
  bool found = n == 0;  // nothing shown yet: everything is new, no gap marker
  for (std::size_t k = std::min(n, cur.size()); k >= 1 && !found; --k) {
    const std::size_t base = n - k;
    // The first line of `cur` may be the cut-off end of shown_[base].
    bool match = cur[0].empty() ? shown_[base].empty()
                                : std::string_view(shown_[base]).ends_with(cur[0]);
    for (std::size_t i = 1; match && i < k; ++i) match = shown_[base + i] == cur[i];
    if (match) {
      overlap = k;
      found = true;
    }
  }
  std::vector<std::string> fresh;
  if (!found) fresh.emplace_back(kGapMarker);
  fresh.insert(fresh.end(), cur.begin() + static_cast<std::ptrdiff_t>(overlap), cur.end());
  shown_ = std::move(cur);
  return fresh;
}

}  // namespace kakeya::client
