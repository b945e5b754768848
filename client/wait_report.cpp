#include "client/wait_report.h"

#include <iostream>

#include "bridge/json_text.h"
#include "bridge/utf8.h"
#include "client/output.h"
#include "client/run_files.h"
#include "client/run_log.h"

namespace kakeya::client {

namespace {
constexpr std::size_t kEndContextLines = 20;
}  // namespace

int wait_and_report(const GlobalOptions& g, Session& session, const std::string& branch, const WaitOptions& wait,
                    const std::optional<std::filesystem::path>& fetch_dir) {
  const bool json = g.json;
  ProgressPrinter::Mode mode = json ? ProgressPrinter::Mode::Json
                               : stderr_is_tty() ? ProgressPrinter::Mode::Human
                                                 : ProgressPrinter::Mode::Quiet;
  ProgressPrinter printer(mode, std::cerr, std::cout);
  auto r = wait_for_run(session.bus, branch, wait, printer, std::cerr);
  if (!r.ok()) return fail(g, r.error());
  nlohmann::json done = done_event(*r);
  int code = r->exit_code;
  if (fetch_dir) {
    auto files = fetch_run_files(session.bus, r->last.oid, *fetch_dir);
    if (!files.ok()) {
      report_error(g, files.error(), kExitFailure);
      if (code == kExitOk) code = kExitFailure;
      done["exit_code"] = code;
    } else {
      nlohmann::json list = nlohmann::json::array();
      for (const auto& f : *files) list.push_back(f.string());
      done["fetched"] = list;
    }
  }
  // Why it ended and how, on stderr whether or not it is a terminal (CI logs show it too).
  if (bridge::is_terminal(r->last.status.state) && r->last.status.state != bridge::RunState::Succeeded) {
    auto log = read_run_log(session.bus, r->last.oid, LogStream::Combined);
    print_end_context(std::cerr, r->last, log.ok() ? *log : std::nullopt, kEndContextLines);
    std::cerr << std::flush;
  }
  if (json) {
    std::cout << bridge::to_json_text(done) << std::endl;
  } else {
    std::cout << format_summary(done);
    if (done.contains("fetched")) {
      std::cout << "fetched into " << fetch_dir->string() << ":\n";
      for (const auto& f : done["fetched"]) std::cout << "  " << bridge::printable(f.get<std::string>()) << "\n";
    }
    std::cout << std::flush;
  }
  return code;
}

}  // namespace kakeya::client
