#include "client/run_log.h"

#include <fmt/format.h>

#include "bridge/layout.h"
#include "bridge/run_state.h"
#include "bridge/utf8.h"

namespace kakeya::client {

Result<LogStream> parse_log_stream(std::string_view text) {
  if (text == "combined") return LogStream::Combined;
  if (text == "stdout") return LogStream::Stdout;
  if (text == "stderr") return LogStream::Stderr;
  return make_error(errc::kUsage, "--stream '" + bridge::printable(text, 40) + "' is not combined, stdout or stderr");
}

Result<std::optional<std::string>> read_run_log(bridge::GitBus& bus, const std::string& oid, LogStream stream) {
  const char* file = stream == LogStream::Stdout ? "stdout.log" : stream == LogStream::Stderr ? "stderr.log" : "job.log";
  return bus.read_file(oid, std::string(bridge::kLogsDir) + file);
}

std::vector<std::string> last_lines(std::string_view text, std::size_t n) {
  std::vector<std::string> lines;
  if (n == 0 || text.empty()) return lines;
  if (text.back() == '\n') text.remove_suffix(1);
  std::size_t end = text.size();
  while (lines.size() < n) {
    const std::size_t nl = end == 0 ? std::string_view::npos : text.rfind('\n', end - 1);
    const std::size_t start = nl == std::string_view::npos ? 0 : nl + 1;
    lines.emplace_back(text.substr(start, end - start));
    if (nl == std::string_view::npos) break;
    end = nl;
  }
  return {lines.rbegin(), lines.rend()};
}

void print_end_context(std::ostream& out, const BranchSnapshot& snap, const std::optional<std::string>& log,
                       std::size_t n) {
  const auto& st = snap.status;
  out << fmt::format("kakeya: {}: {}: {}\n", bridge::printable(snap.branch), bridge::to_string(st.state),
                     st.reason.empty() ? "(no reason given)" : bridge::printable(st.reason, 400));
  const std::string_view text = log ? std::string_view(*log) : std::string_view(st.log_tail);
  const auto lines = last_lines(text, n);
  if (lines.empty()) {
    out << "kakeya: the job wrote no log\n";
    return;
  }
  out << fmt::format("kakeya: last {} lines of the job log{} (all of it: kakeya logs {}):\n", lines.size(),
                     log ? "" : " (from the last heartbeat)", bridge::printable(snap.branch));
  for (const auto& line : lines) out << "  | " << bridge::printable(line, 1000) << "\n";
}

}  // namespace kakeya::client
