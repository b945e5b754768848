// kakeya-engine backend-parity: CPU backend vs the scalar reference path (engine/presets/backend_parity.h).
#include <iostream>
#include <memory>

#include "engine/presets/backend_parity.h"
#include "engine/cmd/commands.h"
#include "engine/presets/report.h"

namespace kakeya::engine::cmd {

void add_backend_parity(CLI::App& app, int& exit_code) {
  auto* sub = app.add_subcommand("backend-parity", "Compare the CPU backend with the scalar reference path");
  auto cfg = std::make_shared<BackendParityConfig>();
  auto out = std::make_shared<std::string>();
  auto json_out = std::make_shared<bool>(false);
  sub->add_option("--model", cfg->model, "GGUF model file")->required()->check(CLI::ExistingFile);
  sub->add_option("--prompts", cfg->prompts, "Prompt texts (default: 5 built-in prompts)");
  sub->add_option("--threads", cfg->threads, "CPU threads")->capture_default_str()->check(CLI::Range(1, 1024));
  sub->add_option("--out", *out, "Directory for report.json (created if missing)")->required();
  sub->add_flag("--json", *json_out, "Print the report JSON on stdout");
  sub->callback([cfg, out, json_out, &exit_code] {
    auto r = run_backend_parity(*cfg);
    if (!r.ok()) {
      std::cerr << "backend-parity: " << r.error().str() << "\n";
      exit_code = 1;
      return;
    }
    if (Status st = write_report(*out, r.value()); !st.ok()) {
      std::cerr << "backend-parity: " << st.error().str() << "\n";
      exit_code = 1;
      return;
    }
    if (*json_out) {
      std::cout << r->dump(2) << "\n";
    } else {
      for (const auto& c : r.value()["comparisons"])
        std::printf("%-12s vs reference: argmax agreement %.4f, max |dlogit| %.3g\n",
                    c["candidate"].get<std::string>().c_str(), c["argmax_agreement"].get<double>(),
                    c["value"].get<double>());
    }
    exit_code = 0;
  });
}

}  // namespace kakeya::engine::cmd
