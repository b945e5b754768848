// kakeya status BRANCH|NONCE
#include <iostream>

#include <fmt/format.h>

#include "bridge/json_text.h"
#include "bridge/utf8.h"
#include "client/cmd/commands.h"
#include "client/output.h"
#include "client/snapshot.h"

namespace kakeya::client::cmd {
namespace {

void print_human(const BranchSnapshot& s) {
  const auto& st = s.status;
  // Everything below comes from the branch: shown escaped (bridge/utf8.h printable), one line each.
  const auto p = [](std::string_view v) { return bridge::printable(v); };
  std::cout << fmt::format("branch:     {}\n", p(s.branch));
  std::cout << fmt::format("commit:     {}\n", s.oid);
  if (s.request) {
    std::cout << fmt::format("preset:     {} {}\n", p(s.request->preset), p(bridge::to_json_text(s.request->params)));
    std::cout << fmt::format("requested:  {} by {}\n", p(s.request->created_at), p(s.request->requested_by));
  } else {
    std::cout << fmt::format("request:    unreadable ({})\n", p(s.request_error));
  }
  std::cout << fmt::format("state:      {}{}\n", bridge::to_string(st.state), s.has_status ? "" : " (no status yet)");
  if (!st.reason.empty()) std::cout << fmt::format("reason:     {}\n", p(st.reason));
  if (!st.runner_id.empty()) std::cout << fmt::format("runner:     {}\n", p(st.runner_id));
  std::cout << fmt::format("claim_gen:  {}   attempt: {}\n", st.claim_gen, st.attempt);
  if (!st.updated_at.empty()) std::cout << fmt::format("heartbeat:  #{} at {}\n", st.heartbeat_seq, st.updated_at);
  if (!st.started_at.empty()) std::cout << fmt::format("started:    {}\n", st.started_at);
  if (!st.progress.is_null()) std::cout << fmt::format("progress:   {}\n", p(bridge::to_json_text(st.progress)));
  if (s.cancel_requested && !bridge::is_terminal(st.state)) std::cout << "cancel:     requested\n";
  if (bridge::is_terminal(st.state) && s.summary) std::cout << "summary:\n" << bridge::summary_json_text(*s.summary);
  if (!s.summary_error.empty()) std::cout << fmt::format("summary:    unreadable ({})\n", p(s.summary_error));
}

}  // namespace

Command add_status(CLI::App& root, GlobalOptions& g) {
  auto* sub = root.add_subcommand("status", "Show the state of a request");
  auto target = std::make_shared<std::string>();
  sub->add_option("target", *target, "Request branch (with or without its prefix), nonce or short name")->required();
  return {sub, [&g, target]() {
            auto session = open_session(g);
            if (!session.ok()) return fail(g, session.error());
            auto branch = resolve_branch_arg(*session, *target);
            if (!branch.ok()) return fail(g, branch.error());
            auto snap = fetch_snapshot(session->bus, *branch);
            if (!snap.ok()) return fail(g, snap.error());
            if (!*snap) return fail(g, make_error(errc::kNotFound, "branch '" + *branch + "' disappeared"));
            if (g.json) {
              print_json(snapshot_to_json(**snap));
            } else {
              print_human(**snap);
            }
            return kExitOk;
          }};
}

}  // namespace kakeya::client::cmd
