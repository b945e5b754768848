#include "runner/branch_view.h"

#include "bridge/layout.h"

namespace kakeya::runner {

Result<BranchView> read_branch_view(bridge::GitBus& bus, const std::string& ref, const std::string& tip) {
  BranchView v;
  v.ref = ref;
  v.tip = tip;
  KAKEYA_ASSIGN_OR_RETURN(v.request_json, bus.read_file(tip, std::string(bridge::kRequestPath)));
  KAKEYA_ASSIGN_OR_RETURN(auto status_text, bus.read_file(tip, std::string(bridge::kStatusPath)));
  if (status_text) {
    auto st = bridge::parse_status(*status_text);
    if (st.ok()) {
      v.status = std::move(st).value();
    } else {
      v.status_error = st.error().message;
    }
  }
  KAKEYA_ASSIGN_OR_RETURN(auto cancel_text, bus.read_file(tip, std::string(bridge::kCancelPath)));
  v.cancel_requested = cancel_text.has_value();
  return v;
}

Result<BranchView> fetch_branch_view(bridge::GitBus& bus, const std::string& ref) {
  KAKEYA_ASSIGN_OR_RETURN(auto oids, bus.fetch({ref}));
  auto it = oids.find(ref);
  if (it == oids.end() || it->second.empty()) {
    return make_error("ref_gone", "request branch " + ref + " no longer exists on the remote");
  }
  return read_branch_view(bus, ref, it->second);
}

Result<std::string> make_runner_commit(bridge::GitBus& bus, const std::string& parent,
                                       const std::vector<bridge::FileChange>& changes,
                                       const std::string& what, const bridge::CommitAuthor& author) {
  return bus.make_commit(parent, parent, changes, "kakeya-runner: " + what + " [skip ci]", author);
}

bridge::FileChange status_change(const bridge::RunStatus& status) {
  return bridge::FileChange{std::string(bridge::kStatusPath), bridge::to_json(status).dump(2) + "\n"};
}

}  // namespace kakeya::runner
