#pragma once
// ar-bench: autoregressive prefill/decode throughput.
//
// Protocol: one untimed warm-up (its own prompt text, never reused as a sample, at the longest
// prompt length), then `samples` timed runs per prompt length; each sample starts from an empty
// KV cache, prefills its prompt in one eval, then decodes gen_tokens greedy tokens one forward
// each (argmax read back from the backend). Timing scope: prefill = the eval of the whole prompt;
// decode = the gen_tokens one-token evals; tokenization excluded.
//
// Report (kind "ar-bench"): config, warmup, env, model, engine, synthetic, samples[] (per prompt
// length and sample: seconds, tokens/s, measured KV bytes), aggregates[] (median/min/max per
// prompt length), peak_rss_bytes (this process's VmHWM), arms[] (one "prompt-L" baseline arm per
// length in the evidence gate's shape), table[] (llama-bench's rows, presets/bench_table.h:
// pp<L> and tg<N> @ d<L> with t/s mean ± sample stddev).
#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bridge/result.h"
#include "engine/backend.h"
#include "engine/model.h"
#include "engine/presets/report.h"
#include "engine/tokenizer.h"

namespace kakeya::engine {

struct ArBenchConfig {
  std::vector<size_t> prompt_lengths = {16, 128, 512};  // tokens, BOS included
  int gen_tokens = 64;
  int samples = 5;
  size_t n_ctx = 0;     // 0 = the model's context length
  size_t n_batch = 512;
  std::string backend = "cpu";  // as requested (--backend): reports compare it with what ran
};

// `n` token ids: BOS (or the text's first token when the vocabulary has none) then tokens of
// `text` (repeated as needed) from `offset` on.
std::vector<int32_t> bench_prompt(const Tokenizer& tok, const std::string& text, size_t n, size_t offset);

// Runs the benchmark on `backend`. `progress` gets one line per sample. Errors: "bad_param"
// (no prompt lengths, a length < 1, samples or gen_tokens < 1), "context_overflow" (a prompt
// length + gen_tokens beyond n_ctx, naming both), context errors.
Result<nlohmann::json> run_ar_bench(const LlamaModel& model, const Tokenizer& tok, Backend& backend,
                                    const ArBenchConfig& config, const Progress& progress = {});

}  // namespace kakeya::engine
