#pragma once
// Token sampling from logits: greedy, or temperature → top-k → top-p (nucleus) → a draw from a
// seeded std::mt19937_64.
//
// The distribution after the chain is exposed (sampling_probabilities) because speculative
// sampling (Leviathan et al. 2023, "Fast Inference from Transformers via Speculative Decoding",
// Chen et al. 2023) accepts a drafted token x with probability min(1, p(x)/q(x)) and on rejection
// draws from norm(max(0, p − q)); p and q must be the distributions the target and draft would
// actually sample from.
//
// Determinism: same SamplingParams (seed included) and same logits → same token sequence, on every
// platform (uniforms come from the raw 64-bit engine, not from std::uniform_real_distribution).

#include <cstdint>
#include <random>
#include <span>
#include <vector>

#include "bridge/result.h"

namespace kakeya::engine {

struct SamplingParams {
  float temperature = 0;  // 0 = greedy (argmax, ties → lowest id); otherwise logits / temperature
  int top_k = 0;          // keep the k most likely tokens; 0 = all
  float top_p = 1.0f;     // keep the smallest most-likely prefix with mass >= top_p; 1 = all
  uint64_t seed = 0;      // seeds std::mt19937_64
};

// Errors "bad_param" unless temperature is finite and >= 0, top_k >= 0 and 0 < top_p <= 1.
Status check_sampling_params(const SamplingParams& params);

// Index of the largest logit, the lowest index on ties; NaN counts as -inf. -1 when empty.
int32_t argmax(std::span<const float> logits);

// log Σᵢ exp(logits[i]), computed as max + log Σ exp(l − max) (each exp in float, the sum in
// double, as llama-perplexity's log_softmax), so log p(i) = logits[i] − log_sum_exp(logits).
// REQUIRES: logits not empty.
double log_sum_exp(std::span<const float> logits);

// The ids of the k largest logits, largest first (ties: the lower id); min(k, n) of them.
std::vector<int32_t> top_k_ids(std::span<const float> logits, size_t k);

// softmax(logits / temperature) over all entries, shape [n_vocab], summing to 1 (computed in
// double, max-subtracted). temperature <= 0 gives the one-hot argmax distribution. NaN and -inf
// logits get probability 0. Empty input → empty output.
std::vector<float> softmax(std::span<const float> logits, float temperature);

// The distribution the Sampler draws from, shape [n_vocab]: temperature, then top-k (ties at the
// boundary keep the lower id), then top-p over the tokens sorted by probability (keep the smallest
// prefix whose mass >= top_p, at least one token), renormalised; removed tokens get 0.
// Greedy params (temperature <= 0) give the one-hot argmax distribution.
std::vector<float> sampling_probabilities(std::span<const float> logits, const SamplingParams& params);

class Sampler {
 public:
  // REQUIRES: check_sampling_params(params).ok() (out-of-range values are clamped).
  explicit Sampler(SamplingParams params);

  // Next token for `logits` [n_vocab]. Greedy params never consume randomness. -1 when empty.
  int32_t sample(std::span<const float> logits);

  // A draw from a given (not necessarily normalised) non-negative distribution, e.g. the
  // speculative residual norm(max(0, p − q)); -1 when it has no positive mass.
  int32_t sample_from(std::span<const float> probs);

  // A uniform double in [0, 1) with 53 random bits (the acceptance test of speculative sampling).
  double uniform();

  const SamplingParams& params() const { return params_; }
  bool greedy() const { return params_.temperature <= 0; }

 private:
  SamplingParams params_;
  std::mt19937_64 rng_;
};

}  // namespace kakeya::engine
