// kakeya cancel BRANCH|NONCE [--reason TEXT]
#include <iostream>

#include "bridge/utf8.h"
#include "client/cancel.h"
#include "client/cmd/commands.h"
#include "client/output.h"

namespace kakeya::client::cmd {

Command add_cancel(CLI::App& root, GlobalOptions& g) {
  auto* sub = root.add_subcommand("cancel", "Ask the runner to cancel a request (no-op if already finished)");
  auto target = std::make_shared<std::string>();
  auto reason = std::make_shared<std::string>();
  sub->add_option("target", *target, "Request branch (with or without its prefix), nonce or short name")->required();
  sub->add_option("--reason", *reason, "Why (recorded in cancel.json)");
  return {sub, [&g, target, reason]() {
            auto session = open_session(g);
            if (!session.ok()) return fail(g, session.error());
            auto branch = resolve_branch_arg(*session, *target);
            if (!branch.ok()) return fail(g, branch.error());
            const std::string by = default_requested_by();
            CancelOptions options;
            options.on_lost = [&](int attempts) {
              std::cerr << "kakeya: cancel push " << attempts << " lost to a newer commit on "
                        << bridge::printable(*branch) << "; retrying for up to " << kCancelPatienceS << " s"
                        << std::endl;
            };
            auto out = request_cancel(session->bus, *branch, by, reason->empty() ? "cancelled by " + by : *reason,
                                      options);
            if (!out.ok()) return fail(g, out.error());
            if (g.json) {
              print_json({{"branch", *branch},
                          {"requested", out->requested},
                          {"state", bridge::to_string(out->state)},
                          {"commit", out->commit.empty() ? nlohmann::json(nullptr) : nlohmann::json(out->commit)},
                          {"attempts", out->attempts},
                          {"message", out->message}});
            } else {
              std::cout << bridge::printable(*branch) << ": " << out->message << std::endl;
            }
            return kExitOk;
          }};
}

}  // namespace kakeya::client::cmd
