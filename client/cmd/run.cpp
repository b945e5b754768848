// kakeya run PRESET ... --wait SECONDS [--fetch DIR]: request + wait.
#include <iostream>

#include "bridge/json_text.h"
#include "client/cmd/commands.h"
#include "client/output.h"
#include "client/request_flags.h"
#include "client/wait_report.h"

namespace kakeya::client::cmd {

Command add_run(CLI::App& root, GlobalOptions& g) {
  auto* sub = root.add_subcommand("run", "Push a request for PRESET and wait for its result");
  auto opts = std::make_shared<RequestOptions>();
  auto wait = std::make_shared<WaitOptions>();
  auto fetch = std::make_shared<std::optional<std::filesystem::path>>();
  add_request_flags(*sub, *opts);
  sub->add_option("--wait", wait->timeout_s, "Seconds to wait for a terminal state")
      ->required()
      ->check(CLI::NonNegativeNumber);
  sub->add_option("--poll", wait->poll_s, "Seconds between polls (default 1)")->check(CLI::PositiveNumber);
  sub->add_option("--fetch", *fetch, "Copy .kakeya/run/ of the final tip into DIR");
  return {sub, [&g, opts, wait, fetch]() {
            std::optional<Submission> s;
            std::optional<Session> session;
            if (int rc = submit(g, *opts, s, session); rc != kExitOk) return rc;
            if (g.json) {
              nlohmann::json ev = submission_to_json(*s, session->remote);
              ev["event"] = "request";
              std::cout << bridge::to_json_text(ev) << std::endl;
            } else {
              std::cerr << "requested " << s->branch << std::endl;
            }
            return wait_and_report(g, *session, s->branch, *wait, *fetch);
          }};
}

}  // namespace kakeya::client::cmd
