#pragma once
// Helpers shared by the engine's presets: the report envelope (kind, provenance, engine, env),
// the progress callback, timing statistics and writing DIR/report.json.
//
// Every report carries `model` {path, sha256, file_size_bytes, architecture, hparams,
// tensor_types, synthetic} and `engine` {version, build, backend, backend_requested, device,
// driver, kernel_isa, threads, options, weights}: the evidence gate's PROVENANCE rule needs the
// sha256 and the engine version. What ran is taken from the backend object that ran
// (Backend::info()), never from a literal; what was asked for (the --backend flag) is recorded
// beside it, so a mismatch trips the gate's SILENT_FALLBACK rule.
#include <chrono>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bridge/result.h"
#include "engine/backend.h"
#include "engine/model.h"

namespace kakeya::engine {

// One-line progress updates of a long preset ("niah-eval: full@20 niah-s0-l20-0 recall=1 ...").
// Presets never print; the command decides where the lines go. May be empty.
using Progress = std::function<void(const std::string& line)>;
inline void report_progress(const Progress& progress, const std::string& line) {
  if (progress) progress(line);
}

// The envelope every preset report starts from: {kind, schema_version: 1, created_at, env
// (env_summary), engine (engine_info), and when `model` is given model (model_provenance) and
// synthetic}. `weights`: the model's upload on `backend` (its layout goes into engine.weights).
nlohmann::json report_envelope(const std::string& kind, const std::string& backend_requested, const Backend& backend,
                               const LlamaModel* model, const ModelWeights* weights);

// An arm's {backend_requested, backend_used}: used = backend.info().name.
nlohmann::json arm_backend(const std::string& backend_requested, const Backend& backend);

// {path, sha256 (of the whole file), file_size_bytes, architecture, hparams{...},
//  tensor_types {"q4_0": 155, "f32": 45}, n_params (elements of every tensor) and tensor_bytes
//  (their bytes: llama.cpp's llama_model_n_params and llama_model_size), output_tied,
//  synthetic (kakeya.synthetic metadata)}.
nlohmann::json model_provenance(const LlamaModel& model);

// {version, build, backend (info().name), backend_requested, device, driver, kernel_isa
// (info().kernel_set), threads, options (the backend's), weights (ModelWeights::layout, when
// given)}.
nlohmann::json engine_info(const std::string& backend_requested, const Backend& backend,
                           const ModelWeights* weights = nullptr);

// {cpu, memory, openblas, os} read from the machine (env_probe); no Vulkan probe.
nlohmann::json env_summary();

// UTC now as RFC 3339, e.g. "2025-02-20T12:34:56Z".
std::string utc_now_rfc3339();

// Order statistics of a sample (seconds, tokens/s, ...). Empty input → all zero, n = 0.
struct SampleStats {
  size_t n = 0;
  double median = 0, min = 0, max = 0, mean = 0;
};
SampleStats summarize(std::vector<double> values);
nlohmann::json to_json(const SampleStats& s);

// Peak resident set size of this process (VmHWM from /proc/self/status), bytes; 0 when
// unavailable. The process's own peak: a parent's wait4 ru_maxrss can report the parent's peak
// instead when the child was started with vfork/posix_spawn.
size_t peak_rss_bytes();

// Seconds elapsed on the steady clock since `start`.
double seconds_since(std::chrono::steady_clock::time_point start);

// `report` as pretty JSON text (2-space indent). Strings that are not valid UTF-8 (decoded text
// can end inside a multi-byte character, and byte-fallback tokens of a synthetic model are
// arbitrary bytes) have each invalid byte replaced by U+FFFD instead of throwing.
std::string report_json_text(const nlohmann::json& report);

// Writes report_json_text(report) to dir/report.json, creating dir; written to a
// temporary file and renamed, so a reader never sees half a report. Errors: "io".
Status write_report(const std::filesystem::path& dir, const nlohmann::json& report);

}  // namespace kakeya::engine
