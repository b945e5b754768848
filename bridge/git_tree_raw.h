#pragma once
// Reading tree objects byte for byte, with git's own rules (internal to the git bus).
//
// libgit2 1.5 parses tree entry modes leniently (strtol: "+40000" is read as a directory) and
// refuses trees git accepts (a mode above 0177777), so what it reads and what `git checkout`
// shows can differ. Request files are therefore looked up in the raw tree object: an entry is
// "<mode> <name>\0<20-byte oid>", where git's tree walker (tree-walk.c, decode_tree_entry) takes
// the mode as octal digits only; anything else makes the tree malformed.

#include <git2.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "bridge/result.h"

namespace kakeya::bridge::git {

struct RawTreeEntry {
  std::string mode_text;  // as written in the tree, e.g. "100644", "40000", "100664"
  uint32_t mode = 0;      // its octal value (saturated at UINT32_MAX)
  std::string name;       // raw bytes, never empty, no '/' or NUL
  git_oid id;
};

// The entries of a tree object's `data`, in stored order (not checked for order or repeats).
// Error `bad_tree` (with the byte offset) when an entry is cut short, its mode is not octal
// digits, or its name is empty or holds a '/'.
Result<std::vector<RawTreeEntry>> parse_tree_entries(std::string_view data);

}  // namespace kakeya::bridge::git
