#pragma once
// Exit codes of `kakeya run` / `kakeya wait` (scripts and CI branch on them).

#include "bridge/run_state.h"

namespace kakeya::client {

inline constexpr int kExitStillRunning = 2;  // claimed or running when the deadline passed
inline constexpr int kExitNeverClaimed = 3;  // still queued when the deadline passed

// succeeded -> 0; failed, gate_failed, timeout, cancelled, rejected, infra_error -> 1;
// claimed, running -> 2; queued -> 3. `state` is the last state observed.
int wait_exit_code(bridge::RunState state);

}  // namespace kakeya::client
