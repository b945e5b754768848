#pragma once
// runner.json: what a runner publishes about itself on kakeya/runners/<id> every heartbeat_s
// (DESIGN.md §2 "Discovery"). `kakeya runners` shows it, `kakeya presets` shows what live runners
// offer, and runners read each other's to share a queue in a mixed fleet: a request for a preset
// this runner lacks is left alone while a live runner offers it.
//
// Shape (schema_version 1):
//   {"schema_version": 1, "id": "gpu-1", "labels": ["gpu"], "version": "0.1.0+...",
//    "max_jobs": 2, "running": ["kakeya/req/generate-..."], "state": "serving",
//    "heartbeat_s": 30, "updated_at": "2024-05-01T12:00:00Z",
//    "presets": ["env-probe", "generate"], "catalog_digest": "<sha256 hex>"}
// state: "serving" | "draining" | "stopped". updated_at is the runner's own clock (informational:
// runners judge liveness by when they saw the branch move, on their own monotonic clock).
// Readers accept unknown keys (a newer runner's), and documents without presets/catalog_digest
// (a runner from before they existed: it offers nothing as far as peers can tell).

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "bridge/catalog.h"
#include "bridge/result.h"

namespace kakeya::bridge {

inline constexpr const char* kRunnerDocFile = "runner.json";

struct RunnerDoc {
  std::string id;
  std::vector<std::string> labels;
  std::string version;
  int64_t max_jobs = 0;
  std::vector<std::string> running;  // request branches, without refs/heads/
  std::string state;                 // serving | draining | stopped
  double heartbeat_s = 0;            // seconds
  std::string updated_at;            // RFC 3339 or ""
  std::vector<std::string> presets;  // the installed catalog's presets this runner can run (labels, models)
  std::string catalog_digest;        // catalog_digest() of that catalog ("" when not published)

  bool offers(std::string_view preset) const;
};

nlohmann::json to_json(const RunnerDoc& doc);

// Reads runner.json text: at most kMaxRunnerDocBytes (`too_large`, before parsing), strict JSON
// (parse_json_strict), an object whose known keys have the types above (`bad_type` naming the
// key); `id` and `state` are required (`missing_key`). Unknown keys are ignored.
Result<RunnerDoc> parse_runner_doc(std::string_view text);

// SHA-256 (hex) of the catalog's canonical JSON (the presets in file order, each as to_json of
// bridge/catalog.h): equal digests mean the same allowlist, whatever the YAML's formatting.
std::string catalog_digest(const PresetCatalog& catalog);

}  // namespace kakeya::bridge
