#pragma once
// `.kakeya/run/summary.json`: the runner's final receipt of a request (DESIGN.md §2), committed
// with the terminal status. One type for both ends: the runner builds a RunSummary and writes
// summary_json_text(); the client reads it back with parse_summary. JSON Schema:
// manifests/schemas/summary.schema.json (parse_summary checks it; the tests check every writer).
//
// On the wire the keys are flat (schema_version 1):
//   receipt (always)          schema_version, state, reason, runner_id, request_commit,
//                             finished_at, engine_version
//   run (a claimed request)   preset, params, nonce, runner_labels, claim_gen, attempt, argv,
//                             outputs[{path, bytes, committed}], missing_outputs, gate_passed
//   command (it was started)  exit_code, term_signal, duration_s, started_at,
//                             log{bytes_written, bytes_dropped, truncated, cap_bytes}

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "bridge/result.h"
#include "bridge/run_state.h"

namespace kakeya::bridge {

inline constexpr int kSummarySchemaVersion = 1;

// How the job log went (runner/job_log.h): bytes after redaction.
struct LogStats {
  uint64_t bytes_written = 0;  // kept in logs/job.log
  uint64_t bytes_dropped = 0;  // beyond the cap
  bool truncated = false;
  uint64_t cap_bytes = 0;      // the runner's log_cap_bytes
};

// The preset command, once it was started.
struct CommandOutcome {
  int exit_code = -1;       // the leader's exit status; -1 when it was killed by a signal
  int term_signal = 0;      // the signal that killed it, 0 when it exited
  double duration_s = 0;    // wall-clock seconds from spawn to exit
  std::string started_at;   // RFC 3339: when the runner announced `running`
  LogStats log;
};

// A declared output the job wrote.
struct OutputFile {
  std::string path;         // relative to ${OUT} (and to .kakeya/run/results/)
  uint64_t bytes = 0;
  bool committed = false;   // false when above the runner's per-file cap (listed, not committed)
};

// What a runner that claimed the request adds.
struct ClaimedRun {
  std::string preset;
  nlohmann::json params = nlohmann::json::object();  // the request's params as given
  std::string nonce;
  std::vector<std::string> runner_labels;
  int64_t claim_gen = 1;
  int64_t attempt = 1;
  std::vector<std::string> argv;               // resolved; empty when preparing the job failed
  std::vector<OutputFile> outputs;
  std::vector<std::string> missing_outputs;    // declared but not written
  std::optional<bool> gate_passed;             // nullopt: the gate was not evaluated
  std::optional<CommandOutcome> command;       // nullopt: the command never started
};

struct RunSummary {
  RunState state = RunState::Failed;  // terminal
  std::string reason;                 // non-empty
  std::string runner_id;
  std::string request_commit;         // the request branch tip the runner decided on
  std::string finished_at;            // RFC 3339
  std::string engine_version;         // the runner's build (bridge/version.h)
  std::optional<ClaimedRun> run;      // nullopt for receipts published without a claim
};

// The summary.json object (keys as listed above; absent groups leave their keys out).
nlohmann::json to_json(const RunSummary& summary);

// summary.json text: to_json in the bus file form (bridge/json_text.h to_json_file: 2 spaces,
// trailing newline). Never throws: ill-formed UTF-8 in strings is written as `\xNN`.
std::string summary_json_text(const RunSummary& summary);

// Strict parse (duplicate keys, unknown keys, wrong types are errors): parse_json_strict, the
// schema (error "schema_violation" naming the JSON pointer), then the typed fields (bad_value
// for a non-terminal state, a timestamp that is not RFC 3339, a count above 2^63-1).
Result<RunSummary> parse_summary(std::string_view json_text);
Result<RunSummary> summary_from_json(const nlohmann::json& doc);

}  // namespace kakeya::bridge
