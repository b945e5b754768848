#pragma once
// --threads for engine commands: 0 means every logical CPU; more than the machine has is refused
// (an oversubscribed pool only slows decode down), with a message naming both numbers.
#include <string>
#include <thread>

#include "bridge/result.h"

namespace kakeya::engine::cmd {

// Returns the thread count to use for `requested` (>= 0). Errors: "bad_param".
inline Result<int> resolve_threads(int requested) {
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (requested < 0) return make_error("bad_param", "--threads " + std::to_string(requested) + " is negative");
  if (requested == 0) return cores;
  if (requested > cores) {
    return make_error("bad_param", "--threads " + std::to_string(requested) + " exceeds the " +
                                       std::to_string(cores) + " logical CPUs of this machine");
  }
  return requested;
}

}  // namespace kakeya::engine::cmd
