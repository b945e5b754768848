#include "bridge/run_state.h"

#include <array>
#include <utility>

#include "bridge/json_fields.h"
#include "bridge/json_schema.h"
#include "bridge/json_strict.h"
#include "bridge/json_text.h"
#include "bridge/layout.h"
#include "bridge/limits.h"
#include "bridge/request.h"

namespace kakeya::bridge {
namespace {

using nlohmann::json;

constexpr std::array<std::pair<RunState, const char*>, 10> kNames = {{
    {RunState::Queued, "queued"},
    {RunState::Claimed, "claimed"},
    {RunState::Running, "running"},
    {RunState::Succeeded, "succeeded"},
    {RunState::Failed, "failed"},
    {RunState::GateFailed, "gate_failed"},
    {RunState::Timeout, "timeout"},
    {RunState::Cancelled, "cancelled"},
    {RunState::Rejected, "rejected"},
    {RunState::InfraError, "infra_error"},
}};

Error bad_status_type(std::string_view field, std::string_view expected, const json& v) {
  return make_error(errc::kBadType, "status.json `" + std::string(field) + "` must be " + std::string(expected) +
                                    ", got " + json_excerpt(v));
}

Error bad_status_value(std::string_view field, const json& v, std::string_view why) {
  return make_error(errc::kBadValue,
                    "status.json `" + std::string(field) + "` = " + json_excerpt(v) + " is invalid: " + std::string(why));
}

Error bad_transition(const RunStatus& from, const RunStatus& to, std::string_view why) {
  return make_error(errc::kBadTransition, std::string(to_string(from.state)) + " (claim_gen " +
                                          std::to_string(from.claim_gen) + ") -> " + to_string(to.state) +
                                          " (claim_gen " + std::to_string(to.claim_gen) + "): " + std::string(why));
}

Result<int64_t> get_count(const json& doc, const char* key) {
  const json& v = doc.at(key);
  if (!v.is_number_integer()) return bad_status_type(key, "an integer", v);
  if (v.is_number_unsigned() ? v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX) : v.get<int64_t>() < 0) {
    return bad_status_value(key, v, "must be an integer in 0..2^63-1");
  }
  return v.get<int64_t>();
}

Result<std::string> get_string(const json& doc, const char* key) {
  const json& v = doc.at(key);
  if (!v.is_string()) return bad_status_type(key, "a string", v);
  return v.get<std::string>();
}

Result<std::string> get_time(const json& doc, const char* key) {
  KAKEYA_ASSIGN_OR_RETURN(std::string s, get_string(doc, key));
  if (!s.empty() && !is_rfc3339(s)) return bad_status_value(key, doc.at(key), "not an RFC 3339 date-time");
  return s;
}

}  // namespace

const char* to_string(RunState state) {
  for (const auto& [s, name] : kNames) {
    if (s == state) return name;
  }
  return "unknown";
}

std::optional<RunState> parse_run_state(std::string_view text) {
  for (const auto& [s, name] : kNames) {
    if (text == name) return s;
  }
  return std::nullopt;
}

bool is_terminal(RunState state) {
  switch (state) {
    case RunState::Queued:
    case RunState::Claimed:
    case RunState::Running:
      return false;
    default:
      return true;
  }
}

bool can_transition(RunState from, RunState to) {
  using S = RunState;
  switch (from) {
    case S::Queued:
      return to == S::Claimed || to == S::Rejected || to == S::Cancelled;
    case S::Claimed:
      return to == S::Running || to == S::Claimed || to == S::Cancelled || to == S::InfraError ||
             to == S::Rejected;
    case S::Running:
      return to == S::Running || to == S::Claimed || (is_terminal(to) && to != S::Rejected);
    default:
      return false;  // terminal states are final
  }
}

Status check_transition(const RunStatus& from, const RunStatus& to) {
  if (!can_transition(from.state, to.state)) {
    if (is_terminal(from.state)) return bad_transition(from, to, "the run already ended");
    return bad_transition(from, to, "no such transition");
  }
  if (to.state == RunState::Claimed) {
    if (to.claim_gen <= from.claim_gen) return bad_transition(from, to, "a claim must raise claim_gen");
  } else if (from.state == RunState::Queued) {
    if (to.claim_gen < from.claim_gen) return bad_transition(from, to, "claim_gen must not decrease");
  } else {
    if (to.claim_gen < from.claim_gen) return bad_transition(from, to, "fenced: a newer claim exists");
    if (to.claim_gen > from.claim_gen) return bad_transition(from, to, "claim_gen raised without a claim");
    if (to.heartbeat_seq < from.heartbeat_seq) return bad_transition(from, to, "heartbeat_seq went backwards");
  }
  if (is_terminal(to.state) && to.reason.empty()) return bad_transition(from, to, "a terminal state needs a reason");
  return ok_status();
}

nlohmann::json to_json(const RunStatus& s) {
  json out = json::object();
  out["state"] = to_string(s.state);
  out["reason"] = s.reason;
  out["runner_id"] = s.runner_id;
  out["labels"] = s.labels;
  out["claim_gen"] = s.claim_gen;
  out["attempt"] = s.attempt;
  out["heartbeat_seq"] = s.heartbeat_seq;
  out["started_at"] = s.started_at;
  out["updated_at"] = s.updated_at;
  out["progress"] = s.progress;
  out["log_tail"] = s.log_tail;
  return out;
}

Result<RunStatus> status_from_json(const nlohmann::json& doc) {
  if (!doc.is_object()) return bad_status_type("<root>", "an object", doc);
  static const char* const kKeys[] = {"state",         "reason",     "runner_id",  "labels",
                                      "claim_gen",     "attempt",    "heartbeat_seq", "started_at",
                                      "updated_at",    "progress",   "log_tail"};
  for (const auto& [k, _] : doc.items()) {
    bool known = false;
    for (const char* name : kKeys) known = known || k == name;
    if (!known) return make_error(errc::kUnknownKey, "status.json has unknown key `" + json_path_append_key("", k) + "`");
  }
  RunStatus s;
  if (!doc.contains("state")) return make_error(errc::kMissingKey, "status.json is missing key `state`");
  const json& state = doc.at("state");
  if (!state.is_string()) return bad_status_type("state", "a string", state);
  auto parsed = parse_run_state(state.get<std::string>());
  if (!parsed) return bad_status_value("state", state, "unknown state");
  s.state = *parsed;
  if (doc.contains("reason")) {
    KAKEYA_ASSIGN_OR_RETURN(s.reason, get_string(doc, "reason"));
  }
  if (doc.contains("runner_id")) {
    KAKEYA_ASSIGN_OR_RETURN(s.runner_id, get_string(doc, "runner_id"));
  }
  if (doc.contains("labels")) {
    const json& labels = doc.at("labels");
    if (!labels.is_array()) return bad_status_type("labels", "an array of strings", labels);
    for (std::size_t i = 0; i < labels.size(); ++i) {
      if (!labels[i].is_string()) return bad_status_type(json_path_append_index("labels", i), "a string", labels[i]);
      s.labels.push_back(labels[i].get<std::string>());
    }
  }
  if (doc.contains("claim_gen")) {
    KAKEYA_ASSIGN_OR_RETURN(s.claim_gen, get_count(doc, "claim_gen"));
  }
  if (doc.contains("attempt")) {
    KAKEYA_ASSIGN_OR_RETURN(s.attempt, get_count(doc, "attempt"));
  }
  if (doc.contains("heartbeat_seq")) {
    KAKEYA_ASSIGN_OR_RETURN(s.heartbeat_seq, get_count(doc, "heartbeat_seq"));
  }
  if (doc.contains("started_at")) {
    KAKEYA_ASSIGN_OR_RETURN(s.started_at, get_time(doc, "started_at"));
  }
  if (doc.contains("updated_at")) {
    KAKEYA_ASSIGN_OR_RETURN(s.updated_at, get_time(doc, "updated_at"));
  }
  if (doc.contains("progress")) s.progress = doc.at("progress");
  if (doc.contains("log_tail")) {
    KAKEYA_ASSIGN_OR_RETURN(s.log_tail, get_string(doc, "log_tail"));
  }
  KAKEYA_TRY(validate_against_schema(JsonSchema::kStatus, doc));
  return s;
}

Result<RunStatus> parse_status(std::string_view json_text) {
  KAKEYA_TRY(check_document_size(kStatusPath, json_text, kMaxStatusBytes));
  KAKEYA_ASSIGN_OR_RETURN(json doc, parse_json_strict(json_text));
  return status_from_json(doc);
}

std::string status_json_text(const RunStatus& status) { return to_json_file(to_json(status)); }

}  // namespace kakeya::bridge
