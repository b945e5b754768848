#include "bridge/summary.h"

#include <limits>

#include "bridge/error_codes.h"
#include "bridge/json_schema.h"
#include "bridge/json_strict.h"
#include "bridge/json_text.h"
#include "bridge/request.h"

namespace kakeya::bridge {
namespace {

using nlohmann::json;

Error bad_value(std::string_view field, const json& v, std::string_view why) {
  return make_error(errc::kBadValue,
                    "summary.json `" + std::string(field) + "` = " + json_excerpt(v) + " is invalid: " + std::string(why));
}

// REQUIRES: the schema checked that doc[key] is a non-negative integer.
Result<int64_t> count(const json& doc, const char* key) {
  const json& v = doc.at(key);
  if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    return bad_value(key, v, "above 2^63-1");
  }
  return v.get<int64_t>();
}

Result<int> small_int(const json& doc, const char* key) {
  const json& v = doc.at(key);
  if (v.is_number_unsigned() ? v.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int>::max())
                             : v.get<int64_t>() < std::numeric_limits<int>::min() ||
                                   v.get<int64_t>() > std::numeric_limits<int>::max()) {
    return bad_value(key, v, "outside the range of a process status");
  }
  return static_cast<int>(v.get<int64_t>());
}

// REQUIRES: the schema checked the pattern; this adds the calendar.
Result<std::string> timestamp(const json& doc, const char* key) {
  std::string s = doc.at(key).get<std::string>();
  if (!is_rfc3339(s)) return bad_value(key, doc.at(key), "not an RFC 3339 date-time");
  return s;
}

Result<ClaimedRun> run_from_json(const json& doc) {
  ClaimedRun run;
  run.preset = doc.at("preset").get<std::string>();
  run.params = doc.at("params");
  run.nonce = doc.at("nonce").get<std::string>();
  run.runner_labels = doc.at("runner_labels").get<std::vector<std::string>>();
  KAKEYA_ASSIGN_OR_RETURN(run.claim_gen, count(doc, "claim_gen"));
  KAKEYA_ASSIGN_OR_RETURN(run.attempt, count(doc, "attempt"));
  run.argv = doc.at("argv").get<std::vector<std::string>>();
  for (const json& o : doc.at("outputs")) {
    KAKEYA_ASSIGN_OR_RETURN(int64_t bytes, count(o, "bytes"));
    run.outputs.push_back(OutputFile{o.at("path").get<std::string>(), static_cast<uint64_t>(bytes),
                                     o.at("committed").get<bool>()});
  }
  run.missing_outputs = doc.at("missing_outputs").get<std::vector<std::string>>();
  if (!doc.at("gate_passed").is_null()) run.gate_passed = doc.at("gate_passed").get<bool>();
  if (doc.contains("exit_code")) {
    CommandOutcome c;
    KAKEYA_ASSIGN_OR_RETURN(c.exit_code, small_int(doc, "exit_code"));
    KAKEYA_ASSIGN_OR_RETURN(c.term_signal, small_int(doc, "term_signal"));
    c.duration_s = doc.at("duration_s").get<double>();
    KAKEYA_ASSIGN_OR_RETURN(c.started_at, timestamp(doc, "started_at"));
    const json& log = doc.at("log");
    KAKEYA_ASSIGN_OR_RETURN(int64_t written, count(log, "bytes_written"));
    KAKEYA_ASSIGN_OR_RETURN(int64_t dropped, count(log, "bytes_dropped"));
    KAKEYA_ASSIGN_OR_RETURN(int64_t cap, count(log, "cap_bytes"));
    c.log = LogStats{static_cast<uint64_t>(written), static_cast<uint64_t>(dropped), log.at("truncated").get<bool>(),
                     static_cast<uint64_t>(cap)};
    run.command = std::move(c);
  }
  return run;
}

// REQUIRES: doc passed the summary schema.
Result<RunSummary> typed_summary(const json& doc) {
  RunSummary s;
  // The schema's enum holds only terminal states.
  s.state = parse_run_state(doc.at("state").get<std::string>()).value_or(RunState::Failed);
  s.reason = doc.at("reason").get<std::string>();
  s.runner_id = doc.at("runner_id").get<std::string>();
  s.request_commit = doc.at("request_commit").get<std::string>();
  KAKEYA_ASSIGN_OR_RETURN(s.finished_at, timestamp(doc, "finished_at"));
  s.engine_version = doc.at("engine_version").get<std::string>();
  if (doc.contains("preset")) {
    KAKEYA_ASSIGN_OR_RETURN(ClaimedRun run, run_from_json(doc));
    s.run = std::move(run);
  }
  return s;
}

}  // namespace

nlohmann::json to_json(const RunSummary& s) {
  json out = json::object();
  out["schema_version"] = kSummarySchemaVersion;
  out["state"] = to_string(s.state);
  out["reason"] = s.reason;
  out["runner_id"] = s.runner_id;
  out["request_commit"] = s.request_commit;
  out["finished_at"] = s.finished_at;
  out["engine_version"] = s.engine_version;
  if (!s.run) return out;
  const ClaimedRun& r = *s.run;
  out["preset"] = r.preset;
  out["params"] = r.params;
  out["nonce"] = r.nonce;
  out["runner_labels"] = r.runner_labels;
  out["claim_gen"] = r.claim_gen;
  out["attempt"] = r.attempt;
  out["argv"] = r.argv;
  json outputs = json::array();
  for (const OutputFile& o : r.outputs) outputs.push_back({{"path", o.path}, {"bytes", o.bytes}, {"committed", o.committed}});
  out["outputs"] = std::move(outputs);
  out["missing_outputs"] = r.missing_outputs;
  out["gate_passed"] = r.gate_passed ? json(*r.gate_passed) : json(nullptr);
  if (!r.command) return out;
  const CommandOutcome& c = *r.command;
  out["exit_code"] = c.exit_code;
  out["term_signal"] = c.term_signal;
  out["duration_s"] = c.duration_s;
  out["started_at"] = c.started_at;
  out["log"] = {{"bytes_written", c.log.bytes_written},
                {"bytes_dropped", c.log.bytes_dropped},
                {"truncated", c.log.truncated},
                {"cap_bytes", c.log.cap_bytes}};
  return out;
}

std::string summary_json_text(const RunSummary& summary) { return to_json_file(to_json(summary)); }

Result<RunSummary> summary_from_json(const nlohmann::json& doc) {
  KAKEYA_TRY(validate_against_schema(JsonSchema::kSummary, doc));
  try {
    return typed_summary(doc);
  } catch (const json::exception& e) {  // the schema let through what the type cannot hold
    return make_error(errc::kSchemaViolation, std::string("summary.json does not fit RunSummary: ") + e.what());
  }
}

Result<RunSummary> parse_summary(std::string_view json_text) {
  KAKEYA_ASSIGN_OR_RETURN(json doc, parse_json_strict(json_text));
  return summary_from_json(doc);
}

}  // namespace kakeya::bridge
