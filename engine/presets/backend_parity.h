#pragma once
// backend-parity: an engine backend (backend.h) against a second implementation, over a prompt
// set — argmax agreement and max |Δlogit| at every prompt position.
//
// The second implementation is `reference` (and, for a GPU backend, also the CPU backend): a single-threaded scalar forward pass written
// independently of LlamaContext and of every backend (no sgemm, no thread pool, no fused
// matmuls) from the scalar reference ops (presets/reference_ops.h): the portable kernels for every
// dot product, activations converted per token exactly like the CPU decode path, rmsnorm sums in
// double, ggml rope mode 0, causal softmax attention with a double-precision denominator. The
// backend under test is measured twice: `<backend>-batched` (one eval of the prompt, all_logits)
// and `<backend>-decode` (one token per eval), e.g. cpu-batched and cpu-decode.
//
// Report (kind "backend-parity"): config, env, model provenance, engine, arms[] (the two backend
// arms = candidates, reference = baseline; per-prompt samples with argmax agreement and
// max |Δlogit| against the reference), comparisons[] (metric max_abs_dlogit, claim "parity"),
// aggregates {argmax_agreement (fraction of positions), max_abs_dlogit}.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bridge/result.h"
#include "engine/backend.h"
#include "engine/model.h"

namespace kakeya::engine {

// Logits after every token of `tokens` ([n][n_vocab]) from the scalar reference forward pass.
// Errors: "empty_input", "bad_token".
Result<std::vector<float>> reference_logits(const LlamaModel& model, std::span<const int32_t> tokens);

struct BackendParityConfig {
  std::string model;
  std::vector<std::string> prompts;  // empty: a built-in set of 5 prompts
  std::string backend = "cpu";       // as requested (--backend): reports compare it with what ran
};

// `cpu`: when given and `backend` is not the CPU backend, the report also compares the backend's
// batched logits with the CPU backend's (arm "cpu-batched", comparison claim "parity" with
// baseline cpu-batched) and carries the backend's per-op table (presets/backend_ops.h) under
// "ops"; aggregates.ops_failed counts its failed cases.
// Errors: model and tokenizer load errors, context errors.
Result<nlohmann::json> run_backend_parity(const BackendParityConfig& config, Backend& backend, Backend* cpu = nullptr);

}  // namespace kakeya::engine
