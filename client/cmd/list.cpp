// kakeya list [--state S]
#include <iostream>

#include <fmt/format.h>

#include "bridge/utf8.h"
#include "client/cmd/commands.h"
#include "client/list.h"
#include "client/output.h"
#include "client/session.h"

namespace kakeya::client::cmd {

Command add_list(CLI::App& root, GlobalOptions& g) {
  auto* sub = root.add_subcommand("list", "List the request branches of the namespace");
  auto state = std::make_shared<std::string>();
  sub->add_option("--state", *state, "Only requests in this state (queued, running, succeeded, ...)");
  return {sub, [&g, state]() {
            std::optional<bridge::RunState> filter;
            if (!state->empty()) {
              filter = bridge::parse_run_state(*state);
              if (!filter) return fail(g, make_error(errc::kBadState, "--state '" + *state + "' is not a run state"));
            }
            auto session = open_session(g);
            if (!session.ok()) return fail(g, session.error());
            auto entries = list_requests(session->bus, session->prefix, filter);
            if (!entries.ok()) return fail(g, entries.error());
            if (g.json) {
              nlohmann::json arr = nlohmann::json::array();
              for (const auto& e : *entries) arr.push_back(list_entry_to_json(e));
              print_json(arr);
              return kExitOk;
            }
            std::cout << fmt::format("{:<48} {:<18} {:<12} {:<20} {}\n", "BRANCH", "PRESET", "STATE", "RUNNER",
                                     "UPDATED");
            for (const auto& e : *entries) {
              const auto p = [](const std::string& v) { return v.empty() ? std::string("-") : bridge::printable(v); };
              std::cout << fmt::format("{:<48} {:<18} {:<12} {:<20} {}\n", p(e.branch), p(e.preset), p(e.state),
                                       p(e.runner_id), p(e.updated_at));
            }
            std::cout << std::flush;
            return kExitOk;
          }};
}

}  // namespace kakeya::client::cmd
