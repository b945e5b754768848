#pragma once
// Speculative decoding (Leviathan et al. 2023; Chen et al. 2023) over a LlamaContext target and a
// DraftSource, and the plain autoregressive loop it is compared with. Both loops share the same
// stopping rules, so greedy speculative output equals greedy AR output token for token.
//
// One step (block size k):
//   the target's KV holds every committed token but the last one, `last`;
//   the draft proposes d1..dk' (k' <= k, fewer near the token budget or the context end);
//   ONE target forward of [last, d1..dk'] with all_logits → rows r0..rk' (ri predicts the token
//   after d_i);
//   greedy: accept the leading d_i with argmax(r_{i-1}) == d_i; the first mismatch's argmax is the
//   correction, or after k' accepted drafts argmax(r_k') is a bonus token — either way one target
//   token is committed and carried as the next `last` (not yet in the KV);
//   sampling (temperature > 0): accept d_i with probability min(1, p(d_i)/q(d_i)), p = the
//   target's sampling distribution, q = the draft's; on rejection draw from norm(max(0, p − q));
//   after k' acceptances draw the bonus from p — the committed tokens are distributed exactly as
//   sampling from the target (Leviathan et al., Theorem 1);
//   rejected K/V is trimmed by LlamaContext::truncate (O(1)); the draft is told via commit().
//
// Equality with AR: verify rows and one-token decode logits must agree bit for bit. That is the
// backend's requirement "verify agrees with decode" (backend.h): blocks shorter than
// kExactBlockTokens are computed like one-token decode by every backend in its default options
// (the CPU backend opened with batched_matmul=sgemm gives it up). Prefill runs the same way in
// both loops, so both start from identical KV. Greedy loops read back only the argmax of each
// row (LlamaContext::eval_argmax).
//
// Stopping (both loops, checked after every committed token, in this order): EOS (not included
// in the output), the runaway guard (the last 12·u generated tokens are one unit of u = 1..8
// tokens repeated ≥ 12 times; the repeat stays in the output), max_new_tokens, context full.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "bridge/result.h"
#include "engine/draft.h"
#include "engine/llama.h"
#include "engine/sampling.h"

namespace kakeya::engine {

struct StopRules {
  int max_new_tokens = 64;  // generated tokens, the first one (from the prefill logits) included
  // End-of-generation ids (Tokenizer::eog_ids): generation stops before committing any of them.
  // Empty: never stop on a token.
  std::vector<int32_t> eog;
  int runaway_repeats = 12; // 0 disables the guard
  int runaway_max_unit = 8;
};

struct SpecOptions {
  int block_size = 4;  // drafts per target forward (k >= 1)
  SamplingParams sampling;  // temperature 0 = greedy
  StopRules stop;
};

// Why generation ended.
enum class StopReason { kLength, kEos, kRunaway, kContextFull };
// "length", "eos" (an end-of-generation token of StopRules::eog), "runaway", "context_full".
const char* stop_reason_name(StopReason r);

struct GenerationResult {
  std::vector<int32_t> tokens;  // generated tokens (the end-of-generation token excluded)
  StopReason stop = StopReason::kLength;
  std::string runaway_detail;   // e.g. "unit of 2 tokens repeated 12 times" when kRunaway
  double prefill_s = 0;         // target prefill (+ draft begin(), timed separately below)
  double draft_prefill_s = 0;   // DraftSource::begin (speculative only)
  double decode_s = 0;          // everything after the prefill until the stop
  size_t target_forwards = 0;   // target evals after the prefill (verify blocks / decode steps)
  size_t draft_blocks = 0;      // steps where the draft proposed >= 1 token
  size_t drafted = 0;           // proposed tokens
  size_t accepted = 0;          // proposed tokens accepted
  size_t resident_kv_bytes = 0; // target KV + draft KV at the end, measured from the caches
  // Tokens committed per target forward during decode (tokens.size() - 1 over target_forwards).
  double tokens_per_forward() const;
};

// The runaway test on `generated`: "" when fine, else a description. A unit of u tokens
// (1 <= u <= max_unit) repeated >= repeats times at the very end.
std::string runaway_reason(std::span<const int32_t> generated, int repeats, int max_unit);

// Plain autoregressive decoding: prefill `prompt` from an empty cache, then one target forward per
// token. Greedy or seeded sampling per options.sampling (block_size is not used). Errors: context
// errors, "bad_param".
Result<GenerationResult> autoregressive_generate(LlamaContext& target, std::span<const int32_t> prompt,
                                                 const SpecOptions& options);

// Speculative decoding with `draft` (see the file comment). Errors: "bad_param" (block_size < 1,
// bad sampling params, empty prompt), context and draft errors.
Result<GenerationResult> speculative_generate(LlamaContext& target, DraftSource& draft,
                                              std::span<const int32_t> prompt,
                                              const SpecOptions& options);

// The stochastic acceptance step for one drafted token x ~ q: returns {x, true} with probability
// min(1, p[x]/q[x]), else {y, false} with y ~ norm(max(0, p − q)) (from p when that has no mass).
// `q` empty means one-hot on x. p and q are [n_vocab] distributions.
struct AcceptDecision {
  int32_t token;
  bool accepted;
};
AcceptDecision speculative_accept(std::span<const float> p, std::span<const float> q, int32_t x,
                                  Sampler& sampler);

}  // namespace kakeya::engine
