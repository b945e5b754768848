// GitBus object-level operations on the cache repository: reading trees, building commits with
// git_treebuilder (no index, no work tree) and importing objects from another local repository.

#include <git2.h>

#include <algorithm>
#include <cstdio>
#include <map>

#include "bridge/git_tree_raw.h"
#include "bridge/git_util.h"
#include "bridge/gitbus.h"
#include "bridge/ssh_signature.h"
#include "bridge/utf8.h"

namespace kakeya::bridge {
namespace {

Result<std::vector<std::string>> split_path(const std::string& path) {
  std::vector<std::string> parts;
  if (path.empty()) return make_error(errc::kBadPath, "path is empty");
  if (path.find('\0') != std::string::npos) return make_error(errc::kBadPath, "path contains a NUL byte");
  size_t start = 0;
  while (true) {
    size_t slash = path.find('/', start);
    std::string part = path.substr(start, slash == std::string::npos ? std::string::npos : slash - start);
    if (part.empty() || part == "." || part == ".." || part == ".git") {
      return make_error(errc::kBadPath, "path '" + printable(path) + "' has an empty, '.', '..' or '.git' component");
    }
    parts.push_back(std::move(part));
    if (slash == std::string::npos) break;
    start = slash + 1;
  }
  return parts;
}

Result<git::Commit> lookup_commit(git_repository* repo, const std::string& hex, const std::string& field) {
  KAKEYA_ASSIGN_OR_RETURN(git_oid id, git::parse_oid(hex, field));
  git_commit* c = nullptr;
  if (git_commit_lookup(&c, repo, &id) != 0) {
    return git::last_error(errc::kNotFetched, field + " " + hex + " is not a commit in the cache repository");
  }
  return git::Commit(c);
}

Result<git::Tree> commit_tree(git_repository* repo, const std::string& hex, const std::string& field) {
  KAKEYA_ASSIGN_OR_RETURN(git::Commit commit, lookup_commit(repo, hex, field));
  git_tree* t = nullptr;
  if (git_commit_tree(&t, commit.get()) != 0) return git::last_error(errc::kRepository, "tree of " + field + " " + hex);
  return git::Tree(t);
}

// Changes below one tree level, grouped by first path component.
struct Level {
  std::map<std::string, const FileChange*> files;          // leaf edits at this level (last wins)
  std::map<std::string, std::vector<std::pair<std::vector<std::string>, const FileChange*>>> dirs;
};

// Applies `edits` (remaining path components + change) to `base` (may be null); writes the new
// tree and returns its oid, or nullopt when the resulting tree is empty.
Result<std::optional<git_oid>> apply_level(git_repository* repo, const git_tree* base,
                                           const std::vector<std::pair<std::vector<std::string>, const FileChange*>>& edits,
                                           const std::string& prefix) {
  Level level;
  for (const auto& [parts, change] : edits) {
    if (parts.size() == 1) {
      level.files[parts[0]] = change;
    } else {
      level.dirs[parts[0]].emplace_back(std::vector<std::string>(parts.begin() + 1, parts.end()), change);
    }
  }
  git_treebuilder* tb_raw = nullptr;
  if (git_treebuilder_new(&tb_raw, repo, base) != 0) return git::last_error(errc::kRepository, "treebuilder");
  git::TreeBuilder tb(tb_raw);

  for (const auto& [name, change] : level.files) {
    if (level.dirs.count(name) != 0) {
      return make_error(errc::kPathConflict, "'" + prefix + name + "' is used both as a file and as a directory");
    }
    if (!change->content) {
      if (git_treebuilder_get(tb.get(), name.c_str()) != nullptr &&
          git_treebuilder_remove(tb.get(), name.c_str()) != 0) {
        return git::last_error(errc::kRepository, "remove '" + prefix + name + "'");
      }
      continue;
    }
    git_oid blob;
    if (git_blob_create_from_buffer(&blob, repo, change->content->data(), change->content->size()) != 0) {
      return git::last_error(errc::kRepository, "write blob '" + prefix + name + "'");
    }
    if (git_treebuilder_insert(nullptr, tb.get(), name.c_str(), &blob, GIT_FILEMODE_BLOB) != 0) {
      return git::last_error(errc::kRepository, "insert '" + prefix + name + "'");
    }
  }
  for (const auto& [name, sub_edits] : level.dirs) {
    git::Tree sub_base;
    const git_tree_entry* e = git_treebuilder_get(tb.get(), name.c_str());
    if (e != nullptr && git_tree_entry_type(e) == GIT_OBJECT_TREE) {
      git_tree* t = nullptr;
      if (git_tree_lookup(&t, repo, git_tree_entry_id(e)) != 0) {
        return git::last_error(errc::kNotFetched, "subtree '" + prefix + name + "'");
      }
      sub_base.reset(t);
    }
    KAKEYA_ASSIGN_OR_RETURN(std::optional<git_oid> sub, apply_level(repo, sub_base.get(), sub_edits, prefix + name + "/"));
    if (sub) {
      if (git_treebuilder_insert(nullptr, tb.get(), name.c_str(), &*sub, GIT_FILEMODE_TREE) != 0) {
        return git::last_error(errc::kRepository, "insert tree '" + prefix + name + "'");
      }
    } else if (e != nullptr && git_treebuilder_remove(tb.get(), name.c_str()) != 0) {
      return git::last_error(errc::kRepository, "remove empty tree '" + prefix + name + "'");
    }
  }
  if (git_treebuilder_entrycount(tb.get()) == 0 && !prefix.empty()) return std::optional<git_oid>();
  git_oid out;
  if (git_treebuilder_write(&out, tb.get()) != 0) return git::last_error(errc::kRepository, "write tree '" + prefix + "'");
  return std::optional<git_oid>(out);
}

struct WalkState {
  std::string dir_prefix;  // "" or "dir/"
  std::vector<std::string>* out;
};

int collect_blob(const char* root, const git_tree_entry* entry, void* payload) {
  auto* st = static_cast<WalkState*>(payload);
  const unsigned mode = git_tree_entry_filemode_raw(entry);
  if (mode == GIT_FILEMODE_BLOB || mode == GIT_FILEMODE_BLOB_EXECUTABLE) {
    st->out->push_back(st->dir_prefix + root + git_tree_entry_name(entry));
  }
  return 0;
}

// Copies one object from `src` to `dst` unless present.
Status copy_object(git_odb* src, git_odb* dst, const git_oid& id) {
  if (git_odb_exists(dst, &id) != 0) return ok_status();
  git_odb_object* raw = nullptr;
  if (git_odb_read(&raw, src, &id) != 0) return git::last_error(errc::kImportFailed, "read object " + git::to_hex(id));
  git::OdbObject obj(raw);
  git_oid written;
  if (git_odb_write(&written, dst, git_odb_object_data(obj.get()), git_odb_object_size(obj.get()),
                    git_odb_object_type(obj.get())) != 0) {
    return git::last_error(errc::kRepository, "write object " + git::to_hex(id));
  }
  return ok_status();
}

// Copies tree `id` and everything below it (blobs first, the tree itself last); skips present trees.
Status copy_tree(git_repository* src_repo, git_odb* src, git_odb* dst, const git_oid& id) {
  if (git_odb_exists(dst, &id) != 0) return ok_status();
  git_tree* raw = nullptr;
  if (git_tree_lookup(&raw, src_repo, &id) != 0) return git::last_error(errc::kImportFailed, "tree " + git::to_hex(id));
  git::Tree tree(raw);
  for (size_t i = 0; i < git_tree_entrycount(tree.get()); ++i) {
    const git_tree_entry* e = git_tree_entry_byindex(tree.get(), i);
    switch (git_tree_entry_type(e)) {
      case GIT_OBJECT_TREE:
        KAKEYA_TRY(copy_tree(src_repo, src, dst, *git_tree_entry_id(e)));
        break;
      case GIT_OBJECT_BLOB:
        KAKEYA_TRY(copy_object(src, dst, *git_tree_entry_id(e)));
        break;
      default:  // gitlink (submodule commit): lives in another repository
        break;
    }
  }
  return copy_object(src, dst, id);
}


std::string short_oid(const std::string& hex) { return hex.substr(0, 12); }

// What a tree entry's mode makes it, for messages: "a regular file (mode 100644)", "a symlink
// (mode 120000)", "a submodule (gitlink, mode 160000)", "a directory (mode 040000)", or "an
// entry with the non-standard mode 100664" (the mode as written in the tree).
std::string describe_mode(const git::RawTreeEntry& e) {
  char octal[16];
  std::snprintf(octal, sizeof octal, "%06o", e.mode);
  switch (e.mode) {
    case GIT_FILEMODE_BLOB:
    case GIT_FILEMODE_BLOB_EXECUTABLE:
      return std::string("a regular file (mode ") + octal + ")";
    case GIT_FILEMODE_TREE:
      return std::string("a directory (mode ") + octal + ")";
    case GIT_FILEMODE_LINK:
      return std::string("a symlink (mode ") + octal + ")";
    case GIT_FILEMODE_COMMIT:
      return std::string("a submodule (gitlink, mode ") + octal + ")";
    default:
      return "an entry with the non-standard mode " + printable(e.mode_text, 16);
  }
}

// The raw tree object `id`, parsed with git's rules (bridge/git_tree_raw.h). `shown` names the
// directory in messages ("" = the root tree), `path` the file being read.
Result<std::vector<git::RawTreeEntry>> read_raw_tree(git_odb* odb, const git_oid& id, const std::string& shown,
                                                     const std::string& commit_oid, const std::string& path) {
  const std::string what = (shown.empty() ? "the root tree" : "'" + printable(shown) + "'") + " (reading '" +
                           printable(path) + "')";
  git_odb_object* raw = nullptr;
  if (git_odb_read(&raw, odb, &id) != 0) {
    return git::last_error(errc::kNotFetched, what + " of commit " + short_oid(commit_oid) + " (" + git::to_hex(id) + ")");
  }
  git::OdbObject obj(raw);
  if (git_odb_object_type(obj.get()) != GIT_OBJECT_TREE) {
    return make_error(errc::kBadPath, what + " in commit " + short_oid(commit_oid) + " names a " +
                                      git_object_type2string(git_odb_object_type(obj.get())) + " object, not a tree");
  }
  auto entries = git::parse_tree_entries(
      std::string_view(static_cast<const char*>(git_odb_object_data(obj.get())), git_odb_object_size(obj.get())));
  if (!entries.ok()) {
    return make_error(errc::kBadPath, what + " in commit " + short_oid(commit_oid) + " is not a well-formed tree: " +
                                      entries.error().message);
  }
  return std::move(entries).value();
}

// The entry named `name` among `entries`, nullopt when absent. Trees written by git hold each
// name once; a hand-made tree may repeat a name (and then a checkout and a lookup can disagree on
// which one counts), so a repeated name is `bad_path`.
Result<std::optional<git::RawTreeEntry>> find_unique_entry(const std::vector<git::RawTreeEntry>& entries,
                                                           const std::string& name, const std::string& shown,
                                                           const std::string& commit_oid) {
  std::optional<git::RawTreeEntry> found;
  for (const auto& e : entries) {
    if (e.name != name) continue;
    if (found) {
      return make_error(errc::kBadPath, "'" + printable(shown) + "' appears more than once in its tree in commit " +
                                        short_oid(commit_oid));
    }
    found = e;
  }
  return found;
}

// The blob `id` (named `shown` in messages) if its size, read from the object header, is at most
// `max_bytes`.
Result<std::optional<std::string>> read_blob_bounded(git_odb* odb, git_repository* repo, const git_oid& id,
                                                     const std::string& shown, std::size_t max_bytes) {
  std::size_t size = 0;
  git_object_t type = GIT_OBJECT_INVALID;
  if (git_odb_read_header(&size, &type, odb, &id) != 0) {
    return git::last_error(errc::kNotFetched, "blob '" + printable(shown) + "' (" + git::to_hex(id) + ")");
  }
  if (type != GIT_OBJECT_BLOB) {
    return make_error(errc::kBadPath, "'" + printable(shown) + "' names a " + git_object_type2string(type) +
                                      " object, not a blob");
  }
  if (size > max_bytes) {
    return make_error(errc::kTooLarge, "'" + printable(shown) + "' is " + std::to_string(size) +
                                       " bytes, more than the limit of " + std::to_string(max_bytes));
  }
  git_blob* blob = nullptr;
  if (git_blob_lookup(&blob, repo, &id) != 0) return git::last_error(errc::kNotFetched, "blob '" + printable(shown) + "'");
  std::string content(static_cast<const char*>(git_blob_rawcontent(blob)), static_cast<std::size_t>(git_blob_rawsize(blob)));
  git_blob_free(blob);
  return std::optional<std::string>(std::move(content));
}

}  // namespace

Status GitBus::check_commit(const std::string& commit_oid) {
  KAKEYA_ASSIGN_OR_RETURN(git::Commit commit, lookup_commit(repo_.get(), commit_oid, "commit_oid"));
  git_odb* odb_raw = nullptr;
  if (git_repository_odb(&odb_raw, repo_.get()) != 0) return git::last_error(errc::kRepository, "cache odb");
  git::Odb odb(odb_raw);
  if (git_odb_exists(odb.get(), git_commit_tree_id(commit.get())) == 0) {
    return make_error(errc::kNotFetched, "the tree of commit " + commit_oid + " is not in the cache repository");
  }
  return ok_status();
}

Result<std::optional<std::string>> GitBus::read_file(const std::string& commit_oid, const std::string& path,
                                                     std::size_t max_bytes) {
  KAKEYA_ASSIGN_OR_RETURN(std::vector<std::string> parts, split_path(path));
  KAKEYA_ASSIGN_OR_RETURN(git::Commit commit, lookup_commit(repo_.get(), commit_oid, "commit_oid"));
  git_odb* odb_raw = nullptr;
  if (git_repository_odb(&odb_raw, repo_.get()) != 0) return git::last_error(errc::kRepository, "cache odb");
  git::Odb odb(odb_raw);
  git_oid tree = *git_commit_tree_id(commit.get());
  std::string shown;  // the path walked so far, for messages
  for (std::size_t i = 0; i < parts.size(); ++i) {
    KAKEYA_ASSIGN_OR_RETURN(std::vector<git::RawTreeEntry> entries, read_raw_tree(odb.get(), tree, shown, commit_oid, path));
    shown += (i == 0 ? "" : "/") + parts[i];
    KAKEYA_ASSIGN_OR_RETURN(std::optional<git::RawTreeEntry> e, find_unique_entry(entries, parts[i], shown, commit_oid));
    if (!e) return std::optional<std::string>();
    if (i + 1 < parts.size()) {
      if (e->mode != GIT_FILEMODE_TREE) {
        return make_error(errc::kBadPath, "'" + printable(shown) + "' in commit " + short_oid(commit_oid) + " is " +
                                          describe_mode(*e) + ", not a directory (reading '" + printable(path) + "')");
      }
      tree = e->id;
      continue;
    }
    if (e->mode != GIT_FILEMODE_BLOB && e->mode != GIT_FILEMODE_BLOB_EXECUTABLE) {
      return make_error(errc::kBadPath, "'" + printable(shown) + "' in commit " + short_oid(commit_oid) + " is " +
                                        describe_mode(*e) + ", not a regular file (mode 100644 or 100755)");
    }
    return read_blob_bounded(odb.get(), repo_.get(), e->id, shown, max_bytes);
  }
  return std::optional<std::string>();  // unreachable: split_path returns at least one part
}

Result<std::vector<std::string>> GitBus::list_dir(const std::string& commit_oid, const std::string& dir) {
  KAKEYA_ASSIGN_OR_RETURN(git::Tree root, commit_tree(repo_.get(), commit_oid, "commit_oid"));
  std::vector<std::string> out;
  std::string clean = dir;
  while (!clean.empty() && clean.back() == '/') clean.pop_back();
  git::Tree sub;
  const git_tree* walk_root = root.get();
  WalkState st{"", &out};
  if (!clean.empty() && clean != ".") {
    KAKEYA_ASSIGN_OR_RETURN(std::vector<std::string> parts, split_path(clean));
    (void)parts;
    git_tree_entry* raw = nullptr;
    int rc = git_tree_entry_bypath(&raw, root.get(), clean.c_str());
    if (rc == GIT_ENOTFOUND) return out;
    if (rc != 0) return git::last_error(errc::kRepository, "look up '" + clean + "' in " + commit_oid);
    git::TreeEntry entry(raw);
    if (git_tree_entry_type(entry.get()) != GIT_OBJECT_TREE) {
      return make_error(errc::kBadPath, "'" + clean + "' in commit " + commit_oid + " is not a directory");
    }
    git_tree* t = nullptr;
    if (git_tree_lookup(&t, repo_.get(), git_tree_entry_id(entry.get())) != 0) {
      return git::last_error(errc::kNotFetched, "tree '" + clean + "' of " + commit_oid);
    }
    sub.reset(t);
    walk_root = sub.get();
    st.dir_prefix = clean + "/";
  }
  if (git_tree_walk(walk_root, GIT_TREEWALK_PRE, collect_blob, &st) != 0) {
    return git::last_error(errc::kRepository, "walk '" + clean + "' of " + commit_oid);
  }
  std::sort(out.begin(), out.end());
  return out;
}

Result<std::string> GitBus::make_commit(std::optional<std::string> parent, std::optional<std::string> base_tree_from,
                                        const std::vector<FileChange>& changes, const std::string& message,
                                        const CommitAuthor& author) {
  std::vector<std::pair<std::vector<std::string>, const FileChange*>> edits;
  for (const auto& c : changes) {
    KAKEYA_ASSIGN_OR_RETURN(std::vector<std::string> parts, split_path(c.path));
    edits.emplace_back(std::move(parts), &c);
  }
  git::Tree base;
  if (base_tree_from) {
    KAKEYA_ASSIGN_OR_RETURN(base, commit_tree(repo_.get(), *base_tree_from, "base_tree_from"));
  }
  git::Commit parent_commit;
  if (parent) {
    KAKEYA_ASSIGN_OR_RETURN(parent_commit, lookup_commit(repo_.get(), *parent, "parent"));
  }
  KAKEYA_ASSIGN_OR_RETURN(std::optional<git_oid> tree_id, apply_level(repo_.get(), base.get(), edits, ""));
  git_tree* tree_raw = nullptr;
  if (git_tree_lookup(&tree_raw, repo_.get(), &*tree_id) != 0) return git::last_error(errc::kRepository, "new tree");
  git::Tree tree(tree_raw);

  git_signature* sig_raw = nullptr;
  if (git_signature_now(&sig_raw, author.name.c_str(), author.email.c_str()) != 0) {
    return git::last_error(errc::kBadAuthor, "author '" + author.name + " <" + author.email + ">'");
  }
  git::Signature sig(sig_raw);
  const git_commit* parents[1] = {parent_commit.get()};
  git_oid id;
  if (author.signing_key.empty()) {
    if (git_commit_create(&id, repo_.get(), nullptr, sig.get(), sig.get(), nullptr, message.c_str(), tree.get(),
                          parent_commit ? 1 : 0, parents) != 0) {
      return git::last_error(errc::kRepository, "create commit");
    }
    return git::to_hex(id);
  }
  git_buf buf = GIT_BUF_INIT;
  if (git_commit_create_buffer(&buf, repo_.get(), sig.get(), sig.get(), nullptr, message.c_str(), tree.get(),
                               parent_commit ? 1 : 0, parents) != 0) {
    return git::last_error(errc::kRepository, "create commit buffer");
  }
  const std::string payload(buf.ptr, buf.size);
  git_buf_dispose(&buf);
  KAKEYA_ASSIGN_OR_RETURN(std::string armored, sign_with_ssh_keygen(author.signing_key, kGitSignatureNamespace, payload));
  if (git_commit_create_with_signature(&id, repo_.get(), payload.c_str(), armored.c_str(), "gpgsig") != 0) {
    return git::last_error(errc::kRepository, "create signed commit");
  }
  return git::to_hex(id);
}

Result<CommitInfo> GitBus::read_commit(const std::string& commit_oid) {
  KAKEYA_ASSIGN_OR_RETURN(git::Commit commit, lookup_commit(repo_.get(), commit_oid, "commit_oid"));
  CommitInfo info;
  info.oid = git::to_hex(*git_commit_id(commit.get()));
  for (unsigned i = 0; i < git_commit_parentcount(commit.get()); ++i) {
    info.parents.push_back(git::to_hex(*git_commit_parent_id(commit.get(), i)));
  }
  info.tree = git::to_hex(*git_commit_tree_id(commit.get()));
  if (const git_signature* c = git_commit_committer(commit.get())) info.committer_time = c->when.time;
  if (const git_signature* a = git_commit_author(commit.get())) {
    info.author_name = a->name != nullptr ? a->name : "";
    info.author_email = a->email != nullptr ? a->email : "";
  }
  if (const char* summary = git_commit_summary(commit.get())) info.summary = summary;
  git_buf sig = GIT_BUF_INIT, payload = GIT_BUF_INIT;
  const int rc = git_commit_extract_signature(&sig, &payload, repo_.get(), const_cast<git_oid*>(git_commit_id(commit.get())),
                                              nullptr);
  if (rc == 0) {
    info.signature = std::string(sig.ptr, sig.size);
    info.signed_payload.assign(payload.ptr, payload.size);
  }
  git_buf_dispose(&sig);
  git_buf_dispose(&payload);
  if (rc != 0 && rc != GIT_ENOTFOUND) return git::last_error(errc::kRepository, "read the signature of " + commit_oid);
  return info;
}

Result<std::optional<std::string>> GitBus::entry_oid(const std::string& commit_oid, const std::string& path) {
  KAKEYA_ASSIGN_OR_RETURN(git::Tree root, commit_tree(repo_.get(), commit_oid, "commit_oid"));
  if (path.empty()) return std::optional<std::string>(git::to_hex(*git_tree_id(root.get())));
  KAKEYA_TRY(split_path(path));
  git_tree_entry* raw = nullptr;
  const int rc = git_tree_entry_bypath(&raw, root.get(), path.c_str());
  if (rc == GIT_ENOTFOUND) return std::optional<std::string>();
  if (rc != 0) return git::last_error(errc::kRepository, "look up '" + printable(path) + "' in " + commit_oid);
  git::TreeEntry entry(raw);
  return std::optional<std::string>(git::to_hex(*git_tree_entry_id(entry.get())));
}

Result<std::vector<std::string>> GitBus::changed_paths(const std::string& from_commit, const std::string& to_commit) {
  KAKEYA_ASSIGN_OR_RETURN(git::Tree from, commit_tree(repo_.get(), from_commit, "from_commit"));
  KAKEYA_ASSIGN_OR_RETURN(git::Tree to, commit_tree(repo_.get(), to_commit, "to_commit"));
  git_diff* raw = nullptr;
  if (git_diff_tree_to_tree(&raw, repo_.get(), from.get(), to.get(), nullptr) != 0) {
    return git::last_error(errc::kRepository, "diff " + from_commit + " " + to_commit);
  }
  std::unique_ptr<git_diff, decltype(&git_diff_free)> diff(raw, &git_diff_free);
  std::vector<std::string> out;
  for (std::size_t i = 0; i < git_diff_num_deltas(diff.get()); ++i) {
    const git_diff_delta* d = git_diff_get_delta(diff.get(), i);
    out.emplace_back(d->new_file.path != nullptr ? d->new_file.path : d->old_file.path);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

Result<Ok> GitBus::import_objects(const std::filesystem::path& repo_path, const std::string& oid) {
  KAKEYA_ASSIGN_OR_RETURN(git_oid id, git::parse_oid(oid, "oid"));
  git_repository* src_raw = nullptr;
  if (git_repository_open_ext(&src_raw, repo_path.c_str(), GIT_REPOSITORY_OPEN_NO_SEARCH, nullptr) != 0) {
    return git::last_error(errc::kImportFailed, "open repository '" + repo_path.string() + "'");
  }
  git::Repository src(src_raw);
  git_object* obj_raw = nullptr;
  if (git_object_lookup(&obj_raw, src.get(), &id, GIT_OBJECT_ANY) != 0) {
    return git::last_error(errc::kImportFailed, "object " + oid + " in '" + repo_path.string() + "'");
  }
  git::Object obj(obj_raw);
  git_object* peeled_raw = nullptr;
  if (git_object_peel(&peeled_raw, obj.get(), GIT_OBJECT_COMMIT) != 0) {
    return git::last_error(errc::kImportFailed, "object " + oid + " in '" + repo_path.string() + "' is not a commit");
  }
  git::Object peeled(peeled_raw);
  git_oid commit_id = *git_object_id(peeled.get());

  git_odb *src_odb_raw = nullptr, *dst_odb_raw = nullptr;
  if (git_repository_odb(&src_odb_raw, src.get()) != 0) return git::last_error(errc::kImportFailed, "source odb");
  git::Odb src_odb(src_odb_raw);
  if (git_repository_odb(&dst_odb_raw, repo_.get()) != 0) return git::last_error(errc::kRepository, "cache odb");
  git::Odb dst_odb(dst_odb_raw);
  if (git_odb_exists(dst_odb.get(), &commit_id) != 0) return Ok{};

  git_revwalk* walk_raw = nullptr;
  if (git_revwalk_new(&walk_raw, src.get()) != 0) return git::last_error(errc::kImportFailed, "revwalk");
  git::Revwalk walk(walk_raw);
  git_revwalk_sorting(walk.get(), GIT_SORT_TOPOLOGICAL | GIT_SORT_REVERSE);  // parents first
  if (git_revwalk_push(walk.get(), &commit_id) != 0) return git::last_error(errc::kImportFailed, "revwalk push " + oid);
  git_oid c;
  int rc;
  while ((rc = git_revwalk_next(&c, walk.get())) == 0) {
    if (git_odb_exists(dst_odb.get(), &c) != 0) continue;
    git_commit* commit = nullptr;
    if (git_commit_lookup(&commit, src.get(), &c) != 0) return git::last_error(errc::kImportFailed, "commit " + git::to_hex(c));
    git::Commit owned(commit);
    KAKEYA_TRY(copy_tree(src.get(), src_odb.get(), dst_odb.get(), *git_commit_tree_id(owned.get())));
    KAKEYA_TRY(copy_object(src_odb.get(), dst_odb.get(), c));
  }
  if (rc != GIT_ITEROVER) return git::last_error(errc::kImportFailed, "revwalk from " + oid);
  return Ok{};
}

}  // namespace kakeya::bridge
