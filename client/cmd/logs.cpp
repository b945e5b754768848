// kakeya logs BRANCH|NONCE [--stream combined|stdout|stderr] [--follow [--poll S]]
//
// A finished run: its whole published log (redacted by the runner) on stdout, as the runner wrote
// it. A run still going: the log lines of its last heartbeat (a window of the most recent lines),
// and with --follow the new lines of each heartbeat until it ends, then what the final log adds.
// Exit 0 when a log was shown (whatever the run's state), 1 when the run has none (never ran a
// command), 75/64 as every command.
#include <chrono>
#include <iostream>
#include <thread>

#include "bridge/run_state.h"
#include "client/cmd/commands.h"
#include "client/log_dedupe.h"
#include "client/output.h"
#include "client/run_log.h"
#include "client/snapshot.h"

namespace kakeya::client::cmd {
namespace {

struct LogsOptions {
  std::string target;
  std::string stream = "combined";
  bool follow = false;
  double poll_s = 1;
};

void print_lines(const std::vector<std::string>& lines) {
  for (const auto& l : lines) std::cout << l << '\n';
  std::cout << std::flush;
}

int show(const GlobalOptions& g, Session& session, const std::string& branch, const LogsOptions& o, LogStream stream) {
  LogTailDedupe shown;
  bool announced = false;
  while (true) {
    auto snap = fetch_snapshot(session.bus, branch);
    if (!snap.ok()) return fail(g, snap.error());
    if (!*snap) return fail(g, make_error(errc::kNotFound, "branch '" + branch + "' disappeared"));
    const BranchSnapshot& s = **snap;
    if (bridge::is_terminal(s.status.state)) {
      auto log = read_run_log(session.bus, s.oid, stream);
      if (!log.ok()) return fail(g, log.error());
      if (!*log) {
        std::cerr << "kakeya: " << branch << " ended " << bridge::to_string(s.status.state)
                  << " without a log (the command never ran): " << s.status.reason << "\n";
        return kExitFailure;
      }
      if (!announced) {
        std::cout << **log << std::flush;  // the whole log, bytes as published
      } else {
        // Following: only what the heartbeats did not show.
        print_lines(shown.update(s.status.log_tail));
      }
      return kExitOk;
    }
    // Not finished: heartbeats carry the tail of job.log only.
    if (!announced) {
      std::cerr << "kakeya: " << branch << " is " << bridge::to_string(s.status.state)
                << (o.follow ? "; following its heartbeats" : "; the last heartbeat's log lines (--follow to follow)")
                << (stream == LogStream::Combined ? "" : "; per-stream logs are published when it ends, showing job.log")
                << "\n";
      announced = true;
    }
    print_lines(shown.update(s.status.log_tail));
    if (!o.follow) return kExitOk;
    std::this_thread::sleep_for(std::chrono::duration<double>(o.poll_s));
  }
}

}  // namespace

Command add_logs(CLI::App& root, GlobalOptions& g) {
  auto* sub = root.add_subcommand("logs", "Print the (redacted) job log of a request; --follow while it runs");
  auto o = std::make_shared<LogsOptions>();
  sub->add_option("target", o->target, "Request branch (with or without its prefix), nonce or short name")->required();
  sub->add_option("--stream", o->stream, "combined (job.log, default), stdout or stderr (each stream alone)");
  sub->add_flag("--follow,-f", o->follow, "Follow a running request through its heartbeats until it ends");
  sub->add_option("--poll", o->poll_s, "Seconds between polls with --follow (default 1)")->check(CLI::PositiveNumber);
  return {sub, [&g, o]() {
            auto stream = parse_log_stream(o->stream);
            if (!stream.ok()) return fail(g, stream.error());
            auto session = open_session(g);
            if (!session.ok()) return fail(g, session.error());
            auto branch = resolve_branch_arg(*session, o->target);
            if (!branch.ok()) return fail(g, branch.error());
            return show(g, *session, *branch, *o, *stream);
          }};
}

}  // namespace kakeya::client::cmd
