#pragma once
// The envelope every engine report shares (DESIGN.md §4): which kind of report, when, which
// engine build and backend produced it, and the model file it measured. The rest of a report is
// kind-specific (bridge/gate.h lists what the evidence gate reads). JSON Schema:
// manifests/schemas/report.schema.json.
//
// Reader: the runner reads the envelope of every report a preset gates before the evidence gate
// runs on it (runner/job.cpp); a report whose envelope is wrong is REPORT_INVALID, not gated.
// Writers: the engine's reports (engine/report.cpp engine_info and model_provenance write these
// keys); they adopt this type once the engine's file moves settle, and the tests check their
// output against the schema meanwhile.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bridge/result.h"

namespace kakeya::bridge {

inline constexpr int kReportSchemaVersion = 1;

// What ran, taken from the objects that did the work.
struct ReportEngine {
  std::string version;              // bridge/version.h engine_version(), non-empty
  std::string backend;              // the backend that actually ran, e.g. "cpu"
  std::optional<int64_t> threads;   // worker threads, when the report used any
  std::string kernel_isa;           // e.g. "avx2", "portable"; "" when not reported
  std::string build;                // bridge/version.h build_info(); "" when not reported
};

// The model file a report measured.
struct ReportModel {
  std::string path;
  std::string sha256;               // of the whole file, 64 lowercase hex digits
  uint64_t file_size_bytes = 0;
  std::string architecture;         // general.architecture, e.g. "llama"
  bool synthetic = false;           // a random-weight model written by `kakeya-engine synth`
};

struct ReportEnvelope {
  std::string kind;                 // one of report_kinds()
  std::string created_at;           // RFC 3339
  ReportEngine engine;
  std::optional<ReportModel> model; // nullopt for reports without a model (env-probe)
};

// The kinds of report the engine writes: env-probe, generate, ar-bench, specdecode-bench,
// niah-eval, kv-quant-eval, backend-parity, perplexity (the schema's `kind` enum).
const std::vector<std::string>& report_kinds();

// The envelope keys of a report: {kind, schema_version, created_at, engine{...}, model{...}?};
// a writer adds its kind-specific keys to this object.
nlohmann::json to_json(const ReportEnvelope& envelope);

// Reads the envelope of `report`, ignoring its other keys: the report schema (error
// "schema_violation" naming the JSON pointer), then the typed fields ("bad_value" for a
// created_at that is not a calendar date). Never throws.
Result<ReportEnvelope> read_report_envelope(const nlohmann::json& report);

}  // namespace kakeya::bridge
