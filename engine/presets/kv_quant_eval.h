#pragma once
// kv-quant-eval: identity / affine-8 / affine-4 KV storage over the same cache contents
// (issue 4): measured bits per value (from the quantized cache's storage), relative MSE
// (energy-weighted over layers: Σ_layers Σ (x - x̂)² / Σ_layers Σ x², over K and V of the
// full-cache prefill of each prompt), and recall through real greedy decoding with the quantized
// cache. Report kind "kv-quant-eval" in the evidence-gate shape (identity = oracle).
#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

#include "bridge/result.h"
#include "engine/llama.h"
#include "engine/presets/report.h"
#include "engine/tokenizer.h"

namespace kakeya::engine {

struct KvQuantEvalConfig {
  uint64_t seed = 0;
  std::vector<int> lines = {20};
  int samples = 5;
  int decode_tokens = 16;
  std::vector<int> bits = {8, 4};
  size_t group = 64;
  std::string backend = "cpu";  // as requested (--backend): reports compare it with what ran
  size_t n_batch = 64;
};

// Relative MSE of affine `bits` quantization (groups of `group` along each slot's full row,
// as the quantized cache stores an all-exact layer) of every K and V row of `kv`, read back from
// the backend: {energy-weighted total, per layer}. REQUIRES: every layer of `kv` holds the same
// slots for every KV head (the full policy).
struct KvQuantError {
  double rel_mse = 0;
  std::vector<double> per_layer;
};
KvQuantError kv_quant_error(const KvCache& kv, int bits, size_t group);

// Errors: "bad_param" (bits not 4/8, NIAH params), evaluation errors.
// `progress` gets one line per sample.
Result<nlohmann::json> run_kv_quant_eval(const LlamaModel& model, const Tokenizer& tok, Backend& backend,
                                         const KvQuantEvalConfig& cfg, const Progress& progress = {});

}  // namespace kakeya::engine
