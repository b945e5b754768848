#include "runner/request_signing.h"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "bridge/commit_signature.h"
#include "bridge/error_codes.h"
#include "bridge/run_history.h"
#include "bridge/utf8.h"

namespace kakeya::runner {

Result<std::string> authorize_request(bridge::GitBus& bus, const RequestSigningPolicy& policy,
                                      const std::string& commit, const std::string& preset) {
  KAKEYA_ASSIGN_OR_RETURN(bridge::CommitInfo info, bus.read_commit(commit));
  auto signer = bridge::verify_commit_signature(info, policy.signers);
  if (!signer.ok()) {
    if (signer.error().code == errc::kNotSigned) {
      return make_error(errc::kNotSigned, signer.error().message + "; this runner requires request commits signed "
                                                                   "by a key in " + policy.allowed_signers_file.string() +
                                              " (kakeya signs with $KAKEYA_SIGNING_KEY)");
    }
    return signer.error();
  }
  std::vector<std::string> may_run;
  for (const auto& principal : signer->principals) {
    const auto it = policy.presets.find(principal);
    if (it == policy.presets.end()) continue;
    for (const auto& p : it->second) {
      if (p == preset || p == kAnyPreset) return principal;
      may_run.push_back(p);
    }
  }
  std::sort(may_run.begin(), may_run.end());
  may_run.erase(std::unique(may_run.begin(), may_run.end()), may_run.end());
  return make_error(errc::kUnauthorisedSigner,
                    fmt::format("commit {} is signed by {} ({}), who may not run preset '{}' (may run: {})",
                                commit.substr(0, 12), bridge::printable(fmt::format("{}", fmt::join(signer->principals, ", "))),
                                signer->fingerprint, bridge::printable(preset),
                                may_run.empty() ? std::string("nothing") : fmt::format("{}", fmt::join(may_run, ", "))));
}

Result<std::string> authorize_claimed_request(bridge::GitBus& bus, const RequestSigningPolicy& policy,
                                              const std::string& tip, const std::string& branch,
                                              const std::string& preset) {
  KAKEYA_ASSIGN_OR_RETURN(bridge::RunHistory history,
                          bridge::read_run_history(bus, tip, branch, bridge::kMaxRunCommits));
  KAKEYA_ASSIGN_OR_RETURN(std::vector<std::string> changed, bus.changed_paths(history.request_commit, tip));
  std::vector<std::string> outside;
  for (const auto& p : changed)
    if (!bridge::is_run_path(p)) outside.push_back(bridge::printable(p, 120));
  if (!outside.empty()) {
    if (outside.size() > 5) outside.resize(5);
    return make_error(errc::kTampered,
                      fmt::format("the commits above request commit {} change {} (only .kakeya/run/ may change after "
                                  "it)",
                                  history.request_commit.substr(0, 12), fmt::join(outside, ", ")));
  }
  return authorize_request(bus, policy, history.request_commit, preset);
}

}  // namespace kakeya::runner
