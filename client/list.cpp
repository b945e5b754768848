#include "client/list.h"

#include <algorithm>
#include <map>

#include "bridge/layout.h"
#include "client/snapshot.h"

namespace kakeya::client {

namespace {

ListEntry entry_from(const std::string& branch, const std::string& oid, const Result<BranchSnapshot>& snap) {
  ListEntry e;
  e.branch = branch;
  e.commit = oid;
  if (!snap.ok()) {
    e.state = "unknown";
    e.error = snap.error().str();
    return e;
  }
  const auto& s = *snap;
  e.state = bridge::to_string(s.status.state);
  e.reason = s.status.reason;
  e.runner_id = s.status.runner_id;
  e.updated_at = s.status.updated_at;
  if (s.request) {
    e.preset = s.request->preset;
    if (e.updated_at.empty()) e.updated_at = s.request->created_at;
  } else {
    e.error = s.request_error;
  }
  return e;
}

}  // namespace

Result<std::vector<ListEntry>> list_requests(bridge::GitBus& bus, const std::string& branch_prefix,
                                             const std::optional<bridge::RunState>& state_filter) {
  const std::string prefix = std::string(bridge::kRefsHeadsPrefix) + branch_prefix;
  const std::string runners = std::string(bridge::kRefsHeadsPrefix) + std::string(bridge::kRunnerBranchPrefix);
  KAKEYA_ASSIGN_OR_RETURN(auto refs, bus.ls_remote(prefix));
  std::erase_if(refs, [&](const bridge::RemoteRef& r) { return r.name.starts_with(runners); });
  // Tips already in the cache are read directly; only the others are fetched (one connection).
  std::vector<std::string> missing;
  for (const auto& r : refs) {
    auto probe = bus.read_file(r.oid, std::string(bridge::kRequestPath));
    if (!probe.ok() && probe.error().code == errc::kNotFetched) missing.push_back(r.name);
  }
  std::map<std::string, std::string> fetched;
  if (!missing.empty()) {
    KAKEYA_ASSIGN_OR_RETURN(fetched, bus.fetch(missing));
  }
  std::vector<ListEntry> out;
  for (const auto& r : refs) {
    std::string oid = r.oid;
    if (auto it = fetched.find(r.name); it != fetched.end()) oid = it->second;
    const std::string branch = r.name.substr(bridge::kRefsHeadsPrefix.size());
    ListEntry e = entry_from(branch, oid, read_snapshot(bus, branch, oid));
    if (state_filter && e.state != bridge::to_string(*state_filter)) continue;
    out.push_back(std::move(e));
  }
  std::sort(out.begin(), out.end(), [](const ListEntry& a, const ListEntry& b) {
    if (a.updated_at != b.updated_at) return a.updated_at > b.updated_at;
    return a.branch < b.branch;
  });
  return out;
}

nlohmann::json list_entry_to_json(const ListEntry& e) {
  nlohmann::json j{{"branch", e.branch},   {"commit", e.commit},       {"preset", e.preset},
                   {"state", e.state},     {"reason", e.reason},       {"runner_id", e.runner_id},
                   {"updated_at", e.updated_at}};
  if (!e.error.empty()) j["error"] = e.error;
  return j;
}

}  // namespace kakeya::client
