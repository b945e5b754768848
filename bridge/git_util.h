#pragma once
// Internal helpers over the libgit2 C API for the git bus: one-time init, owning pointers, errors.
// Not part of the public bridge API (gitbus.h is).

#include <git2.h>

#include <memory>
#include <string>

#include "bridge/result.h"

namespace kakeya::bridge::git {

// git_libgit2_init exactly once per process (std::call_once); never shut down.
void ensure_init();

// Error{code, "<what>: <git_error_last()->message>"} (or "(no libgit2 detail)").
Error last_error(ErrorCode code, const std::string& what);

template <typename T, void (*Free)(T*)>
struct Deleter {
  void operator()(T* p) const {
    if (p != nullptr) Free(p);
  }
};
template <typename T, void (*Free)(T*)>
using Owned = std::unique_ptr<T, Deleter<T, Free>>;

using Remote = Owned<git_remote, git_remote_free>;
using Object = Owned<git_object, git_object_free>;
using Commit = Owned<git_commit, git_commit_free>;
using Tree = Owned<git_tree, git_tree_free>;
using TreeEntry = Owned<git_tree_entry, git_tree_entry_free>;
using TreeBuilder = Owned<git_treebuilder, git_treebuilder_free>;
using Odb = Owned<git_odb, git_odb_free>;
using OdbObject = Owned<git_odb_object, git_odb_object_free>;
using Revwalk = Owned<git_revwalk, git_revwalk_free>;
using Reference = Owned<git_reference, git_reference_free>;
using Repository = Owned<git_repository, git_repository_free>;
using Signature = Owned<git_signature, git_signature_free>;

// Parses 40 hex chars; error `bad_oid` naming `field` and the value.
Result<git_oid> parse_oid(const std::string& hex, const std::string& field);
std::string to_hex(const git_oid& oid);

}  // namespace kakeya::bridge::git
