#pragma once
// kv-calibrate: rank layers and KV heads of a model by how much NIAH retrieval depends on them,
// and choose the set to keep exact under a sink+window policy.
//
// Score of a configuration = mean log-probability (nats/token) of the answer tokens after the
// prompt, teacher-forced (answer_logprob), averaged over NIAH samples. Rankings:
//   * layer_alone[l]: only layer l exact, the rest bounded;
//   * head_alone[(l,h)]: only KV head h of layer l exact;
//   * greedy forward selection: starting from all-bounded, repeatedly make exact the layer (or
//     head) whose addition raises the score most, until the score is within target_gap nats of
//     the full cache or `budget` units are selected.
// The chosen set is written as a policy file niah-eval accepts (exact_layers or exact_heads).
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "bridge/result.h"
#include "engine/kv_policy.h"
#include "engine/llama.h"
#include "engine/presets/report.h"
#include "engine/tokenizer.h"

namespace kakeya::engine {

struct KvCalibrateConfig {
  uint64_t seed = 1;          // a different stream from the evaluation's seed 0 by default
  std::vector<int> lines = {20};
  int samples = 3;            // per rung
  KvPolicy base;              // sink/window/tail/kv_bits of the bounded part
  bool heads = true;          // select KV heads (else whole layers)
  int budget = 4;             // max selected units
  double target_gap = 0.05;   // nats/token below the full cache's score
  size_t n_batch = 64;
};

struct KvCalibration {
  double full_score = 0, bounded_score = 0;
  std::vector<double> layer_alone;                             // [n_layer]
  std::vector<std::vector<double>> head_alone;                 // [n_layer][n_head_kv]
  std::vector<std::pair<std::pair<int, int>, double>> steps;   // unit (layer, head or -1), score after
  KvPolicy policy;                                             // base + the selected set
  nlohmann::json to_json() const;
};

// The answer's token ids as they follow the prompt (suffix of encode(prompt + " " + answer)).
std::vector<int32_t> niah_answer_ids(const Tokenizer& tok, const std::string& prompt,
                                     const std::string& answer);

// Runs on `backend`; `progress` gets the scores as they are found. Errors: "bad_param" (base
// policy not bounded, bad NIAH params), evaluation errors.
Result<KvCalibration> kv_calibrate(const LlamaModel& model, const Tokenizer& tok, Backend& backend,
                                   const KvCalibrateConfig& cfg, const Progress& progress = {});

}  // namespace kakeya::engine
