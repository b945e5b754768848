#include "bridge/push_probe.h"

#include <algorithm>

#include "bridge/branch.h"
#include "bridge/request.h"

namespace kakeya::bridge {

Result<std::string> probe_push(GitBus& bus, const std::string& prefix, const CommitAuthor& author) {
  const std::string branch = request_branch_name(prefix, "doctor-probe", new_nonce());
  const std::string ref = to_heads_ref(branch);
  KAKEYA_ASSIGN_OR_RETURN(auto commit, bus.make_commit(std::nullopt, std::nullopt, {},
                                                       "kakeya doctor: push probe [skip ci]\n", author));
  KAKEYA_ASSIGN_OR_RETURN(auto pushed, bus.push_cas(ref, commit, std::nullopt));
  if (pushed != PushOutcome::Won) return make_error(errc::kPushRejected, "the remote rejected creating " + ref);
  std::string tip = commit;
  for (int attempt = 0; attempt < 3; ++attempt) {
    KAKEYA_ASSIGN_OR_RETURN(auto deleted, bus.delete_cas(ref, tip));
    if (deleted == PushOutcome::Won) return branch;
    // A runner may have committed a rejection on the probe branch: delete that tip instead.
    KAKEYA_ASSIGN_OR_RETURN(auto refs, bus.ls_remote(ref));
    auto it = std::find_if(refs.begin(), refs.end(), [&](const auto& r) { return r.name == ref; });
    if (it == refs.end()) return branch;
    tip = it->oid;
  }
  return make_error(errc::kDeleteFailed, "pushed " + ref + " but could not delete it again: delete it by hand");
}

std::string literal_prefix(const std::string& pattern) {
  std::string p = pattern.substr(0, pattern.find_first_of("*?"));
  while (!p.empty() && !is_valid_branch_prefix(p)) p.pop_back();
  return p;
}

}  // namespace kakeya::bridge
