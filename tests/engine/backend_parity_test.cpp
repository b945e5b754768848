// backend-parity: the scalar reference forward agrees with the CPU backend, and the report shape.
#include "engine/presets/backend_parity.h"

#include <gtest/gtest.h>

#include <cmath>

#include "bridge/gate.h"
#include "engine/llama.h"
#include "engine/presets/synth.h"
#include "engine/sampling.h"
#include "tests/engine/backends.h"
#include "tests/harness/paths.h"

namespace kakeya::engine {
namespace {

using test::stories_path;

TEST(ReferenceLogits, MatchesTheCpuBackendOnStories) {
  auto m = LlamaModel::load(stories_path());
  ASSERT_TRUE(m.ok());
  const std::vector<int32_t> prompt = {1, 400, 261, 300, 270, 290, 310, 45};
  auto ref = reference_logits(m.value(), prompt);
  ASSERT_TRUE(ref.ok());
  auto ctx_owner = test::context(m.value(), test::cpu(1), 32);
  LlamaContext& ctx = *ctx_owner;
  auto cpu = ctx.eval(prompt, true);
  ASSERT_TRUE(cpu.ok());
  ASSERT_EQ(ref->size(), cpu->size());
  float mx = 0;
  for (size_t i = 0; i < ref->size(); ++i) mx = std::max(mx, std::fabs((*ref)[i] - (*cpu)[i]));
  EXPECT_LT(mx, 1e-4f);
  const size_t V = 512;
  for (size_t t = 0; t < prompt.size(); ++t)
    EXPECT_EQ(argmax(std::span<const float>(ref->data() + t * V, V)),
              argmax(std::span<const float>(cpu->data() + t * V, V)));
  EXPECT_EQ(reference_logits(m.value(), std::vector<int32_t>{}).error().code, "empty_input");
  EXPECT_EQ(reference_logits(m.value(), std::vector<int32_t>{1, 999}).error().code, "bad_token");
}

TEST(ReferenceLogits, MatchesTheDecodePathOnQuantizedWeights) {
  testing::TempDir tmp;
  SynthOptions o;
  o.shape.n_embd = 64;
  o.shape.n_ff = 128;
  o.shape.n_head = 4;
  o.shape.n_head_kv = 2;
  o.type = GgmlType::Q4_0;
  o.vocab_source = stories_path();
  const std::string path = (tmp.path() / "q4.gguf").string();
  ASSERT_TRUE(write_synth_model(o, path).ok());
  auto m = LlamaModel::load(path);
  ASSERT_TRUE(m.ok());
  const std::vector<int32_t> prompt = {1, 20, 30, 40, 50};
  auto ref = reference_logits(m.value(), prompt);
  ASSERT_TRUE(ref.ok());
  auto ctx_owner = test::context(m.value(), test::cpu(1), 16);
  LlamaContext& ctx = *ctx_owner;
  std::vector<float> dec;
  for (int32_t t : prompt) {
    const int32_t one[1] = {t};
    auto row = ctx.eval(one);
    ASSERT_TRUE(row.ok());
    dec.insert(dec.end(), row->begin(), row->end());
  }
  float mx = 0;
  for (size_t i = 0; i < ref->size(); ++i) mx = std::max(mx, std::fabs((*ref)[i] - dec[i]));
  EXPECT_LT(mx, 1e-3f);  // same quantized activations; only f32 summation order differs
}

TEST(BackendParity, ReportShape) {
  BackendParityConfig c;
  c.model = stories_path();
  auto r = run_backend_parity(c, test::cpu(2));
  ASSERT_TRUE(r.ok()) << r.error().str();
  const auto& rep = r.value();
  EXPECT_EQ(rep["kind"], "backend-parity");
  ASSERT_EQ(rep["arms"].size(), 3u);
  EXPECT_EQ(rep["arms"][1]["name"], "cpu-batched");
  EXPECT_EQ(rep["arms"][1]["backend_used"], "cpu");
  EXPECT_EQ(rep["engine"]["backend"], "cpu");
  for (const auto& cmp : rep["comparisons"]) {
    EXPECT_EQ(cmp["argmax_agreement"].get<double>(), 1.0);
    EXPECT_LT(cmp["value"].get<double>(), 1e-3);
  }
  const bridge::GateVerdict v = bridge::evaluate_gate(rep, {});
  EXPECT_TRUE(v.passed) << v.to_json().dump();
}

}  // namespace
}  // namespace kakeya::engine
