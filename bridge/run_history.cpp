#include "bridge/run_history.h"

#include <fmt/format.h>

#include "bridge/error_codes.h"
#include "bridge/layout.h"
#include "bridge/utf8.h"

namespace kakeya::bridge {

Result<RunHistory> read_run_history(GitBus& bus, const std::string& tip, const std::string& branch,
                                    std::size_t max_commits) {
  std::string run_dir(kRunDir);
  run_dir.pop_back();  // ".kakeya/run" as a tree path
  RunHistory h;
  std::string at = tip;
  for (;;) {
    KAKEYA_ASSIGN_OR_RETURN(auto run_tree, bus.entry_oid(at, run_dir));
    if (!run_tree) {
      h.request_commit = at;
      return h;
    }
    KAKEYA_ASSIGN_OR_RETURN(CommitInfo info, bus.read_commit(at));
    if (info.parents.size() != 1) {
      return make_error(errc::kTampered, fmt::format("commit {} on {} has {} parents; runner and client commits "
                                                     "have exactly one",
                                                     at.substr(0, 12), printable(branch), info.parents.size()));
    }
    if (h.above.size() >= max_commits) {
      return make_error(errc::kTooLarge, fmt::format("{} has more than {} run commits", printable(branch), max_commits));
    }
    at = info.parents.front();
    h.above.push_back(std::move(info));
  }
}

bool is_run_path(const std::string& path) { return path.rfind(kRunDir, 0) == 0; }

}  // namespace kakeya::bridge
