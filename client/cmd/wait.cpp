// kakeya wait BRANCH|NONCE --wait SECONDS [--poll SECONDS]
#include "client/cmd/commands.h"
#include "client/output.h"
#include "client/wait_report.h"

namespace kakeya::client::cmd {

Command add_wait(CLI::App& root, GlobalOptions& g) {
  auto* sub = root.add_subcommand("wait", "Wait for a request to reach a terminal state (exit 0/1/2/3)");
  auto target = std::make_shared<std::string>();
  auto wait = std::make_shared<WaitOptions>();
  auto fetch = std::make_shared<std::optional<std::filesystem::path>>();
  sub->add_option("target", *target, "Request branch (with or without its prefix), nonce or short name")->required();
  sub->add_option("--wait", wait->timeout_s, "Seconds to wait for a terminal state")
      ->required()
      ->check(CLI::NonNegativeNumber);
  sub->add_option("--poll", wait->poll_s, "Seconds between polls (default 1)")->check(CLI::PositiveNumber);
  sub->add_option("--fetch", *fetch, "Copy .kakeya/run/ of the final tip into DIR");
  return {sub, [&g, target, wait, fetch]() {
            auto session = open_session(g);
            if (!session.ok()) return fail(g, session.error());
            auto branch = resolve_branch_arg(*session, *target);
            if (!branch.ok()) return fail(g, branch.error());
            return wait_and_report(g, *session, *branch, *wait, *fetch);
          }};
}

}  // namespace kakeya::client::cmd
