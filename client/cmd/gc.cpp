// kakeya gc --older-than DURATION [--dry-run]
#include <iostream>

#include <fmt/format.h>

#include "bridge/utf8.h"
#include "client/cmd/commands.h"
#include "client/fleet.h"
#include "client/output.h"
#include "client/session.h"

namespace kakeya::client::cmd {

Command add_gc(CLI::App& root, GlobalOptions& g) {
  auto* sub = root.add_subcommand(
      "gc", "Delete finished request branches older than a duration (CAS delete; never queued or running ones)");
  auto older = std::make_shared<std::string>();
  auto dry = std::make_shared<bool>(false);
  sub->add_option("--older-than", *older, "Age of the final status, e.g. 7d, 12h, 30m, 0s")->required();
  sub->add_flag("--dry-run", *dry, "Only list what would be deleted");
  return {sub, [&g, older, dry]() {
            auto limit = parse_duration_s(*older);
            if (!limit.ok()) return report_error(limit.error(), kExitUsage);
            auto session = open_session(g);
            if (!session.ok()) return fail(session.error());
            auto report = gc_requests(session->bus, session->prefix, *limit, *dry);
            if (!report.ok()) return fail(report.error());
            int errors = 0;
            for (const auto& c : report->candidates) errors += c.outcome.starts_with("error") ? 1 : 0;
            if (g.json) {
              nlohmann::json arr = nlohmann::json::array();
              for (const auto& c : report->candidates) {
                arr.push_back({{"branch", c.branch}, {"commit", c.commit}, {"state", c.state},
                               {"updated_at", c.updated_at}, {"age_s", c.age_s}, {"outcome", c.outcome}});
              }
              print_json({{"dry_run", *dry}, {"older_than_s", *limit}, {"candidates", arr}, {"kept", report->kept}});
            } else {
              for (const auto& c : report->candidates) {
                std::cout << fmt::format("{:<13} {:<48} {:<12} {}\n", c.outcome, bridge::printable(c.branch), c.state,
                                         bridge::printable(c.updated_at));
              }
              std::cout << fmt::format("{} {} finished request branch(es); {} kept (not finished or too recent)\n",
                                       *dry ? "would delete" : "deleted",
                                       *dry ? report->candidates.size()
                                            : report->candidates.size() - static_cast<size_t>(errors),
                                       report->kept)
                        << std::flush;
            }
            return errors == 0 ? kExitOk : kExitFailure;
          }};
}

}  // namespace kakeya::client::cmd
