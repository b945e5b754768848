#pragma once
// Resolution of the BRANCH|NONCE argument taken by `wait`, `status`, `fetch` and `cancel`.

#include <string>
#include <string_view>
#include <vector>

#include "bridge/result.h"

namespace kakeya::client {

// Resolves `arg` against the branch names the remote advertises (`branches`: names WITHOUT
// "refs/heads/", e.g. "kakeya/req/env-probe-k3x9q2m7a1b4"). Returns the branch name (no
// "refs/heads/").
//  - A leading "refs/heads/" on `arg` is stripped.
//  - `arg` equal to an advertised branch -> that branch.
//  - `prefix` + `arg` advertised (the branch without its namespace, "env-probe-<nonce>") -> it.
//  - exactly one advertised branch ending in "/" + `arg` ("req/env-probe-<nonce>", or the leaf
//    of a branch under another prefix) -> it; more than one is `ambiguous`.
//  - `arg` containing '/' -> otherwise error `not_found`.
//  - otherwise `arg` is a bare nonce: it matches every branch `<prefix><leaf>` (no '/' in the
//    leaf) whose leaf contains "-<nonce>" preceded by a non-empty preset part and followed by the
//    end of the leaf or by '-', '.' or '_' (where a suffix starts, bridge/branch.h: "-b876", ".2"
//    and "_s1" still match, while "abc" does not match the nonce "abcdef"). A nonce that is the
//    start of another with a '-' in it ("abc" and "abc-def") matches both: more than one match is
//    `ambiguous` (the message lists them); none is `not_found`.
// Errors: `usage` for an empty argument.
Result<std::string> resolve_target(std::string_view arg, std::string_view prefix,
                                   const std::vector<std::string>& branches);

// True when `leaf` (the part of a request branch after its prefix) carries `nonce` as described
// for resolve_target.
bool leaf_has_nonce(std::string_view leaf, std::string_view nonce);

}  // namespace kakeya::client
