#pragma once
// `kakeya verify`: provenance of a run (DESIGN §2). A run's branch is the request commit (the
// client's commit holding .kakeya/request.json; the newest first-parent ancestor of the tip
// without .kakeya/run/) followed by runner commits and at most client cancel commits. It
// verifies when
//   - every commit after the request commit is either a runner commit SSH-signed by a key the
//     allowed-signers file allows for namespace "git" at its committer date
//     (bridge/commit_signature.h, what `git verify-commit` checks with gpg.format=ssh), or a
//     commit that changes nothing but .kakeya/run/cancel.json (a client's cancel);
//   - there is at least one runner commit, and the tip's files differ from those of the last
//     signed runner commit in nothing but .kakeya/run/cancel.json: the results, logs, summary and
//     status read at the tip are the ones the runner signed.
#include <optional>
#include <string>
#include <vector>

#include "bridge/run_history.h"
#include "bridge/allowed_signers.h"
#include "bridge/gitbus.h"
#include "bridge/result.h"

namespace kakeya::client {

struct VerifiedCommit {
  std::string oid;
  std::string role;                     // "runner" (signed, allowed) or "cancel" (client cancel commit)
  std::vector<std::string> principals;  // runner commits: who signed, from the allowed-signers file
  std::string fingerprint;              // runner commits: the signing key, "SHA256:..."
  std::string summary;                  // the message's first line
};

struct VerifyReport {
  std::string branch;                         // without refs/heads/
  std::string tip;
  std::string request_commit;
  std::vector<VerifiedCommit> commits;        // after the request commit, oldest first
  std::string signed_tip;                     // the last runner commit (what the tip's files are)
  std::optional<std::string> results_tree;    // oid of .kakeya/run/results at the tip, if any
};

// Walks at most this many commits back from the tip (heartbeats included).
inline constexpr std::size_t kMaxVerifyCommits = bridge::kMaxRunCommits;

// Fetches `branch` (without refs/heads/) and verifies it as described above. Errors, each
// naming the commit: `not_found` (no such branch), `not_signed` (no runner commit, or an
// unsigned one that changes run files: named with the paths it changes), `tampered` (an
// unsigned commit, a merge, or a tip whose files differ from the last signed runner commit),
// `bad_signature`, `untrusted_signer`, `bad_key` (bridge/commit_signature.h), `too_large`
// (more than kMaxVerifyCommits), and the bus's transport errors.
Result<VerifyReport> verify_run(bridge::GitBus& bus, const std::string& branch, const bridge::AllowedSigners& signers);

}  // namespace kakeya::client
