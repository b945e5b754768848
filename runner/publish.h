#pragma once
// Publishing a run's final commit, with refetch-and-retry and an on-disk spool.
//
// DESIGN §2 Publish: the final commit holds summary, logs, results and the gate verdict. If the
// tip moved only by client commits (the status on the new tip still carries this runner's
// claim_gen), the changes are re-applied on the new tip. If the claim_gen moved on, this runner
// was fenced and publishes nothing. When the git server cannot be reached, the result stays in
// a spool folder on disk and is published when the server is back (nothing is lost).
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "bridge/gitbus.h"
#include "bridge/result.h"

namespace kakeya::runner {

struct FinalPublish {
  std::string ref;         // full request ref
  std::string runner_id;   // the claimant
  int64_t claim_gen = 0;   // the claim this result belongs to
  std::string tip;         // last tip this runner pushed or observed
  std::string what;        // commit message subject, e.g. "succeeded (exit 0)"
  std::vector<bridge::FileChange> changes;
};

enum class PublishOutcome {
  Published,   // the final commit is on the remote
  Fenced,      // another claim superseded ours; nothing published (by design)
  Gone,        // the request branch was deleted
  RetryLater,  // the remote kept failing; caller spools it
};

// Tries to publish for at most `max_seconds` (network errors back off exponentially with jitter,
// CAS losses refetch and re-apply). Updates `p.tip` to the published commit.
PublishOutcome publish_final(bridge::GitBus& bus, FinalPublish& p, const bridge::CommitAuthor& author,
                             double max_seconds);

// Spool layout: <dir>/meta.json {ref, runner_id, claim_gen, tip, what, files: [paths]} and
// <dir>/files/<path> with each file's bytes. Deletions are not spooled (runners never delete).
Status spool_write(const std::filesystem::path& dir, const FinalPublish& p);
Result<FinalPublish> spool_read(const std::filesystem::path& dir);

}  // namespace kakeya::runner
