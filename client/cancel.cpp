#include "client/cancel.h"

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
                                     const std::string& reason) {
  const std::string ref = head_ref(branch);
  for (int attempt = 0; attempt < kCancelMaxAttempts; ++attempt) {
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
    KAKEYA_ASSIGN_OR_RETURN(auto pushed, bus.push_cas(ref, out.commit, snap->oid));
    if (pushed == bridge::PushOutcome::Won) {
      out.requested = true;
      out.message = std::string("cancel requested (state ") + bridge::to_string(out.state) +
                    "); the runner stops the job and publishes 'cancelled'";
      return out;
    }
  }
  return make_error(errc::kCancelLost, "the branch '" + branch + "' kept moving: cancel push lost " +
                                       std::to_string(kCancelMaxAttempts) + " times");
}

}  // namespace kakeya::client
