#include "engine/sampling.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

namespace kakeya::engine {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

std::vector<float> logits_of(const std::vector<double>& probs) {
  std::vector<float> l;
  for (const double p : probs) l.push_back(p > 0 ? static_cast<float>(std::log(p)) : kNegInf);
  return l;
}

// Pearson chi-square statistic of `counts` against `probs` (cells with p = 0 must be empty).
double chi_square(const std::vector<int>& counts, const std::vector<double>& probs, int n) {
  double chi = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    if (probs[i] == 0) {
      EXPECT_EQ(counts[i], 0) << "token " << i << " has probability 0";
      continue;
    }
    const double e = probs[i] * n;
    chi += (counts[i] - e) * (counts[i] - e) / e;
  }
  return chi;
}

std::vector<int> histogram(Sampler& s, const std::vector<float>& logits, int n) {
  std::vector<int> counts(logits.size(), 0);
  for (int i = 0; i < n; ++i) {
    const int32_t t = s.sample(logits);
    EXPECT_GE(t, 0);
    ++counts[static_cast<size_t>(t)];
  }
  return counts;
}

TEST(Sampling, GreedyPicksLowestIdOnTies) {
  Sampler s(SamplingParams{});
  const std::vector<float> l = {0.5f, 2.0f, -1.0f, 2.0f, 1.9f};
  EXPECT_EQ(s.sample(l), 1);
  EXPECT_EQ(argmax(l), 1);
  EXPECT_EQ(argmax(std::vector<float>{NAN, 1.0f, 1.0f}), 1);
  EXPECT_EQ(argmax(std::vector<float>{}), -1);
  const auto p = sampling_probabilities(l, SamplingParams{});
  EXPECT_EQ(p, (std::vector<float>{0, 1, 0, 0, 0}));
}

TEST(Sampling, SoftmaxWithTemperature) {
  const std::vector<float> l = {0.0f, static_cast<float>(std::log(2.0))};
  const auto p1 = softmax(l, 1.0f);
  EXPECT_NEAR(p1[0], 1.0 / 3, 1e-6);
  EXPECT_NEAR(p1[1], 2.0 / 3, 1e-6);
  const auto p2 = softmax(l, 2.0f);  // ratio sqrt(2)
  EXPECT_NEAR(p2[1] / p2[0], std::sqrt(2.0), 1e-5);
  EXPECT_NEAR(p2[0] + p2[1], 1.0, 1e-6);
  const auto p0 = softmax(l, 0.0f);
  EXPECT_EQ(p0, (std::vector<float>{0, 1}));
  const auto pinf = softmax(std::vector<float>{kNegInf, 3.0f, NAN}, 1.0f);
  EXPECT_EQ(pinf, (std::vector<float>{0, 1, 0}));
  // Large logits do not overflow.
  const auto big = softmax(std::vector<float>{1000.0f, 1000.0f}, 1.0f);
  EXPECT_NEAR(big[0], 0.5, 1e-6);
}

TEST(Sampling, SameSeedSameSequence) {
  const std::vector<float> l = {1.0f, 0.5f, 0.2f, 0.0f, -0.3f, 0.8f};
  const SamplingParams params{1.0f, 0, 1.0f, 1234};
  Sampler a(params), b(params), c(SamplingParams{1.0f, 0, 1.0f, 99});
  std::vector<int32_t> sa, sb, sc;
  for (int i = 0; i < 200; ++i) {
    sa.push_back(a.sample(l));
    sb.push_back(b.sample(l));
    sc.push_back(c.sample(l));
  }
  EXPECT_EQ(sa, sb);
  EXPECT_NE(sa, sc);
}

TEST(Sampling, TopKOneEqualsGreedy) {
  Sampler s(SamplingParams{1.5f, 1, 1.0f, 7});
  const std::vector<float> l = {0.1f, 0.3f, 0.3f, -2.0f};
  for (int i = 0; i < 50; ++i) EXPECT_EQ(s.sample(l), 1);
  const auto p = sampling_probabilities(l, SamplingParams{1.5f, 1, 1.0f, 7});
  EXPECT_EQ(p, (std::vector<float>{0, 1, 0, 0}));
}

TEST(Sampling, TopKRenormalises) {
  const auto l = logits_of({0.5, 0.3, 0.2});
  const auto p = sampling_probabilities(l, SamplingParams{1.0f, 2, 1.0f, 0});
  EXPECT_NEAR(p[0], 0.625, 1e-6);
  EXPECT_NEAR(p[1], 0.375, 1e-6);
  EXPECT_EQ(p[2], 0.0f);
}

TEST(Sampling, TopPKeepsSmallestPrefixReachingMass) {
  const auto l = logits_of({0.15, 0.5, 0.05, 0.3});
  auto p = sampling_probabilities(l, SamplingParams{1.0f, 0, 0.75f, 0});  // 0.5 + 0.3 >= 0.75
  EXPECT_NEAR(p[1], 0.625, 1e-6);
  EXPECT_NEAR(p[3], 0.375, 1e-6);
  EXPECT_EQ(p[0], 0.0f);
  EXPECT_EQ(p[2], 0.0f);
  p = sampling_probabilities(l, SamplingParams{1.0f, 0, 0.4f, 0});  // the top token alone
  EXPECT_EQ(p, (std::vector<float>{0, 1, 0, 0}));
  p = sampling_probabilities(l, SamplingParams{1.0f, 0, 0.9f, 0});  // 0.5 + 0.3 + 0.15
  EXPECT_GT(p[0], 0.0f);
  EXPECT_EQ(p[2], 0.0f);
  EXPECT_NEAR(p[0] + p[1] + p[3], 1.0, 1e-6);
  // top-k then top-p: top-2 = {0.625, 0.375}; p = 0.6 keeps only the first.
  p = sampling_probabilities(l, SamplingParams{1.0f, 2, 0.6f, 0});
  EXPECT_EQ(p, (std::vector<float>{0, 1, 0, 0}));
}

TEST(Sampling, EmpiricalFrequenciesMatchProbabilities) {
  const std::vector<double> probs = {0.4, 0.25, 0.2, 0.1, 0.05, 0.0};
  const auto l = logits_of(probs);
  Sampler s(SamplingParams{1.0f, 0, 1.0f, 42});
  const int n = 20000;
  const auto counts = histogram(s, l, n);
  // 4 degrees of freedom: P(chi2 > 18.47) = 0.001.
  EXPECT_LT(chi_square(counts, probs, n), 18.47);
}

TEST(Sampling, EmpiricalFrequenciesAfterTemperatureAndTopK) {
  const auto l = logits_of({0.4, 0.3, 0.2, 0.1});
  const SamplingParams params{0.5f, 3, 1.0f, 5};
  const auto p = sampling_probabilities(l, params);
  // T = 0.5 squares the probabilities: 0.16, 0.09, 0.04 (top-3) → / 0.29.
  EXPECT_NEAR(p[0], 0.16 / 0.29, 1e-5);
  EXPECT_EQ(p[3], 0.0f);
  Sampler s(params);
  const int n = 20000;
  const auto counts = histogram(s, l, n);
  const std::vector<double> expected(p.begin(), p.end());
  EXPECT_LT(chi_square(counts, expected, n), 13.82);  // 2 dof, p = 0.001
}

TEST(Sampling, SampleFromGivenDistribution) {
  Sampler s(SamplingParams{1.0f, 0, 1.0f, 3});
  EXPECT_EQ(s.sample_from(std::vector<float>{0, 0, 0}), -1);
  EXPECT_EQ(s.sample_from(std::vector<float>{0, 0, 2.5f}), 2);
  std::vector<int> counts(2, 0);
  for (int i = 0; i < 10000; ++i) ++counts[static_cast<size_t>(s.sample_from(std::vector<float>{3, 1}))];
  EXPECT_LT(chi_square(counts, {0.75, 0.25}, 10000), 10.83);  // 1 dof, p = 0.001
  for (int i = 0; i < 1000; ++i) {
    const double u = s.uniform();
    EXPECT_GE(u, 0.0);
    EXPECT_LT(u, 1.0);
  }
}

TEST(Sampling, ParameterChecks) {
  EXPECT_TRUE(check_sampling_params(SamplingParams{}).ok());
  EXPECT_EQ(check_sampling_params(SamplingParams{-1.0f, 0, 1.0f, 0}).error().code, "bad_param");
  EXPECT_FALSE(check_sampling_params(SamplingParams{1.0f, -2, 1.0f, 0}).ok());
  EXPECT_FALSE(check_sampling_params(SamplingParams{1.0f, 0, 0.0f, 0}).ok());
  EXPECT_FALSE(check_sampling_params(SamplingParams{1.0f, 0, 1.5f, 0}).ok());
  EXPECT_FALSE(check_sampling_params(SamplingParams{NAN, 0, 1.0f, 0}).ok());
}

}  // namespace
}  // namespace kakeya::engine
