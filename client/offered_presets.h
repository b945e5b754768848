#pragma once
// What `kakeya presets` shows: the presets the live runners of the remote offer (from their
// kakeya/runners/<id> runner.json, bridge/runner_doc.h), with their parameters from the local
// catalog where it has them; or, when no live runner can be seen (no remote, unreachable, none
// recent), the local catalog, saying so.

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bridge/catalog.h"
#include "bridge/result.h"
#include "bridge/runner_doc.h"
#include "client/settings.h"

namespace kakeya::client {

struct OfferedPreset {
  std::string name;
  std::vector<std::string> offered_by;          // live runner ids ([] for the local fallback)
  std::optional<bridge::PresetSpec> spec;       // from the local catalog, when it has the preset
};

struct OfferedPresets {
  std::string source;                           // "runners" or "local_catalog"
  std::string note;                             // one line: why this source, what differs
  std::optional<std::filesystem::path> catalog; // the local catalog read ("" when none)
  std::vector<bridge::RunnerDoc> runners;       // the live runners
  std::vector<OfferedPreset> presets;           // sorted by name
};

// Live runners are those whose runner.json updated_at is at most `within_s` seconds old (the
// runner's clock against this host's) and whose state is not "stopped". With `local_only`, or
// when the remote cannot be listed or no runner is live, the local catalog is shown (error only
// when that cannot be read either: `no_catalog`, or the code of PresetCatalog::load_file).
Result<OfferedPresets> offered_presets(const GlobalOptions& opts, double within_s, bool local_only);

nlohmann::json to_json(const OfferedPresets& offered);

}  // namespace kakeya::client
