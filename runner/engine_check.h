#pragma once
// Asking the engine the runner will run jobs with (`kakeya-engine`, found like a job's argv[0]:
// tool_dirs, then the runner's own directory) whether it can use something on this host:
// `kakeya-runner doctor` checks each configured model with `kakeya-engine check-model`
// (engine/cmd/check_model.cpp: GGUF header, architecture, tokenizer, tensor types).
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "bridge/result.h"
#include "runner/config.h"

namespace kakeya::runner {

// The kakeya-engine binary this runner would run. Errors: resolve_program's (`not_found` naming
// the directories searched).
Result<std::filesystem::path> find_engine(const RunnerConfig& config);

// Whether `path` starts with the GGUF magic ("GGUF"); false when it cannot be read.
bool looks_like_gguf(const std::filesystem::path& path);

// Runs `kakeya-engine check-model -m <model> --json` (at most `timeout_s`). Returns its report
// ({ok: true, architecture, n_vocab, n_layer, n_embd, tensor_types}). Errors: find_engine's;
// the engine's own error code and message when the model does not load (e.g.
// `unsupported_architecture`, `gguf_truncated`, `unsupported_type`); `child_failed` when the
// engine could not be run or answered something else (the message has its stderr's end).
Result<nlohmann::json> check_model_with_engine(const RunnerConfig& config, const std::filesystem::path& model,
                                               double timeout_s = 120);

}  // namespace kakeya::runner
