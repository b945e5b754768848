#include "client/cancel.h"

#include <chrono>
#include <cmath>

#include "bridge/cancel_request.h"
#include "bridge/json_text.h"
#include "bridge/layout.h"
#include "bridge/request.h"
#include "client/session.h"
#include "client/snapshot.h"

namespace kakeya::client {

nlohmann::json cancel_document(const std::string& requested_by, const std::string& created_at,
                               const std::string& reason) {
  return bridge::to_json(bridge::CancelRequest{requested_by, created_at, reason});
}

Result<CancelOutcome> request_cancel(bridge::GitBus& bus, const std::string& branch, const std::string& requested_by,
                                     const std::string& reason, const CancelOptions& options) {
  if (!std::isfinite(options.patience_s) || options.patience_s < 0) {
    return make_error(errc::kBadValue, "cancel patience " + std::to_string(options.patience_s) +
                                       " s: must be a finite number of seconds >= 0");
  }
  const std::string ref = head_ref(branch);
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  const auto patience = std::chrono::duration<double>(options.patience_s);
  int attempts = 0;
  while (attempts == 0 || Clock::now() - start < patience) {
    KAKEYA_ASSIGN_OR_RETURN(auto snap, fetch_snapshot(bus, branch));
    if (!snap) return make_error(errc::kNotFound, "branch '" + branch + "' does not exist on the remote");
    CancelOutcome out;
    out.state = snap->status.state;
    if (bridge::is_terminal(out.state)) {
      out.message = std::string("already ") + bridge::to_string(out.state) + ": nothing to cancel";
      return out;
    }
    if (snap->cancel_requested) {
      out.message = std::string("cancel already requested (state ") + bridge::to_string(out.state) + ")";
      return out;
    }
    const bridge::CancelRequest cancel{requested_by, bridge::now_rfc3339(), reason};
    KAKEYA_TRY(bridge::validate_cancel(cancel));  // what the runner will accept
    const std::string doc = bridge::to_json_file(bridge::to_json(cancel));
    KAKEYA_ASSIGN_OR_RETURN(
        out.commit, bus.make_commit(snap->oid, snap->oid, {{std::string(bridge::kCancelPath), doc}},
                                    "kakeya cancel: " + branch + "\n\nreason: " + reason + "\n",
                                    client_author(requested_by)));
    if (options.before_push) options.before_push();
    ++attempts;
    KAKEYA_ASSIGN_OR_RETURN(auto pushed, bus.push_cas(ref, out.commit, snap->oid));
    if (pushed == bridge::PushOutcome::Won) {
      out.requested = true;
      out.attempts = attempts;
      out.message = std::string("cancel requested (state ") + bridge::to_string(out.state) +
                    "); the runner stops the job and publishes 'cancelled'";
      return out;
    }
    if (options.on_lost) options.on_lost(attempts);
  }
  const double waited_s = std::chrono::duration<double>(Clock::now() - start).count();
  return make_error(errc::kCancelLost,
                    "the branch '" + branch + "' kept moving: the cancel push lost its compare-and-swap " +
                        std::to_string(attempts) + " times in " + std::to_string(std::lround(waited_s)) +
                        " s (patience " + std::to_string(std::lround(options.patience_s)) +
                        " s); something commits to it faster than one fetch and push");
}

}  // namespace kakeya::client
