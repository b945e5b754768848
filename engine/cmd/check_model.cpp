// kakeya-engine check-model -m FILE [--json]: whether this engine can load FILE — the GGUF header,
// a supported architecture and consistent hyperparameters, a tokenizer it can build, and every
// tensor's storage type — without running it (the weights are mapped, not read). What
// `kakeya-runner doctor` runs for each configured model. Exit 0 loadable, 1 not (the reason on
// stderr; with --json {"ok": false, "error": {code, message}} on stdout too).
#include <iostream>
#include <memory>

#include <nlohmann/json.hpp>

#include "bridge/json_text.h"
#include "engine/cmd/commands.h"
#include "engine/cmd/flags.h"

namespace kakeya::engine::cmd {

void add_check_model(CLI::App& app, int& exit_code) {
  auto* sub = app.add_subcommand("check-model", "Check that a GGUF model loads here (header, architecture, tokenizer, tensor types)");
  auto flags = std::make_shared<CommonFlags>();
  add_common_flags(sub, *flags, kModelFlag | kJsonFlag);
  sub->callback([flags, &exit_code] {
    auto loaded = load_model(flags->model);
    if (!loaded.ok()) {
      if (flags->json) {
        std::cout << bridge::to_json_file({{"ok", false},
                                           {"path", flags->model},
                                           {"error", {{"code", loaded.error().code.str()}, {"message", loaded.error().message}}}});
      }
      exit_code = fail("check-model", loaded.error());
      return;
    }
    const auto& hp = (*loaded)->model.hparams();
    nlohmann::json types = nlohmann::json::object();
    for (const auto& [name, count] : (*loaded)->model.tensor_type_counts()) types[name] = count;
    const nlohmann::json report{{"ok", true},
                                {"path", flags->model},
                                {"architecture", hp.architecture},
                                {"n_vocab", hp.n_vocab},
                                {"n_layer", hp.n_layer},
                                {"n_embd", hp.n_embd},
                                {"tensor_types", types}};
    if (flags->json) {
      std::cout << bridge::to_json_file(report);
    } else {
      std::cout << flags->model << ": ok: " << hp.architecture << ", " << hp.n_layer << " layers, vocabulary "
                << hp.n_vocab << ", tensor types " << types.dump() << "\n";
    }
    exit_code = 0;
  });
}

}  // namespace kakeya::engine::cmd
