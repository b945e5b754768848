#include "bridge/git_tree_raw.h"

#include <cstring>

namespace kakeya::bridge::git {

namespace {
Error bad_tree(std::size_t offset, const std::string& why) {
  return make_error(errc::kBadTree, "malformed tree entry at byte " + std::to_string(offset) + ": " + why);
}
}  // namespace

Result<std::vector<RawTreeEntry>> parse_tree_entries(std::string_view data) {
  std::vector<RawTreeEntry> out;
  std::size_t at = 0;
  while (at < data.size()) {
    const std::size_t start = at;
    RawTreeEntry e;
    const std::size_t space = data.find(' ', at);
    if (space == std::string_view::npos) return bad_tree(start, "no space after the mode");
    e.mode_text = std::string(data.substr(at, space - at));
    if (e.mode_text.empty()) return bad_tree(start, "empty mode");
    uint64_t mode = 0;
    for (char c : e.mode_text) {
      if (c < '0' || c > '7') return bad_tree(start, "the mode is not octal digits");
      mode = std::min<uint64_t>(mode * 8 + static_cast<uint64_t>(c - '0'), UINT32_MAX);
    }
    e.mode = static_cast<uint32_t>(mode);
    const std::size_t nul = data.find('\0', space + 1);
    if (nul == std::string_view::npos) return bad_tree(start, "no NUL after the name");
    e.name = std::string(data.substr(space + 1, nul - space - 1));
    if (e.name.empty() || e.name.find('/') != std::string::npos) return bad_tree(start, "empty name or a '/' in it");
    if (data.size() - (nul + 1) < GIT_OID_RAWSZ) return bad_tree(start, "object id cut short");
    std::memcpy(e.id.id, data.data() + nul + 1, GIT_OID_RAWSZ);
    at = nul + 1 + GIT_OID_RAWSZ;
    out.push_back(std::move(e));
  }
  return out;
}

}  // namespace kakeya::bridge::git
