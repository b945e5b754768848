#pragma once
// One connection of the git bus to its remote (internal to gitbus.cpp): an anonymous git_remote,
// the libgit2 callbacks (credentials with bounded attempts, deadline checks in every progress
// callback, push status capture) and a watchdog thread that calls git_remote_stop at the deadline.

#include <git2.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "bridge/git_util.h"
#include "bridge/gitbus_stream.h"
#include "bridge/gitbus.h"

namespace kakeya::bridge {

class RemoteSession {
 public:
  // Creates an anonymous remote for `url` in `repo`, starts the watchdog (deadline = now +
  // opts.op_timeout_s) and connects in `direction`. Errors: auth_failed, timeout, transport.
  // REQUIRES: repo, creds outlive the session. Heap-allocated: callbacks hold its address.
  static Result<std::unique_ptr<RemoteSession>> connect(git_repository* repo, const std::string& url,
                                                        const Credentials& creds, const GitBusOptions& opts,
                                                        git_direction direction);
  ~RemoteSession();
  RemoteSession(const RemoteSession&) = delete;
  RemoteSession& operator=(const RemoteSession&) = delete;

  // The advertisement of the connected remote (git_remote_ls), every entry.
  Result<std::vector<RemoteRef>> advertisement();

  git_remote* remote() { return remote_.get(); }
  const git_remote_callbacks& callbacks() const { return callbacks_; }

  // Turns a failed libgit2 call (rc < 0) into an Error: `auth_failed`, `timeout`, otherwise
  // `fallback_code`; the message names the redacted URL, `what` and git_error_last().
  Error failure(ErrorCode fallback_code, const std::string& what) const;

  // True when the last failure was the transport's (auth, deadline, network/TLS/HTTP/SSH/OS class),
  // as opposed to a ref-level rejection.
  bool transport_failed() const;

  // refname -> status reported by push_update_reference (nullopt = accepted).
  const std::map<std::string, std::optional<std::string>>& push_status() const { return push_status_; }

 private:
  RemoteSession(const Credentials& creds, const GitBusOptions& opts, std::string redacted_url);
  bool deadline_passed();
  void start_watchdog();
  void stop_watchdog();

  static int on_credentials(git_credential** out, const char* url, const char* username_from_url,
                            unsigned int allowed_types, void* payload);
  static int on_sideband(const char* str, int len, void* payload);
  static int on_transfer(const git_indexer_progress* stats, void* payload);
  static int on_pack(int stage, uint32_t current, uint32_t total, void* payload);
  static int on_push_transfer(unsigned int current, unsigned int total, size_t bytes, void* payload);
  static int on_push_update_reference(const char* refname, const char* status, void* payload);
  // SSH: pins the server's host key against creds.ssh_known_hosts (bridge/known_hosts.h); an
  // unknown, changed or revoked key refuses the connection (host_key_error_ says why). Other
  // certificates (TLS) pass through to libgit2's own verification.
  static int on_certificate_check(git_cert* cert, int valid, const char* host, void* payload);
  static int check_deadline(void* payload);

  const Credentials& creds_;
  GitBusOptions opts_;
  std::string redacted_url_;
  std::chrono::steady_clock::time_point deadline_;
  git_remote_callbacks callbacks_;
  git::Remote remote_;
  int auth_attempts_ = 0;
  bool auth_failed_ = false;
  std::string auth_detail_;
  int ssh_port_ = 22;                       // of an ssh:// URL (known_hosts looks up [host]:port)
  std::optional<Error> host_key_error_;     // set when on_certificate_check refused the host key
  std::atomic<bool> timed_out_{false};
  std::map<std::string, std::optional<std::string>> push_status_;

  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread watchdog_;
  std::optional<ScopedNetDeadline> net_deadline_;  // socket-level deadline of this thread's I/O
};

}  // namespace kakeya::bridge
