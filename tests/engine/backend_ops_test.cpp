// The per-op backend table (presets/backend_ops.h) on every backend open_backend can open, in
// each of its option sets; a backend that cannot be opened is skipped, saying why.
#include "engine/presets/backend_ops.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <ostream>
#include <string>
#include <vector>

namespace kakeya::engine {
namespace {

struct Config {
  std::string spec;
  BackendOptions options;
  std::string label;
};

std::vector<Config> configs() {
  std::vector<Config> out;
  for (const std::string& name : known_backends()) {
    if (name != "cpu") {
      out.push_back({name, BackendOptions{2}, name});
      continue;
    }
    // Every CPU path: the batched matmul modes over row-major and packed weights.
    for (const char* layout : {"row-major", "packed"})
      for (const char* mode : {"auto", "sgemm", "quantized"})
        out.push_back({name, BackendOptions{2, layout, mode}, std::string("cpu_") + layout + "_" + mode});
  }
  return out;
}

void PrintTo(const Config& c, std::ostream* os) { *os << c.label; }

class BackendOps : public ::testing::TestWithParam<Config> {};

TEST_P(BackendOps, EveryOpMatchesTheScalarReference) {
  const Config& c = GetParam();
  auto backend = open_backend(c.spec, c.options);
  if (!backend.ok()) GTEST_SKIP() << c.spec << " cannot be opened here: " << backend.error().str();
  auto results = run_backend_ops(**backend);
  ASSERT_TRUE(results.ok()) << results.error().str();
  ASSERT_GE(results->size(), 250u);
  size_t failed = 0;
  for (const BackendOpResult& r : *results) {
    if (r.passed) continue;
    ++failed;
    ADD_FAILURE() << c.label << " " << r.op << " " << r.type << " " << r.shape << ": nmse " << r.nmse << " (tol "
                  << r.tol_nmse << "), max |d| " << r.max_abs << " (tol " << r.tol_abs << ")";
  }
  // The worst case per op, for the log.
  std::map<std::string, std::pair<double, double>> worst;
  for (const BackendOpResult& r : *results) {
    auto& w = worst[r.op + "/" + r.type];
    w.first = std::max(w.first, r.nmse);
    w.second = std::max(w.second, r.max_abs);
  }
  for (const auto& [k, w] : worst) std::printf("  %-22s worst nmse %.3g  max |d| %.3g\n", k.c_str(), w.first, w.second);
  EXPECT_EQ(failed, 0u);
  const auto j = backend_ops_json(**backend, *results);
  EXPECT_EQ(j["passed"], failed == 0);
  EXPECT_EQ(j["backend"]["name"], c.spec);
}

INSTANTIATE_TEST_SUITE_P(AllBackends, BackendOps, ::testing::ValuesIn(configs()),
                         [](const ::testing::TestParamInfo<Config>& p) {
                           std::string s = p.param.label;
                           for (char& ch : s)
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return s;
                         });

// The metrics can fail: a perturbation beyond the tolerance is reported.
TEST(BackendOpsMetric, NormalizedMseAndMaxAbs) {
  const std::vector<float> want = {1, -2, 3, 0};
  EXPECT_EQ(op_error(want, want).nmse, 0.0);
  EXPECT_EQ(op_error(want, want).max_abs, 0.0);
  const OpError e = op_error({1, -2, 3.5f, 0}, want);
  EXPECT_DOUBLE_EQ(e.nmse, 0.25 / 14.0);
  EXPECT_DOUBLE_EQ(e.max_abs, 0.5);
  EXPECT_TRUE(std::isinf(op_error({1, 2}, want).nmse)) << "a size mismatch never passes";
  EXPECT_TRUE(std::isinf(op_error({1, -2, NAN, 0}, want).max_abs)) << "NaN never passes";
}

}  // namespace
}  // namespace kakeya::engine
