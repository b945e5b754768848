#pragma once
// Proof that the credentials may push in a namespace (`kakeya doctor`, `kakeya-runner doctor`):
// a create-only push of an empty commit to <prefix>doctor-probe-<nonce>, then a CAS delete of it.
// A runner watching the namespace may commit a `rejected` receipt on the probe meanwhile: the
// delete is retried on the tip it moved to (3 tries).
#include <string>
#include <vector>

#include "bridge/gitbus.h"
#include "bridge/result.h"

namespace kakeya::bridge {

// Returns the probe branch that was created and deleted. REQUIRES: `prefix` is a valid request
// branch prefix (bridge/branch.h). Errors: the bus's (`auth_failed`, `transport`, ...),
// `push_rejected` (the remote refused creating the branch), `delete_failed` (created but not
// deleted: the message names the branch to delete by hand).
Result<std::string> probe_push(GitBus& bus, const std::string& prefix, const CommitAuthor& author);

// The literal request prefix a branch-watch glob starts with, for a probe in that namespace:
// its characters before the first '*' or '?', cut back to make a valid prefix
// ("kakeya/req/**" -> "kakeya/req/", "agents/kakeya-*" -> "agents/kakeya-"). "" when the
// pattern has no usable literal start (e.g. "**").
std::string literal_prefix(const std::string& pattern);

}  // namespace kakeya::bridge
