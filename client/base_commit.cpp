#include "client/base_commit.h"

#include <git2.h>

#include "bridge/git_util.h"

namespace kakeya::client {
namespace fs = std::filesystem;
namespace git = bridge::git;

Result<std::optional<BaseCommit>> find_base_commit(const fs::path& start, bool exact) {
  git::ensure_init();
  git_repository* raw = nullptr;
  unsigned int flags = exact ? GIT_REPOSITORY_OPEN_NO_SEARCH : 0;
  int rc = git_repository_open_ext(&raw, start.c_str(), flags, nullptr);
  if (rc == GIT_ENOTFOUND) {
    if (exact) {
      return make_error(errc::kNoRepository, "no git repository at '" + start.string() + "'");
    }
    return std::optional<BaseCommit>{};
  }
  if (rc != 0) return git::last_error(errc::kRepository, "opening the git repository at '" + start.string() + "'");
  git::Repository repo(raw);

  git_oid oid;
  rc = git_reference_name_to_id(&oid, repo.get(), "HEAD");
  if (rc == GIT_ENOTFOUND || git_repository_head_unborn(repo.get()) == 1) {
    return make_error(errc::kNoHeadCommit, "the repository at '" + start.string() +
                                            "' has no commit yet: commit the workload or pass --no-workload");
  }
  if (rc != 0) return git::last_error(errc::kRepository, "resolving HEAD in '" + start.string() + "'");
  git_object* peeled_raw = nullptr;
  git_object* head_raw = nullptr;
  if (git_object_lookup(&head_raw, repo.get(), &oid, GIT_OBJECT_ANY) != 0) {
    return git::last_error(errc::kRepository, "looking up HEAD " + git::to_hex(oid));
  }
  git::Object head(head_raw);
  if (git_object_peel(&peeled_raw, head.get(), GIT_OBJECT_COMMIT) != 0) {
    return git::last_error(errc::kRepository, "HEAD " + git::to_hex(oid) + " is not a commit");
  }
  git::Object peeled(peeled_raw);
  const char* path = git_repository_workdir(repo.get());
  if (path == nullptr) path = git_repository_path(repo.get());
  return std::optional<BaseCommit>{BaseCommit{fs::path(path), git::to_hex(*git_object_id(peeled.get()))}};
}

}  // namespace kakeya::client
