// kakeya-engine selftest: the per-op table and end-to-end checks on a backend, the CPU backend
// as the golden (engine/presets/selftest.h). Exit 1 when any case fails.
#include <cstdio>
#include <memory>
#include <string>

#include "engine/cmd/commands.h"
#include "engine/cmd/flags.h"
#include "engine/presets/selftest.h"

namespace kakeya::engine::cmd {

void add_selftest(CLI::App& app, int& exit_code) {
  auto* sub = app.add_subcommand("selftest", "Prove a backend on this machine: per-op table and end-to-end vs the CPU");
  struct Args {
    CommonFlags flags;
    SelftestConfig config;
  };
  auto a = std::make_shared<Args>();
  add_common_flags(sub, a->flags, kModelRunFlags | kOutFlag | kJsonFlag);
  sub->add_option("--greedy-tokens", a->config.greedy_tokens, "Greedy tokens compared with the CPU")
      ->capture_default_str()
      ->check(CLI::Range(1, 1024));
  sub->callback([a, &exit_code] {
    const std::string name = "selftest";
    a->config.model = a->flags.model;
    a->config.backend = a->flags.backend;
    auto backend = open_flag_backend(a->flags);
    if (!backend.ok()) {
      exit_code = fail(name, backend.error());
      return;
    }
    auto cpu = open_flag_backend(CommonFlags{.backend = "cpu", .threads = a->flags.threads});
    if (!cpu.ok()) {
      exit_code = fail(name, cpu.error());
      return;
    }
    auto r = run_selftest(a->config, **backend, **cpu);
    if (!r.ok()) {
      exit_code = fail(name, r.error());
      return;
    }
    if (Status st = emit_report(name, a->flags, r.value()); !st.ok()) {
      exit_code = fail(name, st.error());
      return;
    }
    const auto& rep = r.value();
    if (!a->flags.json) {
      for (const auto& c : rep["ops"]["cases"])
        if (!c["passed"].get<bool>())
          std::printf("FAIL op %s %s %s: nmse %.3g (tol %.3g), max |d| %.3g (tol %.3g)\n",
                      c["op"].get<std::string>().c_str(), c["type"].get<std::string>().c_str(),
                      c["shape"].get<std::string>().c_str(), c["nmse"].get<double>(), c["tol_nmse"].get<double>(),
                      c["max_abs"].get<double>(), c["tol_abs"].get<double>());
      for (const auto& c : rep["e2e"]["checks"])
        std::printf("%s e2e %s: %.3g (limit %.3g)\n", c["passed"].get<bool>() ? "pass" : "FAIL",
                    c["name"].get<std::string>().c_str(), c["value"].get<double>(), c["limit"].get<double>());
      std::printf("%s: %zu op cases on %s (%s), %zu failed\n", rep["passed"].get<bool>() ? "PASSED" : "FAILED",
                  rep["ops"]["cases"].size(), rep["engine"]["device"].get<std::string>().c_str(),
                  rep["engine"]["backend"].get<std::string>().c_str(), rep["failed"].get<size_t>());
    }
    exit_code = rep["passed"].get<bool>() ? 0 : 1;
  });
}

}  // namespace kakeya::engine::cmd
