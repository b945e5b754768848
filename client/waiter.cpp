#include "client/waiter.h"

#include <chrono>
#include <ostream>
#include <thread>

#include <fmt/format.h>

#include "bridge/layout.h"
#include "bridge/utf8.h"
#include "client/session.h"
#include "client/wait_outcome.h"

namespace kakeya::client {
namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// The advertised oid of exactly `ref` (ls_remote matches by prefix).
Result<std::optional<std::string>> remote_oid(bridge::GitBus& bus, const std::string& ref) {
  KAKEYA_ASSIGN_OR_RETURN(auto refs, bus.ls_remote(ref));
  for (const auto& r : refs) {
    if (r.name == ref) return std::optional<std::string>(r.oid);
  }
  return std::optional<std::string>{};
}

}  // namespace

Result<WaitResult> wait_for_run(bridge::GitBus& bus, const std::string& branch, const WaitOptions& opts,
                                ProgressPrinter& printer, std::ostream& warnings) {
  const auto t0 = Clock::now();
  const auto deadline = t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(opts.timeout_s));
  const std::string ref = head_ref(branch);
  ProgressTracker tracker;
  std::optional<BranchSnapshot> last;
  std::optional<Error> last_error;
  while (true) {
    auto oid = remote_oid(bus, ref);
    if (!oid.ok()) {
      if (oid.error().code == errc::kAuthFailed) return oid.error();
      warnings << "kakeya: warning: " << oid.error().str() << " (retrying)\n" << std::flush;
      last_error = oid.error();
    } else if (!oid->has_value()) {
      return make_error(errc::kNotFound, "branch '" + branch + "' does not exist on the remote");
    } else if (!last || last->oid != **oid) {
      auto fetched = bus.fetch({ref});
      if (!fetched.ok()) {
        if (fetched.error().code == errc::kAuthFailed) return fetched.error();
        warnings << "kakeya: warning: " << fetched.error().str() << " (retrying)\n" << std::flush;
        last_error = fetched.error();
      } else if (auto it = fetched->find(ref); it != fetched->end()) {
        KAKEYA_ASSIGN_OR_RETURN(auto snap, read_snapshot(bus, branch, it->second));
        for (const auto& e : tracker.observe(snap, since(t0))) printer.emit(e);
        last = std::move(snap);
      }
    }
    if (last && bridge::is_terminal(last->status.state)) break;
    const auto now = Clock::now();
    if (now >= deadline) break;
    auto step = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(opts.poll_s));
    std::this_thread::sleep_for(std::min(step, deadline - now));
  }
  if (!last) {
    if (last_error) return *last_error;
    return make_error(errc::kNotFound, "branch '" + branch + "' could not be read");
  }
  WaitResult r;
  r.seconds = since(t0);
  r.exit_code = wait_exit_code(last->status.state);
  KAKEYA_ASSIGN_OR_RETURN(r.results, bus.list_dir(last->oid, std::string(bridge::kResultsDir.substr(0, bridge::kResultsDir.size() - 1))));
  r.last = std::move(*last);
  return r;
}

const bridge::CommandOutcome* summary_command(const std::optional<bridge::RunSummary>& summary) {
  if (!summary || !summary->run || !summary->run->command) return nullptr;
  return &*summary->run->command;
}

nlohmann::json done_event(const WaitResult& r) {
  const auto& st = r.last.status;
  const bridge::CommandOutcome* command = summary_command(r.last.summary);
  return nlohmann::json{{"event", "done"},
                        {"branch", r.last.branch},
                        {"commit", r.last.oid},
                        {"state", bridge::to_string(st.state)},
                        {"terminal", bridge::is_terminal(st.state)},
                        {"reason", st.reason},
                        {"exit_code", r.exit_code},
                        {"job_exit_code", command ? nlohmann::json(command->exit_code) : nlohmann::json(nullptr)},
                        {"job_seconds", command ? nlohmann::json(command->duration_s) : nlohmann::json(nullptr)},
                        {"seconds", r.seconds},
                        {"runner_id", st.runner_id},
                        {"results", r.results}};
}

std::string format_summary(const nlohmann::json& d) {
  std::string out;
  std::string state = d.value("state", std::string());
  if (!d.value("terminal", false)) state += " (deadline reached)";
  // Branch, reason, runner and result names come from the remote: shown escaped.
  out += fmt::format("branch:    {}\n", bridge::printable(d.value("branch", std::string())));
  out += fmt::format("state:     {}\n", state);
  if (!d.value("reason", std::string()).empty()) out += fmt::format("reason:    {}\n", bridge::printable(d.value("reason", std::string())));
  out += fmt::format("exit code: {}", d.value("exit_code", 0));
  if (d.contains("job_exit_code") && d["job_exit_code"].is_number_integer()) {
    out += fmt::format(" (job exited {})", d["job_exit_code"].get<int64_t>());
  }
  out += "\n";
  if (d.contains("job_seconds") && d["job_seconds"].is_number()) {
    out += fmt::format("job time:  {:.1f} s\n", d["job_seconds"].get<double>());
  }
  out += fmt::format("waited:    {:.1f} s\n", d.value("seconds", 0.0));
  const std::string runner = d.value("runner_id", std::string());
  out += fmt::format("runner:    {}\n", runner.empty() ? "(none)" : bridge::printable(runner));
  const auto& results = d["results"];
  if (results.empty()) {
    out += "results:   (none)\n";
  } else {
    out += "results:\n";
    for (const auto& f : results) out += "  " + bridge::printable(f.get<std::string>()) + "\n";
  }
  return out;
}

}  // namespace kakeya::client
