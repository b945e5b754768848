// kakeya doctor: remote, credentials, reachability, push permission, catalog.
#include <iostream>

#include <fmt/format.h>

#include "client/cmd/commands.h"
#include "client/doctor.h"
#include "client/output.h"

namespace kakeya::client::cmd {

Command add_doctor(CLI::App& root, GlobalOptions& g) {
  auto* sub = root.add_subcommand("doctor", "Check remote, credentials, push permission and catalog");
  return {sub, [&g]() {
            auto checks = run_doctor(g);
            bool all = true;
            for (const auto& c : checks) all = all && c.ok;
            if (g.json) {
              print_json(doctor_to_json(checks));
            } else {
              for (const auto& c : checks) {
                std::cout << fmt::format("{:<4} {:<12} {}\n", c.ok ? "ok" : "FAIL", c.name, c.detail);
              }
              std::cout << std::flush;
            }
            return all ? kExitOk : kExitFailure;
          }};
}

}  // namespace kakeya::client::cmd
