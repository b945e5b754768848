// kakeya fetch BRANCH|NONCE --dest DIR
#include <iostream>

#include "bridge/utf8.h"
#include "client/cmd/commands.h"
#include "client/output.h"
#include "client/run_files.h"
#include "client/snapshot.h"

namespace kakeya::client::cmd {

Command add_fetch(CLI::App& root, GlobalOptions& g) {
  auto* sub = root.add_subcommand("fetch", "Copy .kakeya/run/ (status, summary, gate, logs, results) into DIR");
  auto target = std::make_shared<std::string>();
  auto dest = std::make_shared<std::filesystem::path>();
  sub->add_option("target", *target, "Request branch (with or without its prefix), nonce or short name")->required();
  sub->add_option("--dest", *dest, "Destination directory (created)")->required();
  return {sub, [&g, target, dest]() {
            auto session = open_session(g);
            if (!session.ok()) return fail(g, session.error());
            auto branch = resolve_branch_arg(*session, *target);
            if (!branch.ok()) return fail(g, branch.error());
            auto fetched = session->bus.fetch({head_ref(*branch)});
            if (!fetched.ok()) return fail(g, fetched.error());
            auto it = fetched->find(head_ref(*branch));
            if (it == fetched->end()) return fail(g, make_error(errc::kNotFound, "branch '" + *branch + "' disappeared"));
            auto files = fetch_run_files(session->bus, it->second, *dest);
            if (!files.ok()) return fail(g, files.error());
            if (g.json) {
              nlohmann::json list = nlohmann::json::array();
              for (const auto& f : *files) list.push_back(f.string());
              print_json({{"branch", *branch}, {"commit", it->second}, {"dest", dest->string()}, {"files", list}});
            } else {
              for (const auto& f : *files) std::cout << bridge::printable(f.string()) << "\n";
              std::cout << std::flush;
            }
            return kExitOk;
          }};
}

}  // namespace kakeya::client::cmd
