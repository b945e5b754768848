// kakeya presets [NAME] [--within DURATION] [--local]: what the live runners offer (their
// kakeya/runners/<id> branches), with parameters from the local catalog; the local catalog alone
// when no runner can be seen, saying so.
#include <iostream>

#include <fmt/format.h>

#include "bridge/units.h"
#include "bridge/utf8.h"
#include "client/cmd/commands.h"
#include "client/fleet.h"
#include "client/offered_presets.h"
#include "client/output.h"
#include "client/presets_view.h"

namespace kakeya::client::cmd {

Command add_presets(CLI::App& root, GlobalOptions& g) {
  auto* sub = root.add_subcommand("presets", "List the presets live runners offer (or the local catalog), or show one");
  auto name = std::make_shared<std::string>();
  auto within = std::make_shared<std::string>("5m");
  auto local_only = std::make_shared<bool>(false);
  sub->add_option("name", *name, "Show only this preset");
  sub->add_option("--within", *within,
                  "Runners count as live when their last heartbeat is at most this old (default 5m, the runners' "
                  "default lease)");
  sub->add_flag("--local", *local_only, "Show the local catalog without asking the remote");
  return {sub, [&g, name, within, local_only]() {
            auto within_s = bridge::parse_duration_s(*within);
            if (!within_s.ok()) return fail(g, within_s.error());
            auto offered = offered_presets(g, *within_s, *local_only);
            if (!offered.ok()) return fail(g, offered.error());
            if (!name->empty()) {
              std::erase_if(offered->presets, [&](const OfferedPreset& p) { return p.name != *name; });
              if (offered->presets.empty()) {
                return fail(g, make_error(errc::kUnknownPreset, "preset '" + bridge::printable(*name) + "' is not offered (" +
                                                             offered->note + ")"));
              }
            }
            if (g.json) {
              print_json(to_json(*offered));
              return kExitOk;
            }
            std::cout << "# " << bridge::printable(offered->note) << "\n";
            for (const auto& p : offered->presets) {
              std::cout << "\n";
              if (p.spec) {
                std::cout << format_preset(*p.spec);
              } else {
                std::cout << bridge::printable(p.name) << "\n  (not in the local catalog: parameters unknown here)\n";
              }
              if (!p.offered_by.empty()) {
                std::cout << "  offered by: " << bridge::printable(fmt::format("{}", fmt::join(p.offered_by, ", ")))
                          << "\n";
              }
            }
            std::cout << std::flush;
            return kExitOk;
          }};
}

}  // namespace kakeya::client::cmd
