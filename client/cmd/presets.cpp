// kakeya presets [NAME]: the catalog (the runner's allowlist as installed here).
#include <iostream>

#include "client/cmd/commands.h"
#include "client/output.h"
#include "client/presets_view.h"
#include "client/session.h"

namespace kakeya::client::cmd {

Command add_presets(CLI::App& root, GlobalOptions& g) {
  auto* sub = root.add_subcommand("presets", "List the presets of the catalog, or show one");
  auto name = std::make_shared<std::string>();
  sub->add_option("name", *name, "Show only this preset");
  return {sub, [&g, name]() {
            auto catalog = load_catalog(g);
            if (!catalog.ok()) return fail(catalog.error());
            std::vector<const bridge::PresetSpec*> shown;
            if (!name->empty()) {
              const auto* p = catalog->find(*name);
              if (p == nullptr) return fail(make_error(errc::kUnknownPreset, "preset '" + *name + "' is not in the catalog"));
              shown.push_back(p);
            } else {
              for (const auto& p : catalog->presets()) shown.push_back(&p);
            }
            if (g.json) {
              nlohmann::json arr = nlohmann::json::array();
              for (const auto* p : shown) arr.push_back(bridge::to_json(*p));
              print_json(name->empty() ? arr : arr[0]);
            } else {
              for (std::size_t i = 0; i < shown.size(); ++i) std::cout << (i ? "\n" : "") << format_preset(*shown[i]);
              std::cout << std::flush;
            }
            return kExitOk;
          }};
}

}  // namespace kakeya::client::cmd
