// kakeya-engine backend-parity: a backend vs the scalar reference path (engine/presets/backend_parity.h).
#include <cstdio>
#include <memory>
#include <string>

#include "engine/cmd/commands.h"
#include "engine/cmd/flags.h"
#include "engine/presets/backend_parity.h"

namespace kakeya::engine::cmd {
namespace {

struct Args {
  CommonFlags flags;
  BackendParityConfig config;
};

int run(Args a) {
  const std::string name = "backend-parity";
  a.config.model = a.flags.model;
  a.config.backend = a.flags.backend;
  auto backend = open_flag_backend(a.flags);
  if (!backend.ok()) return fail(name, backend.error());
  auto r = run_backend_parity(a.config, **backend);
  if (!r.ok()) return fail(name, r.error());
  if (Status st = emit_report(name, a.flags, r.value()); !st.ok()) return fail(name, st.error());
  if (!a.flags.json) {
    for (const auto& c : r.value()["comparisons"])
      std::printf("%-12s vs reference: argmax agreement %.4f, max |dlogit| %.3g\n",
                  c["candidate"].get<std::string>().c_str(), c["argmax_agreement"].get<double>(),
                  c["value"].get<double>());
  }
  return 0;
}

}  // namespace

void add_backend_parity(CLI::App& app, int& exit_code) {
  auto* sub = app.add_subcommand("backend-parity", "Compare a backend with the scalar reference forward pass");
  auto a = std::make_shared<Args>();
  a->flags.threads = 1;
  add_common_flags(sub, a->flags, kModelRunFlags | kOutRequiredFlag | kJsonFlag);
  sub->add_option("--prompts", a->config.prompts, "Prompt texts (default: 5 built-in prompts)");
  sub->callback([a, &exit_code] { exit_code = run(*a); });
}

}  // namespace kakeya::engine::cmd
