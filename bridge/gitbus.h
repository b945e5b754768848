#pragma once
// The git bus transport (DESIGN §2): talk to one git remote through libgit2 1.5, with a private
// bare repository ("cache") as the object store. No work tree, no index, never force.
//
// Network operations (ls_remote, fetch, push_cas, delete_cas) each open one connection and honour
// GitBusOptions::op_timeout_s: progress/credential callbacks fail once the deadline has passed and a
// watchdog thread calls git_remote_stop(). libgit2 1.5 cannot interrupt a connect() or recv() blocked
// in the kernel, so the bus registers its own socket stream (gitbus_stream.h: non-blocking sockets,
// poll() in 100 ms slices) that gives up at the same deadline: a dead or black-holed server costs at
// most op_timeout_s per operation, then `timeout`.
//
// Error codes: `auth_failed` (credentials rejected max_auth_attempts times; message names the
// redacted remote URL), `timeout`, `transport` (connection refused, TLS, HTTP, protocol errors),
// `not_fetched` (an object the operation needs is not in the cache), `non_fast_forward`,
// `bad_path`, `too_large`, `path_conflict`, `bad_oid`, `bad_ref` (not a valid full ref name), `bad_option`,
// `bad_remote_url` (unparsable, or a local path / file:// remote), `bad_author`, `repository`
// (local cache failures), `import_failed`.
// Messages include libgit2's git_error_last() text where libgit2 failed.

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bridge/credentials.h"
#include "bridge/limits.h"
#include "bridge/result.h"

struct git_repository;

namespace kakeya::bridge {

struct RemoteRef {
  std::string name;  // full ref name, e.g. refs/heads/kakeya/req/generate-ab12
  std::string oid;   // 40 hex chars
};

// What ls_remote left out of one advertisement (bridge/limits.h).
struct AdvertisementStats {
  std::size_t advertised = 0;        // refs matching the prefix before the limits
  std::size_t long_names = 0;        // left out: name longer than max_ref_name_bytes
  std::size_t over_count = 0;        // left out: beyond the first max_advertised_refs
};

struct CommitAuthor {
  std::string name, email;  // used as author and committer; time = now
  // When set, make_commit signs the commit with this SSH key the way git does with
  // gpg.format=ssh (bridge/ssh_signature.h: `ssh-keygen -Y sign -n git`, the armored SSHSIG in
  // the commit's gpgsig header), so `git verify-commit` with an allowed-signers file checks it.
  // A private key file, or a public key file whose private half is in ssh-agent. Empty: unsigned.
  std::filesystem::path signing_key;
};

// One commit as the cache holds it (read_commit).
struct CommitInfo {
  std::string oid;
  std::vector<std::string> parents;       // oids, in order
  std::string tree;                       // the root tree's oid
  int64_t committer_time = 0;             // the committer date, seconds since the Unix epoch
  std::string author_name, author_email;
  std::string summary;                    // the message's first line
  std::optional<std::string> signature;   // the gpgsig header's text; nullopt when unsigned
  std::string signed_payload;             // the commit without its gpgsig header: what the signature covers
};

// One compare-and-swap delete of delete_cas_many.
struct RefExpectation {
  std::string ref;           // full ref name
  std::string expected_old;  // the oid the deletion is conditional on
};

// One path edit for make_commit. `path` is '/'-separated, relative to the tree root, with no empty,
// "." , ".." or ".git" components. content = blob bytes (regular file, mode 100644); nullopt = delete
// (deleting an absent path is a no-op).
struct FileChange {
  std::string path;
  std::optional<std::string> content;
};

// Lost = the compare-and-swap did not happen (ref moved, already exists, or the server rejected the
// update). Not an error: the caller refetches and decides.
enum class PushOutcome { Won, Lost };

// Refspecs of one fetch download (a longer want list is split; 10 000 in one request broke the
// smart-HTTP connection in the fleet bench).
inline constexpr std::size_t kFetchBatchRefs = 1000;

struct GitBusOptions {
  int max_auth_attempts = 2;  // credential callback invocations per operation before `auth_failed`
  int op_timeout_s = 60;      // wall-clock budget of each network operation, seconds
  // Advertisement limits of ls_remote (bridge/limits.h; smaller values for tests).
  std::size_t max_ref_name_bytes = kMaxRefNameBytes;
  std::size_t max_advertised_refs = kMaxAdvertisedRefs;
};

// REQUIRES: external synchronization (one thread at a time per instance). Movable, not copyable;
// a moved-from instance must not be used.
// Distinct instances may be used from distinct threads concurrently (each with its own cache_dir).
class GitBus {
 public:
  // Opens (or creates with git_repository_init, bare) the cache repository at `cache_dir` and
  // remembers the remote. Does not touch the network. Applies creds.ca_bundle process-wide via
  // GIT_OPT_SET_SSL_CERT_LOCATIONS when non-empty. Local remotes (paths, file://) are refused: they
  // do not compare-and-swap. Errors: `repository`, `bad_remote_url`, `bad_option`, `transport`.
  static Result<GitBus> open(std::string remote_url, std::filesystem::path cache_dir, Credentials creds,
                             GitBusOptions opts = {});

  GitBus(GitBus&&) noexcept;
  GitBus& operator=(GitBus&&) noexcept;
  ~GitBus();

  // One advertisement (connect for fetch + git_remote_ls). Returns refs whose full name starts with
  // `prefix` (peeled "^{}" entries and HEAD excluded), in advertisement order. Limits
  // (GitBusOptions, bridge/limits.h), applied before anything else looks at the names: a ref name
  // longer than max_ref_name_bytes is left out, and at most max_advertised_refs refs are returned
  // (the first ones); `stats`, when given, says how many were left out and why.
  Result<std::vector<RemoteRef>> ls_remote(std::string_view prefix = "refs/heads/", AdvertisementStats* stats = nullptr);

  // Fetches the given full ref names (refs/heads/...) with explicit refspecs
  // `+refs/heads/x:refs/kakeya/remote/heads/x` into the cache: one advertisement, then only the
  // commits the cache lacks, one refspec per distinct commit, kFetchBatchRefs refspecs per
  // download (one connection for up to that many new commits; the tracking refs of refs whose
  // commit was already present are set directly). Returns ref -> oid for the refs the remote has;
  // refs absent on the remote are left out of the map (and their tracking refs in the cache are
  // deleted). An empty `refs` makes no connection.
  Result<std::map<std::string, std::string>> fetch(const std::vector<std::string>& refs);

  // Whether commit `commit_oid` and its root tree are in the cache and readable.
  // Errors: `bad_oid`, `not_fetched`, `repository`.
  Status check_commit(const std::string& commit_oid);

  // Content of the regular file at `path` in the tree of commit `commit_oid` (the commit must be
  // in the cache: fetch or make_commit first, else `not_fetched`). nullopt if the path, or one of
  // its leading directories, is absent. Only a blob entry with mode 100644 or 100755 is a file:
  // a directory, a symlink (120000: its target text is never read as content), a submodule
  // (gitlink 160000), any non-standard mode, a name that occurs twice in its tree, or a leading
  // component that is not a directory (mode 040000) is `bad_path`, naming the component and its
  // mode. A blob larger than `max_bytes` is `too_large` (its size is read from the object header;
  // the content is not read). Messages show path bytes with printable() (bridge/utf8.h).
  Result<std::optional<std::string>> read_file(const std::string& commit_oid, const std::string& path,
                                               std::size_t max_bytes = SIZE_MAX);

  // Every regular file (mode 100644/100755; symlinks and submodules are left out) under directory
  // `dir` ("" or "." = root) of the commit's tree, recursively, as full paths from the tree root
  // (e.g. ".kakeya/run/logs/run.log"), sorted. Empty if `dir` is absent; `bad_path` if it is a file.
  Result<std::vector<std::string>> list_dir(const std::string& commit_oid, const std::string& dir);

  // Writes a new commit to the cache (no ref is updated): tree = tree of `base_tree_from` (or the
  // empty tree if nullopt) with `changes` applied in order (later changes to the same path win;
  // nested paths create subtrees; subtrees left empty are removed), parent = `parent` (or none).
  // Trees are built with git_treebuilder; no work tree, no index. Returns the commit oid (hex).
  // Signed with author.signing_key when it is set (git_commit_create_buffer, ssh-keygen,
  // git_commit_create_with_signature).
  // Errors: `not_fetched` (parent/base missing), `bad_path`, `path_conflict` (a path used both as
  // a file and as a directory in `changes`), `repository`; signing: `not_found`, `child_failed`,
  // `timeout` (bridge/ssh_signature.h sign_with_ssh_keygen).
  Result<std::string> make_commit(std::optional<std::string> parent, std::optional<std::string> base_tree_from,
                                  const std::vector<FileChange>& changes, const std::string& message,
                                  const CommitAuthor& author);

  // Compare-and-swap `ref` (full name) from `expected_old` (nullopt = must not exist) to `new_oid`,
  // which must be in the cache and descend from expected_old (else `non_fast_forward`; never forced).
  // On one push connection: read the advertisement; if the remote's value != expected_old -> Lost
  // without uploading; else upload + update_tips and return Won only if the server reported this ref
  // with an OK status through push_update_reference (libgit2 1.5 returns 0 from the push even when a
  // ref is rejected). The server's receive-pack re-checks the old oid under its ref lock, so of two
  // racing pushers at most one wins. new_oid == expected_old -> Won without uploading.
  // Errors (not Lost): `auth_failed`, `timeout`, `transport`, `not_fetched`, `non_fast_forward`.
  Result<PushOutcome> push_cas(const std::string& ref, const std::string& new_oid,
                               const std::optional<std::string>& expected_old);

  // Compare-and-swap delete of `ref`: Lost if the remote's value != expected_old (including absent)
  // or the server rejects; Won if the server reported the deletion OK. Same errors as push_cas.
  Result<PushOutcome> delete_cas(const std::string& ref, const std::string& expected_old);

  // Many compare-and-swap deletes in ONE push (one connection, one advertisement): each ref whose
  // advertised value equals its expected_old is sent as a delete command whose old oid is that
  // value, so receive-pack still compares each ref under its own lock; the others are Lost without
  // being sent. Returns one outcome per input, in order (Won only where the server reported that
  // ref OK through push_update_reference). Non-atomic: one ref refused does not hold back the
  // others. A ref listed twice is `bad_value`. Errors for the whole batch: `bad_ref`, `bad_oid`,
  // `auth_failed`, `timeout`, `transport`.
  Result<std::vector<PushOutcome>> delete_cas_many(const std::vector<RefExpectation>& deletes);

  // The commit `commit_oid` from the cache: parents, tree, committer time, author, summary and,
  // when signed, the gpgsig header with the payload it covers (git_commit_extract_signature).
  // Errors: `bad_oid`, `not_fetched`, `repository`.
  Result<CommitInfo> read_commit(const std::string& commit_oid);

  // The oid of the entry at `path` (a blob or a subtree; "" = the root tree) in the commit's tree,
  // nullopt when absent. Errors: `bad_path`, `not_fetched`, `repository`.
  Result<std::optional<std::string>> entry_oid(const std::string& commit_oid, const std::string& path);

  // The paths of files (blobs and links) that differ between the trees of `from_commit` and
  // `to_commit` (added, deleted, modified or changed in mode), sorted. Errors: `not_fetched`,
  // `repository`.
  Result<std::vector<std::string>> changed_paths(const std::string& from_commit, const std::string& to_commit);

  // Copies commit `oid` of the local repository at `repo_path` (work tree or bare; an annotated tag
  // is peeled to its commit) with its history and all trees and blobs into the cache odb, skipping
  // objects already there; gitlinks (submodules) are not followed. Parents are written before
  // children, so an interrupted import never leaves a commit without its ancestry.
  // Errors: `import_failed` (cannot open repo, oid not a commit), `bad_oid`, `repository`.
  Result<Ok> import_objects(const std::filesystem::path& repo_path, const std::string& oid);

  // The remote URL exactly as given to open() (may contain userinfo: redact_url() before logging).
  const std::string& remote_url() const;

 private:
  struct RepoDeleter {
    void operator()(git_repository* r) const;
  };
  GitBus(std::string remote_url, std::filesystem::path cache_dir, Credentials creds, GitBusOptions opts,
         std::unique_ptr<git_repository, RepoDeleter> repo);

  std::string remote_url_;
  std::filesystem::path cache_dir_;
  Credentials creds_;
  GitBusOptions opts_;
  std::unique_ptr<git_repository, RepoDeleter> repo_;
};

// Tracking ref in the cache for a remote ref: refs/heads/x -> refs/kakeya/remote/heads/x.
std::string tracking_ref(const std::string& remote_ref);

}  // namespace kakeya::bridge
