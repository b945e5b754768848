#pragma once
// Request branch naming and matching (DESIGN.md §2).
//
//   refs/heads/<namespace>/<preset>-<nonce>[<suffix>]
//   namespace: one or more `/`-separated segments of [A-Za-z0-9._-] (default "kakeya/req");
//              a segment may not start with `.`, end with `.lock` or contain `..` (git ref rules),
//              and the namespace may not be, or lie under, kakeya/runners.
//   suffix:    optional; `.` or `_` then [A-Za-z0-9._-]{0,63} (no `..`, not ending in `.` or `.lock`)
//              (e.g. a session id some hosted agents append to branch names).
// Runner state branches kakeya/runners/<id> are never requests.
// Branch names here are short names (no refs/heads/) unless a function says otherwise.

#include <string>
#include <string_view>
#include <vector>

#include "bridge/request.h"
#include "bridge/result.h"

namespace kakeya::bridge {

bool is_valid_namespace(std::string_view ns);
bool is_valid_branch_suffix(std::string_view suffix);  // "" is valid (no suffix)

// "<ns>/<preset>-<nonce><suffix>" (no refs/heads/). REQUIRES: valid parts (see
// check_request_branch_parts); the function does not validate.
std::string request_branch_name(std::string_view ns, std::string_view preset, std::string_view nonce,
                                 std::string_view suffix = "");

// Validates the parts of a request branch name. Errors ("bad_branch") name the part and value.
Status check_request_branch_parts(std::string_view ns, std::string_view preset, std::string_view nonce,
                                  std::string_view suffix = "");

// Whether `branch_name` (with or without refs/heads/) names the request in `manifest`: it has a
// valid namespace, and the tail after its last `/` is manifest.preset + "-" + manifest.nonce
// followed by a valid (possibly empty) suffix. Error "branch_mismatch" names both the branch and
// the expected `<preset>-<nonce>`; runner branches are "bad_branch".
Status check_branch_matches(std::string_view branch_name, const RequestManifest& manifest);

// Plain glob over branch names: `*` any run of characters except `/`, `**` any run including `/`
// (so `kakeya/req/**` matches everything below kakeya/req/), `?` one character except `/`.
// Everything else matches literally. No implicit anchoring beyond the whole name.
bool glob_match(std::string_view pattern, std::string_view name);

// Request-watch matching: glob_match on short names (refs/heads/ stripped from both), but a
// runner branch never matches, whatever the pattern (e.g. `kakeya/**`).
bool branch_glob_match(std::string_view pattern, std::string_view branch);
// branch_glob_match against any of `patterns`.
bool branch_matches_any(const std::vector<std::string>& patterns, std::string_view branch);

// kakeya/runners/<id> (with or without refs/heads/), id non-empty.
bool is_runner_branch(std::string_view branch);
// "kakeya/runners/<runner_id>" (no refs/heads/).
std::string runner_branch_name(std::string_view runner_id);

// "refs/heads/x" -> "x"; anything without the prefix is returned unchanged.
std::string_view strip_heads_prefix(std::string_view ref);
// "x" -> "refs/heads/x"; "refs/heads/x" stays as is.
std::string to_heads_ref(std::string_view branch);

}  // namespace kakeya::bridge
