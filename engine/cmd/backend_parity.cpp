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
  // A GPU backend is also compared with the CPU backend (and its per-op table run).
  std::unique_ptr<Backend> cpu;
  if (a.flags.backend != "cpu") {
    CommonFlags cpu_flags = a.flags;
    cpu_flags.backend = "cpu";
    auto opened = open_flag_backend(cpu_flags);
    if (!opened.ok()) return fail(name, opened.error());
    cpu = std::move(opened).value();
  }
  auto r = run_backend_parity(a.config, **backend, cpu.get());
  if (!r.ok()) return fail(name, r.error());
  if (Status st = emit_report(name, a.flags, r.value()); !st.ok()) return fail(name, st.error());
  if (!a.flags.json) {
    for (const auto& c : r.value()["comparisons"])
      std::printf("%-14s vs %-12s argmax agreement %.4f, max |dlogit| %.3g\n",
                  c["candidate"].get<std::string>().c_str(), c["baseline"].get<std::string>().c_str(),
                  c["argmax_agreement"].get<double>(), c["value"].get<double>());
    if (r.value().contains("ops"))
      std::printf("per-op table: %zu cases, %zu failed\n", r.value()["ops"]["cases"].size(),
                  r.value()["ops"]["failed"].get<size_t>());
  }
  return 0;
}

}  // namespace

void add_backend_parity(CLI::App& app, int& exit_code) {
  auto* sub = app.add_subcommand("backend-parity", "Compare a backend with the scalar reference forward pass (and a GPU backend with the CPU)");
  auto a = std::make_shared<Args>();
  a->flags.threads = 1;
  add_common_flags(sub, a->flags, kModelRunFlags | kOutRequiredFlag | kJsonFlag);
  sub->add_option("--prompts", a->config.prompts, "Prompt texts (default: 5 built-in prompts)");
  sub->callback([a, &exit_code] { exit_code = run(*a); });
}

}  // namespace kakeya::engine::cmd
