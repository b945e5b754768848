#pragma once
// A deadline-aware replacement for libgit2's standard socket stream (internal to the git bus).
//
// libgit2 1.5 has no network timeouts: a connect() to a black-holed address or a recv() from a
// server that stopped answering blocks in the kernel, where neither git_remote_stop() nor the
// progress callbacks can reach it. This stream (registered once as GIT_STREAM_STANDARD, so it
// also carries TLS, which libgit2 layers on top of the standard stream) uses non-blocking sockets
// and poll() in slices of at most 100 ms, and fails an operation with a GIT_ERROR_NET error once
// the calling thread's deadline (ScopedNetDeadline) has passed or its abort flag is set.
// Threads without a deadline get kDefaultNetDeadlineS.
#include <atomic>
#include <chrono>

namespace kakeya::bridge {

inline constexpr int kDefaultNetDeadlineS = 300;

// Registers the stream with libgit2 (idempotent, thread-safe). Call after git_libgit2_init.
void install_deadline_stream();

// Sets the calling thread's network deadline for its lifetime. `expired` (may be null) is set to
// true when a socket operation gives up because of the deadline; setting it from another thread
// (a watchdog) aborts the next socket wait within 100 ms. Not nestable; same-thread only.
class ScopedNetDeadline {
 public:
  ScopedNetDeadline(std::chrono::steady_clock::time_point at, std::atomic<bool>* expired);
  ~ScopedNetDeadline();
  ScopedNetDeadline(const ScopedNetDeadline&) = delete;
  ScopedNetDeadline& operator=(const ScopedNetDeadline&) = delete;
};

}  // namespace kakeya::bridge
