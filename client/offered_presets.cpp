#include "client/offered_presets.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "bridge/credentials.h"
#include "client/fleet.h"
#include "client/session.h"

namespace kakeya::client {

namespace {

OfferedPresets local(const bridge::PresetCatalog* catalog, const std::optional<std::filesystem::path>& path,
                     std::string note) {
  OfferedPresets out;
  out.source = "local_catalog";
  out.note = std::move(note);
  out.catalog = path;
  if (catalog != nullptr) {
    for (const auto& p : catalog->presets()) out.presets.push_back({p.name, {}, p});
  }
  std::sort(out.presets.begin(), out.presets.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  return out;
}

}  // namespace

Result<OfferedPresets> offered_presets(const GlobalOptions& opts, double within_s, bool local_only) {
  std::optional<std::filesystem::path> path;
  std::optional<bridge::PresetCatalog> catalog;
  std::string catalog_problem;
  ErrorCode catalog_code = errc::kNoCatalog;
  if (auto p = resolve_catalog_path(opts); p.ok()) {
    path = *p;
    if (auto c = bridge::PresetCatalog::load_file(*p); c.ok()) {
      catalog = std::move(c).value();
    } else {
      catalog_problem = c.error().str();
      catalog_code = c.error().code;
    }
  } else {
    catalog_problem = p.error().str();
    catalog_code = p.error().code;
  }
  const auto fallback = [&](const std::string& why) -> Result<OfferedPresets> {
    if (!catalog) return make_error(catalog_code, why + "; and the local catalog cannot be read: " + catalog_problem);
    return local(&*catalog, path, why + "; showing the local catalog " + path->string());
  };
  if (local_only) return local(catalog ? &*catalog : nullptr, path, "--local: the local catalog " +
                                                                        (path ? path->string() : std::string("(none)")));

  auto session = open_session(opts);
  if (!session.ok()) return fallback("no remote to ask (" + session.error().str() + ")");
  auto runners = list_runners(session->bus);
  if (!runners.ok()) return fallback("cannot list the runners of the remote (" + runners.error().str() + ")");

  OfferedPresets out;
  out.source = "runners";
  out.catalog = path;
  std::map<std::string, std::vector<std::string>> by_preset;
  std::vector<std::string> differ;
  const std::string local_digest = catalog ? bridge::catalog_digest(*catalog) : "";
  for (const auto& r : *runners) {
    if (!r.runner || !r.age_s || *r.age_s > within_s || r.runner->state == "stopped") continue;
    out.runners.push_back(*r.runner);
    for (const auto& name : r.runner->presets) by_preset[name].push_back(r.runner->id);
    if (!local_digest.empty() && r.runner->catalog_digest != local_digest) differ.push_back(r.runner->id);
  }
  if (out.runners.empty()) {
    return fallback(fmt::format("no runner seen within {:g}s on {}", within_s, bridge::redact_url(session->remote)));
  }
  for (const auto& [name, ids] : by_preset) {
    OfferedPreset p{name, ids, std::nullopt};
    if (catalog) {
      if (const auto* spec = catalog->find(name)) p.spec = *spec;
    }
    out.presets.push_back(std::move(p));
  }
  out.note = fmt::format("offered by {} live runner(s) seen within {:g}s", out.runners.size(), within_s);
  if (!catalog) {
    out.note += "; no local catalog, so parameters are not shown (" + catalog_problem + ")";
  } else if (!differ.empty()) {
    out.note += "; the catalog of " + fmt::format("{}", fmt::join(differ, ", ")) +
                " differs from the local one (" + path->string() + "): parameters shown are the local catalog's";
  }
  return out;
}

nlohmann::json to_json(const OfferedPresets& o) {
  nlohmann::json presets = nlohmann::json::array();
  for (const auto& p : o.presets) {
    presets.push_back({{"name", p.name},
                       {"offered_by", p.offered_by},
                       {"spec", p.spec ? bridge::to_json(*p.spec) : nlohmann::json(nullptr)}});
  }
  nlohmann::json runners = nlohmann::json::array();
  for (const auto& r : o.runners) runners.push_back(bridge::to_json(r));
  return {{"source", o.source},
          {"note", o.note},
          {"catalog", o.catalog ? nlohmann::json(o.catalog->string()) : nlohmann::json(nullptr)},
          {"runners", runners},
          {"presets", presets}};
}

}  // namespace kakeya::client
