#include "client/wait_outcome.h"

#include "client/settings.h"

namespace kakeya::client {

int wait_exit_code(bridge::RunState state) {
  using bridge::RunState;
  switch (state) {
    case RunState::Succeeded:
      return kExitOk;
    case RunState::Failed:
    case RunState::GateFailed:
    case RunState::Timeout:
    case RunState::Cancelled:
    case RunState::Rejected:
    case RunState::InfraError:
      return kExitFailure;
    case RunState::Claimed:
    case RunState::Running:
      return kExitStillRunning;
    case RunState::Queued:
      return kExitNeverClaimed;
  }
  return kExitFailure;
}

}  // namespace kakeya::client
