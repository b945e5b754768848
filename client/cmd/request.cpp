// kakeya request PRESET [-p key=value]... : push a request branch and print its name.
#include <iostream>

#include "client/cmd/commands.h"
#include "client/output.h"
#include "client/request_flags.h"

namespace kakeya::client::cmd {

int submit(const GlobalOptions& g, const RequestOptions& opts, std::optional<Submission>& out,
           std::optional<Session>& session) {
  auto catalog = load_catalog(g);
  if (!catalog.ok()) return fail(g, catalog.error());
  auto manifest = build_manifest(*catalog, opts);
  if (!manifest.ok()) return fail(g, manifest.error());
  auto s = open_session(g);
  if (!s.ok()) return fail(g, s.error());
  session.emplace(std::move(*s));
  auto sub = submit_request(*session, *manifest, opts);
  if (!sub.ok()) return fail(g, sub.error());
  out = std::move(*sub);
  return kExitOk;
}

Command add_request(CLI::App& root, GlobalOptions& g) {
  auto* sub = root.add_subcommand("request", "Push a validated request branch for PRESET and print its name");
  auto opts = std::make_shared<RequestOptions>();
  add_request_flags(*sub, *opts);
  return {sub, [&g, opts]() {
            std::optional<Submission> s;
            std::optional<Session> session;
            if (int rc = submit(g, *opts, s, session); rc != kExitOk) return rc;
            if (g.json) {
              print_json(submission_to_json(*s, session->remote));
            } else {
              std::cout << s->branch << std::endl;
            }
            return kExitOk;
          }};
}

}  // namespace kakeya::client::cmd
