#include "client/doctor.h"

#include <algorithm>

#include "bridge/branch.h"
#include "bridge/catalog.h"
#include "bridge/credentials.h"
#include "bridge/push_probe.h"
#include "bridge/request.h"
#include "client/session.h"

namespace kakeya::client {
std::vector<DoctorCheck> run_doctor(const GlobalOptions& opts) {
  std::vector<DoctorCheck> checks;
  auto add = [&](std::string name, bool ok, std::string detail) {
    checks.push_back({std::move(name), ok, std::move(detail)});
    return ok;
  };

  auto remote = resolve_remote(opts);
  bool have_remote = remote.ok() ? add("remote", true, bridge::redact_url(*remote) + " (branch prefix " + opts.prefix + ")")
                                 : add("remote", false, remote.error().str());
  bool have_creds = false;
  bridge::Credentials used;
  if (have_remote) {
    auto creds = bridge::load_credentials(*remote, opts.credentials_file);
    if (creds.ok()) used = *creds;
    have_creds = creds.ok() ? add("credentials", true, "using " + creds->source)
                            : add("credentials", false, creds.error().str());
  } else {
    add("credentials", false, "skipped: no remote");
  }
  if (have_remote && have_creds) {
    auto session = open_session(opts);
    if (!session.ok()) {
      add("reachable", false, session.error().str());
      add("push", false, "skipped: no session");
    } else {
      auto refs = session->bus.ls_remote(std::string("refs/heads/") + opts.prefix);
      if (!refs.ok()) {
        add("reachable", false, bridge::explain_auth_failure(refs.error(), *remote, used, "--credentials-file FILE").str());
        add("push", false, "skipped: remote not reachable");
      } else {
        add("reachable", true, std::to_string(refs->size()) + " branch(es) under " + opts.prefix);
        auto probe = bridge::probe_push(session->bus, session->prefix, client_author(default_requested_by()));
        add("push", probe.ok(), probe.ok() ? "created and deleted a probe branch under " + opts.prefix
                                           : bridge::explain_auth_failure(probe.error(), *remote, used,
                                                                          "--credentials-file FILE").str());
      }
    }
  } else {
    add("reachable", false, "skipped: no remote or credentials");
    add("push", false, "skipped: no remote or credentials");
  }
  auto path = resolve_catalog_path(opts);
  if (!path.ok()) {
    add("catalog", false, path.error().str());
  } else if (auto cat = bridge::PresetCatalog::load_file(*path); !cat.ok()) {
    add("catalog", false, cat.error().str());
  } else {
    add("catalog", true, std::to_string(cat->presets().size()) + " presets from " + path->string());
  }
  return checks;
}

nlohmann::json doctor_to_json(const std::vector<DoctorCheck>& checks) {
  nlohmann::json arr = nlohmann::json::array();
  bool all = true;
  for (const auto& c : checks) {
    arr.push_back({{"name", c.name}, {"ok", c.ok}, {"detail", c.detail}});
    all = all && c.ok;
  }
  return {{"ok", all}, {"checks", arr}};
}

}  // namespace kakeya::client
