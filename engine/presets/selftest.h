#pragma once
// engine-selftest: the engine's own checks on the runner's real device, so that an operator
// proves a new GPU host through the bus (DESIGN §3). Two parts, each case pass/fail:
//   * the per-op table (presets/backend_ops.h) on the backend under test, every op × type ×
//     shape against the scalar reference with its stated tolerance;
//   * end to end on `model`: the logits of a prompt (one batch) against the CPU backend within
//     `logit_tol`; the batch against one-token passes bit for bit (the backend's "verify agrees
//     with decode"); greedy ids from BOS equal to the CPU's up to the first step whose CPU
//     top-1/top-2 margin is below 2·logit_tol (a tie may legitimately break either way).
// Report (kind "engine-selftest"): engine (what ran), ops (backend_ops_json), e2e {checks
// [{name, passed, value, limit}]}, passed, failed (count of failed cases and checks).
#include <string>

#include <nlohmann/json.hpp>

#include "bridge/result.h"
#include "engine/backend.h"

namespace kakeya::engine {

struct SelftestConfig {
  std::string model;             // GGUF; the goldens come from the CPU backend on this model
  std::string backend = "cpu";   // as requested (--backend)
  size_t greedy_tokens = 64;
  float logit_tol = 1e-3f;
};

// Errors: model/tokenizer load errors, the backends' allocation and upload errors.
Result<nlohmann::json> run_selftest(const SelftestConfig& config, Backend& backend, Backend& cpu);

}  // namespace kakeya::engine
