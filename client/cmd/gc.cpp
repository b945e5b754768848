// kakeya gc --older-than DURATION [--dry-run | --yes]
#include <iostream>

#include <fmt/format.h>

#include "bridge/units.h"
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
  auto yes = std::make_shared<bool>(false);
  sub->add_option("--older-than", *older, "Age of the final status with its unit: 30m, 12h, 7d, 0s")->required();
  auto* dry_flag = sub->add_flag("--dry-run", *dry,
                                 "Only list what would be deleted (the default when stdin is a terminal)");
  sub->add_flag("--yes,--no-dry-run", *yes, "Delete (the default when stdin is not a terminal)")->excludes(dry_flag);
  return {sub, [&g, older, dry, yes]() {
            auto limit = bridge::parse_duration_s(*older);
            if (!limit.ok()) return fail(g, limit.error());
            const bool dry_run = gc_is_dry_run(*dry, *yes, stdin_is_tty());
            auto session = open_session(g);
            if (!session.ok()) return fail(g, session.error());
            auto report = gc_requests(session->bus, session->prefix, *limit, dry_run);
            if (!report.ok()) return fail(g, report.error());
            int errors = 0;
            for (const auto& c : report->candidates) errors += c.outcome.starts_with("error") ? 1 : 0;
            if (g.json) {
              nlohmann::json arr = nlohmann::json::array();
              for (const auto& c : report->candidates) {
                arr.push_back({{"branch", c.branch}, {"commit", c.commit}, {"state", c.state},
                               {"updated_at", c.updated_at}, {"age_s", c.age_s}, {"outcome", c.outcome}});
              }
              print_json({{"dry_run", dry_run}, {"older_than_s", *limit}, {"candidates", arr}, {"kept", report->kept}});
            } else {
              for (const auto& c : report->candidates) {
                std::cout << fmt::format("{:<13} {:<48} {:<12} {}\n", c.outcome, bridge::printable(c.branch), c.state,
                                         bridge::printable(c.updated_at));
              }
              std::cout << fmt::format("{} {} finished request branch(es); {} kept (not finished or too recent)\n",
                                       dry_run ? "would delete" : "deleted",
                                       dry_run ? report->candidates.size()
                                               : report->candidates.size() - static_cast<size_t>(errors),
                                       report->kept);
              if (dry_run && !*dry && !report->candidates.empty()) {
                std::cout << "(a dry run because stdin is a terminal; run again with --yes to delete)\n";
              }
              std::cout << std::flush;
            }
            return errors == 0 ? kExitOk : kExitFailure;
          }};
}

}  // namespace kakeya::client::cmd
