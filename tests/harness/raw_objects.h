#pragma once
// Hand-made git objects for tests and fuzz targets: trees written byte for byte, the way
// `git mktree --missing` or `git hash-object -t tree --literally` would, so any mode, any entry
// order and repeated names are possible. libgit2 only; header-only so that the libFuzzer targets
// (which do not link the gtest harness) can use it too.
//
// A tree object is a sequence of entries "<mode in octal ASCII> <name>\0<20-byte oid>".
#include <git2.h>

#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace kakeya::testing {

struct RawEntry {
  std::string mode;  // as written, e.g. "100644", "120000", "160000", "40000", "100664"
  std::string name;
  git_oid oid;
};

// Writes `data` as an object of `type` into `odb`; throws std::runtime_error on failure.
inline git_oid write_raw_object(git_odb* odb, std::string_view data, git_object_t type) {
  git_oid id;
  if (git_odb_write(&id, odb, data.data(), data.size(), type) != 0) {
    const git_error* e = git_error_last();
    throw std::runtime_error(std::string("git_odb_write: ") + (e != nullptr ? e->message : "?"));
  }
  return id;
}

inline git_oid write_raw_blob(git_odb* odb, std::string_view content) {
  return write_raw_object(odb, content, GIT_OBJECT_BLOB);
}

// The tree holding exactly `entries`, in this order, unvalidated.
inline git_oid write_raw_tree(git_odb* odb, const std::vector<RawEntry>& entries) {
  std::string data;
  for (const auto& e : entries) {
    data += e.mode;
    data += ' ';
    data += e.name;
    data += '\0';
    data.append(reinterpret_cast<const char*>(e.oid.id), GIT_OID_RAWSZ);
  }
  return write_raw_object(odb, data, GIT_OBJECT_TREE);
}

// A commit of `tree` (with `parent`, if any) by a fixed test identity.
inline git_oid write_raw_commit(git_odb* odb, const git_oid& tree, const std::optional<git_oid>& parent = {}) {
  char hex[GIT_OID_HEXSZ + 1];
  std::string data = "tree " + std::string(git_oid_tostr(hex, sizeof hex, &tree)) + "\n";
  if (parent) data += "parent " + std::string(git_oid_tostr(hex, sizeof hex, &*parent)) + "\n";
  data += "author Test <test@example.com> 1700000000 +0000\n";
  data += "committer Test <test@example.com> 1700000000 +0000\n\nhand-made\n";
  return write_raw_object(odb, data, GIT_OBJECT_COMMIT);
}

inline std::string oid_hex(const git_oid& id) {
  char hex[GIT_OID_HEXSZ + 1];
  return git_oid_tostr(hex, sizeof hex, &id);
}

// The object database of the repository at `path`, owned by the caller (git_odb_free), plus the
// repository itself (git_repository_free). Throws on failure.
struct OpenOdb {
  git_repository* repo = nullptr;
  git_odb* odb = nullptr;
  explicit OpenOdb(const std::string& path) {
    git_libgit2_init();
    if (git_repository_open(&repo, path.c_str()) != 0 || git_repository_odb(&odb, repo) != 0) {
      throw std::runtime_error("cannot open repository " + path);
    }
  }
  ~OpenOdb() {
    git_odb_free(odb);
    git_repository_free(repo);
    git_libgit2_shutdown();
  }
  OpenOdb(const OpenOdb&) = delete;
  OpenOdb& operator=(const OpenOdb&) = delete;
};

}  // namespace kakeya::testing
