// GitBus: cache repository and the network operations (ls_remote, fetch, compare-and-swap push).
// Object-level operations (read_file, list_dir, make_commit, import_objects) are in gitbus_objects.cpp.

#include "bridge/gitbus.h"

#include <git2.h>

#include <set>
#include <unordered_map>

#include "bridge/git_session.h"
#include "bridge/git_util.h"
#include "bridge/limits.h"
#include "bridge/utf8.h"

namespace kakeya::bridge {
namespace {

// Local refs that name the commits being pushed (libgit2 1.5 resolves a push source as a ref
// name): refs/kakeya/push/<i> for the i-th update of one push.
constexpr const char* kPushSourcePrefix = "refs/kakeya/push/";

Status check_full_ref(const std::string& ref) {
  if (ref.rfind("refs/", 0) != 0 || git_reference_is_valid_name(ref.c_str()) == 0) {
    return make_error(errc::kBadRef, "ref '" + printable(ref) + "' is not a valid full ref name (refs/...)");
  }
  return ok_status();
}

Status check_remote_url(const std::string& url) {
  KAKEYA_ASSIGN_OR_RETURN(UrlParts parts, parse_url(url));
  if (parts.scheme == "file") {
    return make_error(errc::kBadRemoteUrl, "remote URL '" + redact_url(url) +
                                            "' is local: local remotes do not compare-and-swap, use a git server");
  }
  return ok_status();
}

// name -> oid of an advertisement (views into `adv`), for lookups of many refs.
std::unordered_map<std::string_view, std::string_view> index_refs(const std::vector<RemoteRef>& adv) {
  std::unordered_map<std::string_view, std::string_view> out;
  out.reserve(adv.size());
  for (const auto& r : adv) out.emplace(r.name, r.oid);
  return out;
}

// One compare-and-swap ref update of a push: `new_id` nullopt = delete.
struct CasUpdate {
  std::string ref;
  std::optional<git_oid> new_id;
  std::optional<std::string> expected_old;  // nullopt = the ref must not exist
};

// The compare-and-swap updates of `updates` on ONE push connection: the advertisement is read
// once; an update whose ref is not at expected_old there is Lost without being sent (and a
// no-op update whose new_id equals expected_old is Won without being sent); the rest go in one
// git_remote_upload with one refspec each (never '+'), so the commands carry the advertised old
// oids and receive-pack compares each under its ref lock. Outcomes in input order.
Result<std::vector<PushOutcome>> push_updates(git_repository* repo, const std::string& url, const Credentials& creds,
                                              const GitBusOptions& opts, const std::vector<CasUpdate>& updates) {
  std::vector<PushOutcome> out(updates.size(), PushOutcome::Lost);
  KAKEYA_ASSIGN_OR_RETURN(auto session, RemoteSession::connect(repo, url, creds, opts, GIT_DIRECTION_PUSH));
  KAKEYA_ASSIGN_OR_RETURN(std::vector<RemoteRef> adv, session->advertisement());
  const auto advertised = index_refs(adv);

  std::vector<std::string> specs;
  std::vector<std::size_t> sent;  // index into updates of each spec
  std::vector<std::string> source_refs;
  for (std::size_t i = 0; i < updates.size(); ++i) {
    const CasUpdate& u = updates[i];
    const auto it = advertised.find(u.ref);
    const std::optional<std::string> current =
        it == advertised.end() ? std::nullopt : std::optional<std::string>(it->second);
    if (current != u.expected_old) continue;  // Lost: moved, gone, or already there
    if (u.new_id && u.expected_old && git::to_hex(*u.new_id) == *u.expected_old) {
      out[i] = PushOutcome::Won;
      continue;
    }
    std::string spec = ":" + u.ref;
    if (u.new_id) {
      const std::string source = kPushSourcePrefix + std::to_string(source_refs.size());
      git_reference* tmp = nullptr;
      if (git_reference_create(&tmp, repo, source.c_str(), &*u.new_id, 1, "kakeya push") != 0) {
        return git::last_error(errc::kRepository, "create push source ref " + source);
      }
      git_reference_free(tmp);
      source_refs.push_back(source);
      spec = source + ":" + u.ref;  // no '+': never forced
    }
    specs.push_back(std::move(spec));
    sent.push_back(i);
  }
  if (specs.empty()) return out;

  std::vector<char*> spec_ptrs;
  for (auto& sp : specs) spec_ptrs.push_back(sp.data());
  git_strarray arr{spec_ptrs.data(), spec_ptrs.size()};
  git_push_options po;
  git_push_options_init(&po, GIT_PUSH_OPTIONS_VERSION);
  po.callbacks = session->callbacks();
  po.pb_parallelism = 1;
  const int rc = git_remote_upload(session->remote(), &arr, &po);
  for (const auto& source : source_refs) {
    git_reference* tmp = nullptr;
    if (git_reference_lookup(&tmp, repo, source.c_str()) == 0) {
      git_reference_delete(tmp);
      git_reference_free(tmp);
    }
  }
  if (rc < 0) {
    const std::string what = updates.size() == 1 ? "push " + printable(updates[0].ref)
                                                 : "push of " + std::to_string(specs.size()) + " ref updates";
    if (session->transport_failed()) return session->failure(errc::kTransport, what);
    return out;  // ref-level refusal (e.g. non-fast-forward found during negotiation): all Lost
  }
  // Won or not is already decided by the server's report; updating local tips is best effort.
  (void)git_remote_update_tips(session->remote(), &session->callbacks(), 0, GIT_REMOTE_DOWNLOAD_TAGS_UNSPECIFIED,
                               nullptr);
  for (std::size_t i : sent) {
    auto it = session->push_status().find(updates[i].ref);
    out[i] = (it != session->push_status().end() && !it->second) ? PushOutcome::Won : PushOutcome::Lost;
  }
  return out;
}

Result<PushOutcome> push_update(git_repository* repo, const std::string& url, const Credentials& creds,
                                const GitBusOptions& opts, CasUpdate update) {
  KAKEYA_ASSIGN_OR_RETURN(std::vector<PushOutcome> out, push_updates(repo, url, creds, opts, {std::move(update)}));
  return out.front();
}

// Deletes the cache's tracking refs (refs/kakeya/remote/...) of refs the remote no longer
// advertises. Besides tidiness this keeps fetches possible: a stale refs/kakeya/remote/heads/a/b
// (branch a/b deleted on the remote) would otherwise block the tracking ref of a new branch `a`
// (a file and a directory of the same name), and with it every fetch that includes `a`.
Status prune_tracking_refs(git_repository* repo, const std::vector<RemoteRef>& adv) {
  std::set<std::string> live;
  for (const auto& r : adv) live.insert(tracking_ref(r.name));
  git_reference_iterator* it_raw = nullptr;
  if (git_reference_iterator_new(&it_raw, repo) != 0) {
    return git::last_error(errc::kRepository, "list tracking refs");
  }
  std::vector<std::string> stale;
  git_reference* ref = nullptr;
  while (git_reference_next(&ref, it_raw) == 0) {
    const std::string name = git_reference_name(ref);
    if (name.starts_with("refs/kakeya/remote/") && !live.count(name)) stale.push_back(name);
    git_reference_free(ref);
  }
  git_reference_iterator_free(it_raw);
  for (const auto& name : stale) {
    git_reference* r = nullptr;
    if (git_reference_lookup(&r, repo, name.c_str()) == 0) {
      git_reference_delete(r);
      git_reference_free(r);
    }
  }
  return ok_status();
}

}  // namespace

void GitBus::RepoDeleter::operator()(git_repository* r) const {
  if (r != nullptr) git_repository_free(r);
}

GitBus::GitBus(std::string remote_url, std::filesystem::path cache_dir, Credentials creds, GitBusOptions opts,
               std::unique_ptr<git_repository, RepoDeleter> repo)
    : remote_url_(std::move(remote_url)),
      cache_dir_(std::move(cache_dir)),
      creds_(std::move(creds)),
      opts_(opts),
      repo_(std::move(repo)) {}

GitBus::GitBus(GitBus&&) noexcept = default;
GitBus& GitBus::operator=(GitBus&&) noexcept = default;
GitBus::~GitBus() = default;

Result<GitBus> GitBus::open(std::string remote_url, std::filesystem::path cache_dir, Credentials creds,
                            GitBusOptions opts) {
  git::ensure_init();
  KAKEYA_TRY(check_remote_url(remote_url));
  if (opts.max_auth_attempts < 1 || opts.op_timeout_s < 1) {
    return make_error(errc::kBadValue, "GitBusOptions max_auth_attempts=" + std::to_string(opts.max_auth_attempts) +
                                        " op_timeout_s=" + std::to_string(opts.op_timeout_s) + " must both be >= 1");
  }
  if (!creds.ca_bundle.empty() &&
      git_libgit2_opts(GIT_OPT_SET_SSL_CERT_LOCATIONS, creds.ca_bundle.c_str(), nullptr) != 0) {
    return git::last_error(errc::kTransport, "set CA bundle '" + creds.ca_bundle + "'");
  }
  std::error_code ec;
  git_repository* raw = nullptr;
  if (std::filesystem::exists(cache_dir / "HEAD", ec)) {
    if (git_repository_open_bare(&raw, cache_dir.c_str()) != 0) {
      return git::last_error(errc::kRepository, "open cache repository '" + cache_dir.string() + "'");
    }
  } else {
    std::filesystem::create_directories(cache_dir, ec);
    if (ec) return make_error(errc::kRepository, "create cache dir '" + cache_dir.string() + "': " + ec.message());
    if (git_repository_init(&raw, cache_dir.c_str(), 1) != 0) {
      return git::last_error(errc::kRepository, "init cache repository '" + cache_dir.string() + "'");
    }
  }
  std::unique_ptr<git_repository, RepoDeleter> repo(raw);
  return GitBus(std::move(remote_url), std::move(cache_dir), std::move(creds), opts, std::move(repo));
}

const std::string& GitBus::remote_url() const { return remote_url_; }

std::string tracking_ref(const std::string& remote_ref) {
  return "refs/kakeya/remote/" + remote_ref.substr(remote_ref.rfind("refs/", 0) == 0 ? 5 : 0);
}

Result<std::vector<RemoteRef>> GitBus::ls_remote(std::string_view prefix, AdvertisementStats* stats) {
  KAKEYA_ASSIGN_OR_RETURN(auto session,
                          RemoteSession::connect(repo_.get(), remote_url_, creds_, opts_, GIT_DIRECTION_FETCH));
  KAKEYA_ASSIGN_OR_RETURN(std::vector<RemoteRef> adv, session->advertisement());
  AdvertisementStats local;
  AdvertisementStats& st = stats != nullptr ? *stats : local;
  st = AdvertisementStats{};
  std::vector<RemoteRef> out;
  for (auto& r : adv) {
    if (r.name == "HEAD" || r.name.ends_with("^{}")) continue;
    if (r.name.compare(0, prefix.size(), prefix) != 0) continue;
    ++st.advertised;
    if (r.name.size() > opts_.max_ref_name_bytes) {
      ++st.long_names;
    } else if (out.size() >= opts_.max_advertised_refs) {
      ++st.over_count;
    } else {
      out.push_back(std::move(r));
    }
  }
  return out;
}

Result<std::map<std::string, std::string>> GitBus::fetch(const std::vector<std::string>& refs) {
  std::map<std::string, std::string> out;
  if (refs.empty()) return out;
  for (const auto& ref : refs) KAKEYA_TRY(check_full_ref(ref));

  KAKEYA_ASSIGN_OR_RETURN(auto session,
                          RemoteSession::connect(repo_.get(), remote_url_, creds_, opts_, GIT_DIRECTION_FETCH));
  KAKEYA_ASSIGN_OR_RETURN(std::vector<RemoteRef> adv, session->advertisement());
  KAKEYA_TRY(prune_tracking_refs(repo_.get(), adv));
  git_odb* odb_raw = nullptr;
  if (git_repository_odb(&odb_raw, repo_.get()) != 0) return git::last_error(errc::kRepository, "open cache odb");
  git::Odb odb(odb_raw);

  // Wants: one refspec per distinct commit the cache lacks (finished branches often share
  // commits, and a commit already here need not be asked for again).
  std::vector<std::string> specs;
  std::set<std::string> wanted;
  const auto advertised = index_refs(adv);
  for (const auto& ref : refs) {
    const auto it = advertised.find(ref);
    if (it == advertised.end()) continue;
    const std::string hex(it->second);
    out[ref] = hex;
    KAKEYA_ASSIGN_OR_RETURN(git_oid id, git::parse_oid(hex, "advertised " + printable(ref)));
    if (git_odb_exists(odb.get(), &id) == 0 && wanted.insert(hex).second) {
      specs.push_back("+" + ref + ":" + tracking_ref(ref));
    }
  }

  // kFetchBatchRefs refspecs per download; a batch after the first gets its own connection.
  for (std::size_t start = 0; start < specs.size(); start += kFetchBatchRefs) {
    if (start > 0) {
      KAKEYA_ASSIGN_OR_RETURN(session,
                              RemoteSession::connect(repo_.get(), remote_url_, creds_, opts_, GIT_DIRECTION_FETCH));
    }
    const std::size_t end = std::min(specs.size(), start + kFetchBatchRefs);
    std::vector<char*> spec_ptrs;
    for (std::size_t i = start; i < end; ++i) spec_ptrs.push_back(specs[i].data());
    git_strarray arr{spec_ptrs.data(), spec_ptrs.size()};
    git_fetch_options fo;
    git_fetch_options_init(&fo, GIT_FETCH_OPTIONS_VERSION);
    fo.callbacks = session->callbacks();
    fo.download_tags = GIT_REMOTE_DOWNLOAD_TAGS_NONE;
    fo.update_fetchhead = 0;
    if (git_remote_download(session->remote(), &arr, &fo) != 0) return session->failure(errc::kTransport, "fetch");
  }
  // Tracking refs of every fetched ref, whether its commit came now or was already here.
  for (const auto& [ref, hex] : out) {
    KAKEYA_ASSIGN_OR_RETURN(git_oid id, git::parse_oid(hex, "advertised " + printable(ref)));
    if (git_odb_exists(odb.get(), &id) == 0) {
      return make_error(errc::kTransport, "fetch of " + printable(ref) + " from " + redact_url(remote_url_) + " did not bring " + hex);
    }
    const std::string tracking = tracking_ref(ref);
    git_reference* tmp = nullptr;
    if (git_reference_create(&tmp, repo_.get(), tracking.c_str(), &id, 1, "kakeya fetch") != 0) {
      return git::last_error(errc::kRepository, "update tracking ref " + printable(tracking));
    }
    git_reference_free(tmp);
  }
  return out;
}

Result<PushOutcome> GitBus::push_cas(const std::string& ref, const std::string& new_oid,
                                     const std::optional<std::string>& expected_old) {
  KAKEYA_TRY(check_full_ref(ref));
  KAKEYA_ASSIGN_OR_RETURN(git_oid new_id, git::parse_oid(new_oid, "new_oid"));
  std::optional<std::string> old_hex;
  git_odb* odb_raw = nullptr;
  if (git_repository_odb(&odb_raw, repo_.get()) != 0) return git::last_error(errc::kRepository, "open cache odb");
  git::Odb odb(odb_raw);
  if (git_odb_exists(odb.get(), &new_id) == 0) {
    return make_error(errc::kNotFetched, "new_oid " + new_oid + " is not in the cache repository");
  }
  if (expected_old) {
    KAKEYA_ASSIGN_OR_RETURN(git_oid old_id, git::parse_oid(*expected_old, "expected_old"));
    old_hex = git::to_hex(old_id);
    if (git_odb_exists(odb.get(), &old_id) == 0) {
      return make_error(errc::kNotFetched, "expected_old " + *old_hex + " for " + printable(ref) +
                                           " is not in the cache repository: fetch first");
    }
    if (!git_oid_equal(&old_id, &new_id) && git_graph_descendant_of(repo_.get(), &new_id, &old_id) != 1) {
      return make_error(errc::kNonFastForward, "new_oid " + new_oid + " does not descend from expected_old " +
                                                *old_hex + " for " + printable(ref) + " (pushes are never forced)");
    }
  }
  return push_update(repo_.get(), remote_url_, creds_, opts_, CasUpdate{ref, new_id, old_hex});
}

Result<PushOutcome> GitBus::delete_cas(const std::string& ref, const std::string& expected_old) {
  KAKEYA_TRY(check_full_ref(ref));
  KAKEYA_ASSIGN_OR_RETURN(git_oid old_id, git::parse_oid(expected_old, "expected_old"));
  return push_update(repo_.get(), remote_url_, creds_, opts_, CasUpdate{ref, std::nullopt, git::to_hex(old_id)});
}

Result<std::vector<PushOutcome>> GitBus::delete_cas_many(const std::vector<RefExpectation>& deletes) {
  std::vector<CasUpdate> updates;
  std::set<std::string_view> seen;
  for (const auto& d : deletes) {
    KAKEYA_TRY(check_full_ref(d.ref));
    if (!seen.insert(d.ref).second) {
      return make_error(errc::kBadValue, "ref '" + printable(d.ref) + "' is listed twice in one batch of deletes");
    }
    KAKEYA_ASSIGN_OR_RETURN(git_oid old_id, git::parse_oid(d.expected_old, "expected_old of " + printable(d.ref)));
    updates.push_back(CasUpdate{d.ref, std::nullopt, git::to_hex(old_id)});
  }
  if (updates.empty()) return std::vector<PushOutcome>{};
  return push_updates(repo_.get(), remote_url_, creds_, opts_, updates);
}

}  // namespace kakeya::bridge
