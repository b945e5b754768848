#pragma once
// Request branch naming and matching (DESIGN.md §2).
//
//   refs/heads/<prefix><preset>-<nonce>[<suffix>]
//   prefix: non-empty, of [A-Za-z0-9._/-], no leading '/', no "//"; it ends with '/' (the preset
//           starts a path segment: "kakeya/req/", the default) or inside a segment
//           ("agents/kakeya-", for hosts that let agents push only under a fixed name prefix);
//           never under kakeya/runners/.
//   suffix: optional; '-', '.' or '_' then at most 63 of [A-Za-z0-9._-], no "..", not ending in
//           '.' or ".lock" (e.g. "-b876", ".retry2", "_01HXYZ": a tag or session id some hosted
//           agents append to branch names).
//   The whole name (without refs/heads/) is at most kMaxBranchNameBytes (bridge/limits.h) and
//   every '/'-separated segment follows git's ref rules: [A-Za-z0-9._-]+, not starting with '.',
//   no "..", not ending in '.' or ".lock".
// A branch is never parsed into these parts on its own (with '-' in presets, nonces and suffixes
// that would be ambiguous): it is matched against the manifest's preset and nonce
// (check_branch_matches), which fixes where the prefix ends and the suffix begins.
// Runner state branches kakeya/runners/<id> are never requests.
// Branch names here are short names (no refs/heads/) unless a function says otherwise.

#include <string>
#include <string_view>
#include <vector>

#include "bridge/request.h"
#include "bridge/result.h"

namespace kakeya::bridge {

bool is_valid_branch_prefix(std::string_view prefix);
bool is_valid_branch_suffix(std::string_view suffix);  // "" is valid (no suffix)
// The whole-name rules above (length, segments, not a runner branch).
bool is_valid_request_branch(std::string_view branch);

// "<prefix><preset>-<nonce><suffix>" (no refs/heads/). REQUIRES: valid parts (see
// check_request_branch_parts); the function does not validate.
std::string request_branch_name(std::string_view prefix, std::string_view preset, std::string_view nonce,
                                 std::string_view suffix = "");

// Validates the parts of a request branch name and the name they make. Errors ("bad_branch")
// name the part and its value (escaped, bridge/utf8.h printable).
Status check_request_branch_parts(std::string_view prefix, std::string_view preset, std::string_view nonce,
                                  std::string_view suffix = "");

// Whether `branch_name` (with or without refs/heads/) names the request in `manifest`: it is
// <prefix> + manifest.preset + "-" + manifest.nonce + <suffix> for some valid prefix and suffix,
// and a valid request branch as a whole. Error "branch_mismatch" names the branch and the
// expected `<preset>-<nonce>`; runner branches are "bad_branch".
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
