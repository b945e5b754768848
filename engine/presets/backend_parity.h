#pragma once
// backend-parity: the engine's CPU backend against a second implementation, over a prompt set —
// argmax agreement and max |Δlogit| at every prompt position.
//
// Today the second backend is `reference`: a single-threaded scalar forward pass written
// independently of LlamaContext (no sgemm, no thread pool, no fused matmuls) that uses the
// portable kernels (quant_kernels(KernelIsa::Portable)) for every dot product, with activations
// converted per token exactly like the decode path (quantize_activations), rmsnorm sums in double,
// ggml rope mode 0, causal softmax attention with a double-precision denominator. The CPU backend
// is measured twice: `cpu-batched` (one eval of the prompt, all_logits, the context's batched
// MatmulMode) and `cpu-decode` (one token per eval). The Vulkan backend will plug in as another arm.
//
// Report (kind "backend-parity"): config, env, model provenance, engine, arms[] (cpu-batched,
// cpu-decode = candidates, reference = baseline; per-prompt samples with argmax agreement and
// max |Δlogit| against the reference), comparisons[] (metric max_abs_dlogit, claim "parity"),
// aggregates {argmax_agreement (fraction of positions), max_abs_dlogit}.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bridge/result.h"
#include "engine/model.h"

namespace kakeya::engine {

// Logits after every token of `tokens` ([n][n_vocab]) from the scalar reference forward pass.
// Errors: "empty_input", "bad_token".
Result<std::vector<float>> reference_logits(const LlamaModel& model, std::span<const int32_t> tokens);

struct BackendParityConfig {
  std::string model;
  std::vector<std::string> prompts;  // empty: a built-in set of 5 prompts
  int threads = 1;
};

Result<nlohmann::json> run_backend_parity(const BackendParityConfig& config);

}  // namespace kakeya::engine
