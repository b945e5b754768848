#pragma once
// Requesting cancellation of a run: a CAS commit adding `.kakeya/run/cancel.json` (DESIGN §2).

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "bridge/gitbus.h"
#include "bridge/result.h"
#include "bridge/run_state.h"

namespace kakeya::client {

inline constexpr int kCancelMaxAttempts = 5;

struct CancelOutcome {
  bool requested = false;             // false: nothing to do (already terminal / already requested)
  bridge::RunState state = bridge::RunState::Queued;  // state at the tip the decision was made on
  std::string commit;                 // the cancel commit when requested
  std::string message;                // one line for people
};

// The cancel.json document: {"requested_by", "created_at" (RFC 3339), "reason"}.
nlohmann::json cancel_document(const std::string& requested_by, const std::string& created_at,
                               const std::string& reason);

// Fetches the tip; if terminal -> "already <state>: nothing to cancel"; if cancel.json is
// already there -> "cancel already requested"; else commits cancel.json on top of the tip and
// push_cas(expected_old = tip). On Lost, refetch and retry, at most kCancelMaxAttempts times
// (error `cancel_lost`). Errors: `not_found` (branch gone), bus errors.
Result<CancelOutcome> request_cancel(bridge::GitBus& bus, const std::string& branch, const std::string& requested_by,
                                     const std::string& reason);

}  // namespace kakeya::client
