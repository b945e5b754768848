#pragma once
// NIAH recall evaluation of KV-cache policies (issue 4, DESIGN.md §4–5): the full-cache oracle
// and policies under test decode the same prompts greedily; recall, measured resident KV bytes,
// and the recall delta are reported in the shape the evidence gate reads (docs/evidence-gate.md).
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bridge/result.h"
#include "engine/kv_policy.h"
#include "engine/llama.h"
#include "engine/presets/report.h"
#include "engine/tokenizer.h"

namespace kakeya::engine {

// Greedy decoding of one prompt under one KV policy (no stop at EOS).
struct GreedyRun {
  std::vector<int32_t> ids;      // decode_tokens generated ids
  size_t resident_kv_bytes = 0;  // measured: max of KvCache::resident_bytes() after every eval
  size_t kv_tokens = 0;          // tokens in the sequence at the end
  double prefill_s = 0, decode_s = 0;
};

// Clears ctx, installs `policy` (fresh storage, so each run measures its own allocation),
// evaluates `prompt` and decodes `decode_tokens` tokens by argmax (read back from the backend).
// Errors: apply_kv_policy's, LlamaContext::eval's.
Result<GreedyRun> run_greedy(LlamaContext& ctx, const KvPolicy& policy,
                             const std::vector<int32_t>& prompt, int decode_tokens);

// Mean log-probability (nats/token) of `answer` tokens following `prompt` under `policy`
// (teacher forcing: one eval of prompt + answer with all logits). Used by kv-calibrate.
Result<double> answer_logprob(LlamaContext& ctx, const KvPolicy& policy,
                              const std::vector<int32_t>& prompt,
                              const std::vector<int32_t>& answer);

struct NiahArm {
  std::string name;    // unique; the lines rung is appended ("full@20")
  std::string role;    // "oracle" or "candidate"
  KvPolicy policy;
};

struct NiahEvalConfig {
  uint64_t seed = 0;
  std::vector<int> lines = {20};  // haystack ladder; each rung: samples with n_lines = rung
  int samples = 5;
  int decode_tokens = 16;
  bool with_needle = true;   // false: control workload, recall null
  bool claim = true;         // emit "recall" / "memory_saving" comparisons for the gate
  std::string backend = "cpu";  // as requested (--backend): reports compare it with what ran
  size_t n_batch = 32;       // prefill chunk (bounds the transient window of bounded layers)
  size_t n_ctx = 0;          // 0: max(model context, longest prompt + decode_tokens)
  std::vector<NiahArm> arms; // the first arm with role "oracle" is the baseline
};

// Runs every arm on every rung (same prompts per rung) on `backend` and returns the report:
// {kind: "niah-eval", schema_version: 1, created_at, config, model, engine, env, synthetic,
//  arms: [{name, role, backend_requested (cfg.backend), backend_used (backend.info()),
//          timing_scope: "e2e", config: {policy, lines},
//          samples: [{prompt_id, n_lines, n_prompt_tokens, needle, answer, recall, token_ids,
//                     text (niah_continuation: up to the first end-of-generation token; recall
//                     is judged on it), decode_tokens, resident_kv_bytes, prefill_s, decode_s,
//                     e2e_s}],
//          aggregates: {recall, resident_kv_bytes_measured: true, resident_kv_bytes_median,
//                       analytical_bound_bytes (labelled analytical), peak_rss_bytes}}],
//  comparisons: [{baseline, candidate, metric: "recall", claim: "recall", oracle_recall,
//                 candidate_recall, delta_pp}, {metric: "resident_kv_bytes", ratio
//                 (oracle / candidate median), claim: "memory_saving"}]}.
// Errors: "bad_param" (no arms, no oracle, bad NIAH params), evaluation errors.
// `progress` gets one line per sample.
Result<nlohmann::json> run_niah_eval(const LlamaModel& model, const Tokenizer& tok, Backend& backend,
                                     const NiahEvalConfig& cfg, const Progress& progress = {});

}  // namespace kakeya::engine
