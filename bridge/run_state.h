#pragma once
// Run state machine and `.kakeya/run/status.json` (DESIGN.md §2).
//
//   queued  -> claimed | rejected | cancelled
//   claimed -> running | claimed (takeover, higher claim_gen) | cancelled | infra_error | rejected
//   running -> running (heartbeat) | claimed (takeover, higher claim_gen)
//            | succeeded | failed | gate_failed | timeout | cancelled | infra_error
//   terminal (succeeded failed gate_failed timeout cancelled rejected infra_error) -> nothing
//
// A branch without status.json is `queued`. Every request ends in a terminal state with a
// non-empty reason. JSON Schema: manifests/schemas/status.schema.json (checked by parse_status).
// One type for both ends: the runner writes status_json_text(), clients and runners read
// parse_status().

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "bridge/result.h"

namespace kakeya::bridge {

enum class RunState { Queued, Claimed, Running, Succeeded, Failed, GateFailed, Timeout, Cancelled, Rejected, InfraError };

// "queued", "claimed", "running", "succeeded", "failed", "gate_failed", "timeout",
// "cancelled", "rejected", "infra_error".
const char* to_string(RunState state);
// Inverse of to_string (exact, lower case); nullopt for anything else.
std::optional<RunState> parse_run_state(std::string_view text);

bool is_terminal(RunState state);

// Whether the state graph above has the edge from -> to (claim_gen not considered).
bool can_transition(RunState from, RunState to);

struct RunStatus {
  RunState state = RunState::Queued;
  std::string reason;                 // why this state (required non-empty for terminal states)
  std::string runner_id;              // the runner holding the claim ("" while queued)
  std::vector<std::string> labels;    // that runner's labels
  int64_t claim_gen = 0;              // claim generation; each claim/takeover increments it
  int64_t attempt = 0;                // 1 for the first run, +1 per re-run after takeover
  int64_t heartbeat_seq = 0;          // increments with every heartbeat commit of one claim
  std::string started_at;             // RFC 3339 or "" (command not started yet)
  std::string updated_at;             // RFC 3339 or ""
  nlohmann::json progress;            // preset-defined progress object, or null
  std::string log_tail;               // last lines of the job log (already redacted)
};

// Full claim-aware check of a status update (`from` = the status on the observed tip; a
// branch without status.json is RunStatus{} i.e. queued, claim_gen 0). Errors
// ("bad_transition") name both states and the generations:
//  - the edge must exist (can_transition);
//  - -> claimed needs to.claim_gen > from.claim_gen (claim or takeover);
//  - from claimed/running to running or a terminal state keeps claim_gen
//    (a lower one is a fenced runner, a higher one skipped the claim);
//  - from queued to rejected/cancelled may not lower claim_gen;
//  - heartbeat_seq never decreases within one claim_gen;
//  - terminal states need a non-empty reason.
Status check_transition(const RunStatus& from, const RunStatus& to);

// status.json object with every field above (timestamps "" when unset, progress null when unset).
nlohmann::json to_json(const RunStatus& status);

// status.json text: to_json in the bus file form (bridge/json_text.h to_json_file: 2 spaces,
// trailing newline). Never throws: ill-formed UTF-8 in strings is written as `\xNN`.
std::string status_json_text(const RunStatus& status);

// Strict parse of status.json (duplicate keys, unknown keys, wrong types are errors, naming the
// field and value; more than kMaxStatusBytes (bridge/limits.h) is `too_large`, before parsing). `state` is required; the other fields default as in RunStatus when absent.
// Non-empty timestamps must be RFC 3339; claim_gen/attempt/heartbeat_seq are integers >= 0.
// Then the schema (error "schema_violation", e.g. a terminal state with an empty reason).
Result<RunStatus> parse_status(std::string_view json_text);
Result<RunStatus> status_from_json(const nlohmann::json& doc);

}  // namespace kakeya::bridge
