#pragma once
// Live progress of a run being waited on: state changes and new log lines as events.
//
// ProgressTracker turns successive branch snapshots into events (pure: no I/O), which
// ProgressPrinter writes either for people (stderr, when it is a TTY) or as JSON lines (stdout,
// with --json). Event shapes (one JSON object per line):
//   {"event":"state","state":S,"reason":R,"runner_id":ID,"claim_gen":N,"attempt":N,"t":SECONDS}
//   {"event":"log","lines":[...],"t":SECONDS}
//   {"event":"done","state":S,"reason":R,"exit_code":N,"job_exit_code":N|null,"seconds":X,
//    "runner_id":ID,"branch":B,"results":[...]}
// t = seconds since the wait started (steady clock).

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "client/log_dedupe.h"
#include "client/snapshot.h"

namespace kakeya::client {

class ProgressTracker {
 public:
  // Events for one observed snapshot: a "state" event when state, runner, claim_gen or attempt
  // changed (the first observation always emits one), then a "log" event with the log_tail
  // lines not yet shown. A new claim_gen or attempt starts a new log (dedupe reset).
  std::vector<nlohmann::json> observe(const BranchSnapshot& snap, double t);

 private:
  bool seen_ = false;
  std::string state_, runner_;
  int64_t claim_gen_ = -1, attempt_ = -1;
  LogTailDedupe logs_;
};

class ProgressPrinter {
 public:
  enum class Mode { Quiet, Human, Json };
  ProgressPrinter(Mode mode, std::ostream& human, std::ostream& json) : mode_(mode), human_(human), json_(json) {}
  void emit(const nlohmann::json& event);
  Mode mode() const { return mode_; }

 private:
  Mode mode_;
  std::ostream& human_;
  std::ostream& json_;
};

// One line for people, e.g. "[  12.3s] running on runner host-1 (attempt 1): started".
std::string format_state_event(const nlohmann::json& event);

}  // namespace kakeya::client
