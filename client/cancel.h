#pragma once
// Requesting cancellation of a run: a CAS commit adding `.kakeya/run/cancel.json` (DESIGN §2).

#include <functional>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "bridge/gitbus.h"
#include "bridge/result.h"
#include "bridge/run_state.h"

namespace kakeya::client {

// How long request_cancel keeps retrying, in seconds, while other commits (a running job's
// heartbeats, every `heartbeat_s`) keep winning the branch before its cancel push lands.
inline constexpr double kCancelPatienceS = 60.0;

struct CancelOptions {
  double patience_s = kCancelPatienceS;  // no new attempt starts after this many seconds (>= 0)
  // Called after each lost push with the number of attempts so far (progress for people).
  std::function<void(int attempts)> on_lost;
  // Called between making the cancel commit and pushing it. Tests move the branch here to make
  // the push lose; nothing else sets it.
  std::function<void()> before_push;
};

struct CancelOutcome {
  bool requested = false;             // false: nothing to do (already terminal / already requested)
  bridge::RunState state = bridge::RunState::Queued;  // state at the tip the decision was made on
  std::string commit;                 // the cancel commit when requested
  std::string message;                // one line for people
  int attempts = 0;                   // pushes tried, the winning one included (0: nothing pushed)
};

// The cancel.json document: {"requested_by", "created_at" (RFC 3339), "reason"}.
nlohmann::json cancel_document(const std::string& requested_by, const std::string& created_at,
                               const std::string& reason);

// Fetches the tip; if terminal -> "already <state>: nothing to cancel"; if cancel.json is
// already there -> "cancel already requested"; else commits cancel.json on top of the tip and
// push_cas(expected_old = tip). On Lost (someone moved the branch between the fetch and the
// push: a runner's heartbeat, claim or publish), refetch at once and retry — the next heartbeat
// is then furthest away — until `options.patience_s` has passed since the first fetch; then the
// error is `cancel_lost`, naming the attempts. Errors: `not_found` (branch gone), bus errors.
Result<CancelOutcome> request_cancel(bridge::GitBus& bus, const std::string& branch, const std::string& requested_by,
                                     const std::string& reason, const CancelOptions& options = {});

}  // namespace kakeya::client
