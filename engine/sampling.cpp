#include "engine/sampling.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>

namespace kakeya::engine {
namespace {

float clean(float x) { return std::isnan(x) ? -std::numeric_limits<float>::infinity() : x; }

std::vector<float> one_hot(size_t n, int32_t at) {
  std::vector<float> p(n, 0.0f);
  if (at >= 0) p[static_cast<size_t>(at)] = 1.0f;
  return p;
}

}  // namespace

Status check_sampling_params(const SamplingParams& p) {
  if (!std::isfinite(p.temperature) || p.temperature < 0) {
    return make_error("bad_param", "temperature = " + std::to_string(p.temperature) +
                                       " must be finite and >= 0");
  }
  if (p.top_k < 0) {
    return make_error("bad_param", "top_k = " + std::to_string(p.top_k) + " must be >= 0");
  }
  if (!(p.top_p > 0.0f && p.top_p <= 1.0f)) {
    return make_error("bad_param", "top_p = " + std::to_string(p.top_p) + " must be in (0, 1]");
  }
  return ok_status();
}

int32_t argmax(std::span<const float> logits) {
  int32_t best = -1;
  float best_v = 0;
  for (size_t i = 0; i < logits.size(); ++i) {
    const float v = clean(logits[i]);
    if (best < 0 || v > best_v) {
      best = static_cast<int32_t>(i);
      best_v = v;
    }
  }
  return best;
}

double log_sum_exp(std::span<const float> logits) {
  float max_logit = logits[0];
  for (float l : logits) max_logit = std::max(max_logit, l);
  double sum_exp = 0.0;
  for (float l : logits) sum_exp += std::exp(l - max_logit);
  return max_logit + std::log(sum_exp);
}

std::vector<int32_t> top_k_ids(std::span<const float> logits, size_t k) {
  std::vector<int32_t> ids(logits.size());
  std::iota(ids.begin(), ids.end(), 0);
  k = std::min(k, ids.size());
  std::partial_sort(ids.begin(), ids.begin() + static_cast<long>(k), ids.end(), [&](int32_t a, int32_t b) {
    const float la = clean(logits[static_cast<size_t>(a)]), lb = clean(logits[static_cast<size_t>(b)]);
    return la > lb || (la == lb && a < b);
  });
  ids.resize(k);
  return ids;
}

std::vector<float> softmax(std::span<const float> logits, float temperature) {
  const size_t n = logits.size();
  if (n == 0) return {};
  if (!(temperature > 0)) return one_hot(n, argmax(logits));
  float max_v = -std::numeric_limits<float>::infinity();
  for (const float x : logits) max_v = std::max(max_v, clean(x));
  if (!std::isfinite(max_v)) return one_hot(n, argmax(logits));  // all -inf (or +inf present)
  std::vector<double> e(n);
  double sum = 0;
  for (size_t i = 0; i < n; ++i) {
    const float x = clean(logits[i]);
    e[i] = std::isfinite(x) ? std::exp((static_cast<double>(x) - max_v) / temperature) : 0.0;
    sum += e[i];
  }
  std::vector<float> p(n);
  for (size_t i = 0; i < n; ++i) p[i] = static_cast<float>(e[i] / sum);
  return p;
}

std::vector<float> sampling_probabilities(std::span<const float> logits, const SamplingParams& params) {
  const size_t n = logits.size();
  if (n == 0) return {};
  if (!(params.temperature > 0)) return one_hot(n, argmax(logits));

  std::vector<float> probs = softmax(logits, params.temperature);
  const bool use_k = params.top_k > 0 && static_cast<size_t>(params.top_k) < n;
  const bool use_p = params.top_p < 1.0f;
  if (!use_k && !use_p) return probs;

  // Candidates most likely first; equal probabilities keep the lower id first.
  std::vector<int32_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  auto more_likely = [&](int32_t a, int32_t b) {
    const float pa = probs[static_cast<size_t>(a)];
    const float pb = probs[static_cast<size_t>(b)];
    return pa > pb || (pa == pb && a < b);
  };
  size_t keep = n;
  if (use_k) {
    keep = static_cast<size_t>(params.top_k);
    std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(keep), order.end(),
                      more_likely);
  } else {
    std::sort(order.begin(), order.end(), more_likely);
  }

  double kept_mass = 0;
  for (size_t i = 0; i < keep; ++i) kept_mass += probs[static_cast<size_t>(order[i])];
  if (use_p && kept_mass > 0) {
    // Nucleus over the top-k renormalised distribution.
    const double target = static_cast<double>(params.top_p) * kept_mass;
    double cum = 0;
    size_t cut = keep;
    for (size_t i = 0; i < keep; ++i) {
      cum += probs[static_cast<size_t>(order[i])];
      if (cum >= target) {
        cut = i + 1;
        break;
      }
    }
    keep = cut;
    kept_mass = cum;
  }
  if (!(kept_mass > 0)) return one_hot(n, argmax(logits));

  std::vector<float> out(n, 0.0f);
  for (size_t i = 0; i < keep; ++i) {
    const auto id = static_cast<size_t>(order[i]);
    out[id] = static_cast<float>(probs[id] / kept_mass);
  }
  return out;
}

Sampler::Sampler(SamplingParams params) : params_(params), rng_(params.seed) {
  if (!std::isfinite(params_.temperature) || params_.temperature < 0) params_.temperature = 0;
  params_.top_k = std::max(params_.top_k, 0);
  if (!(params_.top_p > 0.0f) || params_.top_p > 1.0f) params_.top_p = 1.0f;
}

int32_t Sampler::sample(std::span<const float> logits) {
  if (greedy()) return argmax(logits);
  const std::vector<float> probs = sampling_probabilities(logits, params_);
  return sample_from(probs);
}

double Sampler::uniform() {
  return static_cast<double>(rng_() >> 11) * 0x1.0p-53;
}

int32_t Sampler::sample_from(std::span<const float> probs) {
  double total = 0;
  int32_t last = -1;
  for (size_t i = 0; i < probs.size(); ++i) {
    if (probs[i] > 0) {  // false for NaN
      total += probs[i];
      last = static_cast<int32_t>(i);
    }
  }
  if (last < 0) return -1;
  const double u = uniform() * total;
  double cum = 0;
  for (size_t i = 0; i < probs.size(); ++i) {
    if (!(probs[i] > 0)) continue;
    cum += probs[i];
    if (u < cum) return static_cast<int32_t>(i);
  }
  return last;  // rounding: u landed at the very top
}

}  // namespace kakeya::engine
