#pragma once
// generate: prefill a prompt, then decode token by token (greedy or seeded sampling: temperature,
// top-k, top-p), the decoded text handed out as it grows.
//
// Stops at EOS (unless ignore_eos), after max_new_tokens, or when the context is full. Report
// (kind "generate"): config, model, engine, env, synthetic, prompt_ids, token_ids, text,
// stop_reason ("eos", "max_new_tokens", "context_full"), kv {policy, n_tokens, resident_bytes
// measured}, timings {prefill_s, prefill_tokens, prefill_tok_s, decode_s, decode_tokens,
// decode_tok_s} (decode = the one-token evals after the prefill).
#include <cstddef>
#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "bridge/result.h"
#include "engine/backend.h"
#include "engine/model.h"
#include "engine/presets/report.h"
#include "engine/sampling.h"
#include "engine/tokenizer.h"

namespace kakeya::engine {

struct GenerateConfig {
  std::string prompt;
  int max_new_tokens = 64;
  SamplingParams sampling;
  bool ignore_eos = false;
  size_t n_ctx = 0;  // 0 = the model's context length
  size_t n_batch = 512;
  std::string backend = "cpu";  // as requested (--backend): reports compare it with what ran
};

// True when `s` is well-formed UTF-8 (RFC 3629: no overlongs, no surrogates, <= U+10FFFF).
bool valid_utf8(const std::string& s);

// Runs on `backend`. `on_text` (may be empty) receives each piece the decoded text gained, in
// order; `progress` a line before decoding. Errors: "bad_param" (prompt not valid UTF-8 or
// encoding to no tokens, max_new_tokens < 0, bad sampling params), context errors.
Result<nlohmann::json> run_generate(const LlamaModel& model, const Tokenizer& tok, Backend& backend,
                                    const GenerateConfig& config,
                                    const std::function<void(const std::string& text)>& on_text = {},
                                    const Progress& progress = {});

}  // namespace kakeya::engine
