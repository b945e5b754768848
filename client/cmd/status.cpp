// kakeya status BRANCH|NONCE
#include <iostream>

#include <fmt/format.h>

#include "client/cmd/commands.h"
#include "client/output.h"
#include "client/snapshot.h"

namespace kakeya::client::cmd {
namespace {

void print_human(const BranchSnapshot& s) {
  const auto& st = s.status;
  std::cout << fmt::format("branch:     {}\n", s.branch);
  std::cout << fmt::format("commit:     {}\n", s.oid);
  if (s.request) {
    std::cout << fmt::format("preset:     {} {}\n", s.request->preset, s.request->params.dump());
    std::cout << fmt::format("requested:  {} by {}\n", s.request->created_at, s.request->requested_by);
  } else {
    std::cout << fmt::format("request:    unreadable ({})\n", s.request_error);
  }
  std::cout << fmt::format("state:      {}{}\n", bridge::to_string(st.state), s.has_status ? "" : " (no status yet)");
  if (!st.reason.empty()) std::cout << fmt::format("reason:     {}\n", st.reason);
  if (!st.runner_id.empty()) std::cout << fmt::format("runner:     {}\n", st.runner_id);
  std::cout << fmt::format("claim_gen:  {}   attempt: {}\n", st.claim_gen, st.attempt);
  if (!st.updated_at.empty()) std::cout << fmt::format("heartbeat:  #{} at {}\n", st.heartbeat_seq, st.updated_at);
  if (!st.started_at.empty()) std::cout << fmt::format("started:    {}\n", st.started_at);
  if (!st.progress.is_null()) std::cout << fmt::format("progress:   {}\n", st.progress.dump());
  if (s.cancel_requested && !bridge::is_terminal(st.state)) std::cout << "cancel:     requested\n";
  if (bridge::is_terminal(st.state) && s.summary) std::cout << "summary:\n" << bridge::summary_json_text(*s.summary);
  if (!s.summary_error.empty()) std::cout << fmt::format("summary:    unreadable ({})\n", s.summary_error);
}

}  // namespace

Command add_status(CLI::App& root, GlobalOptions& g) {
  auto* sub = root.add_subcommand("status", "Show the state of a request");
  auto target = std::make_shared<std::string>();
  sub->add_option("target", *target, "Request branch or bare nonce")->required();
  return {sub, [&g, target]() {
            auto session = open_session(g);
            if (!session.ok()) return fail(session.error());
            auto branch = resolve_branch_arg(*session, *target);
            if (!branch.ok()) return fail(branch.error());
            auto snap = fetch_snapshot(session->bus, *branch);
            if (!snap.ok()) return fail(snap.error());
            if (!*snap) return fail(make_error("not_found", "branch '" + *branch + "' disappeared"));
            if (g.json) {
              print_json(snapshot_to_json(**snap));
            } else {
              print_human(**snap);
            }
            return kExitOk;
          }};
}

}  // namespace kakeya::client::cmd
