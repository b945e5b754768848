// kakeya verify BRANCH|NONCE --allowed-signers FILE: provenance of a run (client/verify.h).
// Exit 0: verified; 1: not verified (the reason on stderr; with --json also on stdout as
// {"verified": false, "error": {...}}), or the remote could not be read; 64: usage.
#include <algorithm>
#include <iostream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "bridge/utf8.h"
#include "client/cmd/commands.h"
#include "client/output.h"
#include "client/session.h"
#include "client/verify.h"

namespace kakeya::client::cmd {
namespace {

nlohmann::json report_json(const VerifyReport& r) {
  nlohmann::json commits = nlohmann::json::array();
  for (const auto& c : r.commits) {
    nlohmann::json j{{"commit", c.oid}, {"role", c.role}, {"summary", c.summary}};
    if (c.role == "runner") {
      j["principals"] = c.principals;
      j["fingerprint"] = c.fingerprint;
    }
    commits.push_back(std::move(j));
  }
  return {{"verified", true},
          {"branch", r.branch},
          {"tip", r.tip},
          {"request_commit", r.request_commit},
          {"signed_tip", r.signed_tip},
          {"results_tree", r.results_tree ? nlohmann::json(*r.results_tree) : nlohmann::json(nullptr)},
          {"commits", commits}};
}

void print_human(const VerifyReport& r) {
  int runner = 0, cancel = 0;
  std::vector<std::string> signers;
  for (const auto& c : r.commits) {
    if (c.role == "cancel") {
      ++cancel;
      continue;
    }
    ++runner;
    const std::string who = fmt::format("{} ({})", fmt::join(c.principals, ","), c.fingerprint);
    if (std::find(signers.begin(), signers.end(), who) == signers.end()) signers.push_back(who);
  }
  std::cout << fmt::format("verified:   {}\n", bridge::printable(r.branch));
  std::cout << fmt::format("tip:        {} (files as signed in {})\n", r.tip, r.signed_tip);
  std::cout << fmt::format("request:    {}\n", r.request_commit);
  std::cout << fmt::format("commits:    {} runner commit(s) signed, {} client cancel commit(s)\n", runner, cancel);
  for (const auto& s : signers) std::cout << fmt::format("signed by:  {}\n", bridge::printable(s));
  std::cout << fmt::format("results:    {}\n", r.results_tree ? *r.results_tree : std::string("(none)"));
}

}  // namespace

Command add_verify(CLI::App& root, GlobalOptions& g) {
  auto* sub = root.add_subcommand(
      "verify", "Check that every runner commit of a run is SSH-signed by an allowed runner key and that the "
                "files at the tip are the ones the runner signed");
  auto target = std::make_shared<std::string>();
  auto signers_file = std::make_shared<std::string>();
  sub->add_option("target", *target, "Request branch (with or without its prefix), nonce or short name")->required();
  sub->add_option("--allowed-signers", *signers_file,
                  "Allowed-signers file of the runner keys, git's gpg.ssh.allowedSignersFile format "
                  "(env KAKEYA_ALLOWED_SIGNERS)")
      ->envname("KAKEYA_ALLOWED_SIGNERS")
      ->required();
  return {sub, [&g, target, signers_file]() {
            auto signers = bridge::AllowedSigners::load_file(*signers_file);
            if (!signers.ok()) return fail(g, signers.error());
            auto session = open_session(g);
            if (!session.ok()) return fail(g, session.error());
            auto branch = resolve_branch_arg(*session, *target);
            if (!branch.ok()) return fail(g, branch.error());
            auto report = verify_run(session->bus, *branch, *signers);
            if (!report.ok()) {
              if (g.json) {
                print_json({{"verified", false},
                            {"branch", *branch},
                            {"error", {{"code", std::string(report.error().code.str())},
                                       {"message", report.error().message}}}});
              }
              GlobalOptions text_only = g;  // the JSON document above already carries the error
              text_only.json = false;
              return report_error(text_only, report.error(), kExitFailure);
            }
            if (g.json) {
              print_json(report_json(*report));
            } else {
              print_human(*report);
            }
            return kExitOk;
          }};
}

}  // namespace kakeya::client::cmd
