#include "client/verify.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "bridge/branch.h"
#include "bridge/commit_signature.h"
#include "bridge/layout.h"
#include "bridge/run_history.h"
#include "bridge/utf8.h"

namespace kakeya::client {
namespace {

std::string short_oid(const std::string& oid) { return oid.substr(0, 12); }

// Whether the only path `from` -> `to` changes is the client's cancel file (or none).
Result<bool> only_cancel_changed(bridge::GitBus& bus, const std::string& from, const std::string& to,
                                 std::vector<std::string>& changed) {
  KAKEYA_ASSIGN_OR_RETURN(changed, bus.changed_paths(from, to));
  for (const auto& p : changed) {
    if (p != bridge::kCancelPath) return false;
  }
  return true;
}

std::string list_paths(const std::vector<std::string>& paths) {
  constexpr std::size_t kShown = 5;
  std::vector<std::string> shown;
  for (std::size_t i = 0; i < paths.size() && i < kShown; ++i) shown.push_back(bridge::printable(paths[i], 120));
  std::string out = fmt::format("{}", fmt::join(shown, ", "));
  if (paths.size() > kShown) out += fmt::format(" and {} more", paths.size() - kShown);
  return out;
}

}  // namespace

Result<VerifyReport> verify_run(bridge::GitBus& bus, const std::string& branch, const bridge::AllowedSigners& signers) {
  const std::string ref = bridge::to_heads_ref(branch);
  KAKEYA_ASSIGN_OR_RETURN(auto oids, bus.fetch({ref}));
  const auto found = oids.find(ref);
  if (found == oids.end() || found->second.empty()) {
    return make_error(errc::kNotFound, "branch '" + bridge::printable(branch) + "' does not exist on the remote");
  }
  VerifyReport report;
  report.branch = branch;
  report.tip = found->second;

  // First-parent chain from the tip down to the request commit (newest first).
  KAKEYA_ASSIGN_OR_RETURN(bridge::RunHistory history,
                          bridge::read_run_history(bus, report.tip, branch, kMaxVerifyCommits));
  report.request_commit = history.request_commit;
  const std::vector<bridge::CommitInfo>& chain = history.above;

  for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
    const bridge::CommitInfo& c = *it;
    auto signer = bridge::verify_commit_signature(c, signers);
    if (signer.ok()) {
      report.commits.push_back({c.oid, "runner", signer->principals, signer->fingerprint, c.summary});
      report.signed_tip = c.oid;
      continue;
    }
    std::vector<std::string> changed;
    KAKEYA_ASSIGN_OR_RETURN(bool cancel_only, only_cancel_changed(bus, c.parents.front(), c.oid, changed));
    if (cancel_only) {
      report.commits.push_back({c.oid, "cancel", {}, "", c.summary});
      continue;
    }
    const std::string changes = "; it changes " + list_paths(changed);
    const ErrorCode code = signer.error().code == errc::kNotSigned ? errc::kTampered : signer.error().code;
    return make_error(code, signer.error().message + " (\"" + bridge::printable(c.summary, 80) + "\")" + changes +
                                ", which only a runner commit signed by a key in " + signers.origin() + " may");
  }
  if (report.signed_tip.empty()) {
    return make_error(errc::kNotSigned, "no runner commit on " + bridge::printable(branch) + " after request commit " +
                                            short_oid(report.request_commit) + " (not claimed yet?)");
  }
  std::vector<std::string> changed;
  KAKEYA_ASSIGN_OR_RETURN(bool same, only_cancel_changed(bus, report.signed_tip, report.tip, changed));
  if (!same) {
    return make_error(errc::kTampered, "the tip " + short_oid(report.tip) + " differs from the last signed runner "
                                           "commit " + short_oid(report.signed_tip) + " in " + list_paths(changed));
  }
  std::string results(bridge::kResultsDir);
  results.pop_back();
  KAKEYA_ASSIGN_OR_RETURN(report.results_tree, bus.entry_oid(report.tip, results));
  return report;
}

}  // namespace kakeya::client
