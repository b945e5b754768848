#include "client/request_builder.h"

#include "bridge/branch.h"
#include "bridge/credentials.h"
#include "bridge/layout.h"
#include "bridge/utf8.h"
#include "bridge/version.h"
#include "client/base_commit.h"
#include "client/params.h"
#include "client/settings.h"

namespace kakeya::client {

Status validate_suffix(const std::string& suffix) {
  if (bridge::is_valid_branch_suffix(suffix)) return ok_status();
  return make_error(errc::kBadSuffix, "suffix '" + bridge::printable(suffix) +
                                      "': expected '-', '.' or '_' then at most 63 of [A-Za-z0-9._-] (no '..', "
                                      "not ending in '.' or '.lock')");
}

Result<bridge::RequestManifest> build_manifest(const bridge::PresetCatalog& catalog, const RequestOptions& opts) {
  const bridge::PresetSpec* preset = catalog.find(opts.preset);
  if (preset == nullptr) {
    std::string names;
    for (const auto& p : catalog.presets()) names += (names.empty() ? "" : ", ") + p.name;
    return make_error(errc::kUnknownPreset, "preset '" + opts.preset + "' is not in the catalog (available: " +
                                            (names.empty() ? "none" : names) + ")");
  }
  KAKEYA_TRY(validate_suffix(opts.suffix));
  KAKEYA_ASSIGN_OR_RETURN(auto params, build_params(*preset, opts.param_items, opts.params_json));
  KAKEYA_TRY(bridge::validate_params(*preset, params));
  bridge::RequestManifest m;
  m.schema_version = bridge::kRequestSchemaVersion;
  m.preset = preset->name;
  m.params = std::move(params);
  m.nonce = bridge::new_nonce();
  m.requested_by = default_requested_by();
  if (m.requested_by.size() > 256) m.requested_by.resize(256);
  m.created_at = bridge::now_rfc3339();
  m.client = {"kakeya", engine_version()};
  KAKEYA_TRY(bridge::validate_request(m));
  return m;
}

Result<Submission> submit_request(Session& session, const bridge::RequestManifest& manifest,
                                  const RequestOptions& opts) {
  Submission sub;
  sub.manifest = manifest;
  std::vector<bridge::FileChange> changes;
  if (!opts.no_workload) {
    KAKEYA_ASSIGN_OR_RETURN(auto base, find_base_commit(opts.repo ? *opts.repo : opts.cwd, opts.repo.has_value()));
    if (base) {
      KAKEYA_TRY(session.bus.import_objects(base->repo_path, base->head_oid));
      sub.base_commit = base->head_oid;
      // Stale run state in the base tree must not look like this run's.
      KAKEYA_ASSIGN_OR_RETURN(auto stale, session.bus.list_dir(base->head_oid, std::string(bridge::kRunDir.substr(0, bridge::kRunDir.size() - 1))));
      for (auto& path : stale) changes.push_back({std::move(path), std::nullopt});
    }
  }
  changes.push_back({std::string(bridge::kRequestPath), bridge::serialize_request(manifest)});
  const std::string message = "kakeya request: " + manifest.preset + " " + manifest.nonce + "\n\nrequested_by: " +
                              manifest.requested_by + "\n";
  KAKEYA_ASSIGN_OR_RETURN(sub.commit, session.bus.make_commit(std::nullopt, sub.base_commit, changes, message,
                                                              client_author(manifest.requested_by)));
  KAKEYA_TRY(bridge::check_request_branch_parts(session.prefix, manifest.preset, manifest.nonce, opts.suffix));
  sub.branch = bridge::request_branch_name(session.prefix, manifest.preset, manifest.nonce, opts.suffix);
  sub.ref = head_ref(sub.branch);
  KAKEYA_ASSIGN_OR_RETURN(auto outcome, session.bus.push_cas(sub.ref, sub.commit, std::nullopt));
  if (outcome != bridge::PushOutcome::Won) {
    return make_error(errc::kBranchExists, "the remote refused to create " + sub.ref +
                                           " (it already exists, or the server rejected the push)");
  }
  return sub;
}

nlohmann::json submission_to_json(const Submission& sub, const std::string& remote) {
  return nlohmann::json{{"branch", sub.branch},
                        {"ref", sub.ref},
                        {"nonce", sub.manifest.nonce},
                        {"commit", sub.commit},
                        {"remote", bridge::redact_url(remote)},
                        {"preset", sub.manifest.preset},
                        {"params", sub.manifest.params},
                        {"base_commit", sub.base_commit ? nlohmann::json(*sub.base_commit) : nlohmann::json(nullptr)}};
}

}  // namespace kakeya::client
