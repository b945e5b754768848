#pragma once
// The runner's own heartbeat branch `kakeya/runners/<id>` (DESIGN §2 layout, issue 3): one small
// file `runner.json` that `kakeya runners` reads to show which runners were seen recently, their
// labels and what they run. Pushed every heartbeat_s by compare-and-swap. History stays bounded:
// a commit on top of the previous one up to kMaxBeatDepth, then (and whenever the remote tip is
// not our own last beat, e.g. after a restart) the branch is deleted by CAS and re-created with a
// parentless commit.
//
// runner.json is bridge::RunnerDoc (bridge/runner_doc.h): id, labels, version, max_jobs, running,
// state, heartbeat_s, updated_at, and the presets of the installed catalog with its digest (what
// other runners and `kakeya presets` read to know what this runner offers).
#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bridge/gitbus.h"
#include "bridge/catalog.h"
#include "bridge/result.h"
#include "bridge/runner_doc.h"
#include "runner/config.h"

namespace kakeya::runner {

inline constexpr int kMaxBeatDepth = 20;

// This runner's runner.json for its current jobs (`running`, request branches) and `state`; it
// offers the catalog's presets the runner can run (preset_runnable), so `kakeya presets` and the
// other runners' unknown-preset check see only what some runner can actually start.
bridge::RunnerDoc runner_document(const RunnerConfig& cfg, const bridge::PresetCatalog& catalog,
                                  const std::vector<std::string>& running, const std::string& state);

class RunnerBeat {
 public:
  // REQUIRES: cfg and catalog outlive the RunnerBeat.
  RunnerBeat(const RunnerConfig& cfg, const bridge::PresetCatalog& catalog);

  // The tip of our runner branch in the latest advertisement (nullopt = absent).
  void observe(std::optional<std::string> advertised_oid);
  // True when heartbeat_s has passed since the last successful beat (or none was made yet).
  bool due() const;
  // Pushes runner.json. A lost CAS is reported as error "beat_lost" (the next beat re-creates
  // the branch from the advertised tip); bus errors are passed through.
  Status publish(bridge::GitBus& bus, const std::vector<std::string>& running, const std::string& state);

  const std::string& ref() const { return ref_; }

 private:
  const RunnerConfig& cfg_;
  const bridge::PresetCatalog& catalog_;
  std::string ref_;
  std::optional<std::string> remote_;  // what the remote holds, as far as we know
  std::string last_;                   // our last pushed beat
  int depth_ = 0;
  std::optional<std::chrono::steady_clock::time_point> last_time_;
};

}  // namespace kakeya::runner
