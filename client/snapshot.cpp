#include "client/snapshot.h"

#include "bridge/layout.h"
#include "bridge/limits.h"
#include "client/session.h"

namespace kakeya::client {

Result<BranchSnapshot> read_snapshot(bridge::GitBus& bus, const std::string& branch, const std::string& oid) {
  BranchSnapshot snap;
  snap.branch = branch;
  snap.oid = oid;
  KAKEYA_ASSIGN_OR_RETURN(auto req_text, bus.read_file(oid, std::string(bridge::kRequestPath), bridge::kMaxRequestBytes));
  if (!req_text) {
    snap.request_error = "no " + std::string(bridge::kRequestPath);
  } else if (auto req = bridge::parse_request(*req_text); req.ok()) {
    snap.request = std::move(*req);
  } else {
    snap.request_error = req.error().str();
  }
  KAKEYA_ASSIGN_OR_RETURN(auto status_text, bus.read_file(oid, std::string(bridge::kStatusPath), bridge::kMaxStatusBytes));
  if (status_text) {
    auto st = bridge::parse_status(*status_text);
    if (!st.ok()) {
      return make_error(errc::kBadStatus, branch + " @ " + oid.substr(0, 12) + ": " + st.error().str());
    }
    snap.status = std::move(*st);
    snap.has_status = true;
  }
  KAKEYA_ASSIGN_OR_RETURN(auto summary_text, bus.read_file(oid, std::string(bridge::kSummaryPath), bridge::kMaxSummaryBytes));
  if (summary_text) {
    if (auto s = bridge::parse_summary(*summary_text); s.ok()) {
      snap.summary = std::move(*s);
    } else {
      snap.summary_error = s.error().str();
    }
  }
  KAKEYA_ASSIGN_OR_RETURN(auto cancel_text, bus.read_file(oid, std::string(bridge::kCancelPath), bridge::kMaxCancelBytes));
  snap.cancel_requested = cancel_text.has_value();
  return snap;
}

Result<std::optional<BranchSnapshot>> fetch_snapshot(bridge::GitBus& bus, const std::string& branch) {
  const std::string ref = head_ref(branch);
  KAKEYA_ASSIGN_OR_RETURN(auto fetched, bus.fetch({ref}));
  auto it = fetched.find(ref);
  if (it == fetched.end()) return std::optional<BranchSnapshot>{};
  KAKEYA_ASSIGN_OR_RETURN(auto snap, read_snapshot(bus, branch, it->second));
  return std::optional<BranchSnapshot>{std::move(snap)};
}

nlohmann::json snapshot_to_json(const BranchSnapshot& snap) {
  nlohmann::json j;
  j["branch"] = snap.branch;
  j["commit"] = snap.oid;
  if (snap.request) {
    j["request"] = nlohmann::json::parse(bridge::serialize_request(*snap.request), nullptr, false);
  } else {
    j["request"] = nullptr;
    j["request_error"] = snap.request_error;
  }
  j["status"] = bridge::to_json(snap.status);
  j["status_present"] = snap.has_status;
  j["cancel_requested"] = snap.cancel_requested;
  j["summary"] = snap.summary ? bridge::to_json(*snap.summary) : nlohmann::json(nullptr);
  if (!snap.summary_error.empty()) j["summary_error"] = snap.summary_error;
  return j;
}

}  // namespace kakeya::client
