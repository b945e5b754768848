// Affine KV quantization: codec error bounds and packing, the relative-MSE measure, and
// kv-quant-eval on niah-tiny (bits per value measured from storage, recall through decoding).
#include "engine/kv_quant.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "bridge/gate.h"
#include "engine/presets/kv_quant_eval.h"
#include "tests/engine/backends.h"
#include "tests/harness/paths.h"

namespace kakeya::engine {
namespace {

TEST(AffineRowCodec, ErrorWithinHalfStepPerGroup) {
  std::mt19937 rng(7);
  std::normal_distribution<float> nd(0.0f, 3.0f);
  for (int bits : {8, 4}) {
    for (size_t row : {16u, 64u, 100u, 128u}) {
      AffineRowCodec c(row, 64, bits);
      std::vector<float> x(row), y(row);
      for (float& v : x) v = nd(rng);
      std::vector<uint8_t> buf(c.bytes_per_row());
      c.encode(x.data(), buf.data());
      c.decode(buf.data(), y.data());
      for (size_t g = 0; g < c.n_groups(); ++g) {
        const size_t i0 = g * 64, i1 = std::min(row, i0 + 64);
        float mn = x[i0], mx = x[i0];
        for (size_t i = i0; i < i1; ++i) mn = std::min(mn, x[i]), mx = std::max(mx, x[i]);
        const float step = (mx - mn) / static_cast<float>((1 << bits) - 1);
        for (size_t i = i0; i < i1; ++i) EXPECT_LE(std::abs(x[i] - y[i]), step / 2 + 1e-5f) << bits << " " << row << " " << i;
      }
      const size_t code_bytes = bits == 8 ? row : (row + 1) / 2;
      EXPECT_EQ(c.bytes_per_row(), code_bytes + c.n_groups() * 8);
    }
  }
}

TEST(AffineRowCodec, ConstantGroupAndExtremesAreExact) {
  AffineRowCodec c(6, 3, 4);
  const float x[6] = {2.5f, 2.5f, 2.5f, -1.0f, 0.5f, 14.0f};
  std::vector<uint8_t> buf(c.bytes_per_row());
  float y[6];
  c.encode(x, buf.data());
  c.decode(buf.data(), y);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(y[i], 2.5f);
  EXPECT_EQ(y[3], -1.0f);
  EXPECT_FLOAT_EQ(y[5], 14.0f);
  EXPECT_FLOAT_EQ(y[4], 1.0f) << "(0.5 - -1) / step 1.0 = 1.5 rounds half away from zero to code 2: -1 + 2 = 1";
}

TEST(KvQuantError, RelativeMseIsEnergyWeighted) {
  const KvCacheShape shape{2, 1, 4, 16};
  KvCache kv(test::cpu(1), shape);
  // Layer 0: constant rows (exact under affine quantization); layer 1: varied rows.
  for (int32_t t = 0; t < 3; ++t) {
    const std::vector<float> c = {1, 1, 1, 1};
    const std::vector<float> v = {0.1f * static_cast<float>(t), 1.0f, -2.0f, 0.37f};
    ASSERT_TRUE(test::append_rows(kv.layer(0), kv.backend(), std::span(&t, 1), c, c).ok());
    ASSERT_TRUE(test::append_rows(kv.layer(1), kv.backend(), std::span(&t, 1), v, v).ok());
  }
  ASSERT_TRUE(kv.commit(3).ok());
  const KvQuantError e8 = kv_quant_error(kv, 8, 64), e4 = kv_quant_error(kv, 4, 64);
  EXPECT_EQ(e8.per_layer[0], 0.0);
  EXPECT_GT(e8.per_layer[1], 0.0);
  EXPECT_GT(e4.per_layer[1], 10 * e8.per_layer[1]);
  // Energy weighting: layer 0 adds energy, no error.
  const double en0 = 24, en1 = 2 * (0.01 + 0.04 + 3 * (1 + 4 + 0.37 * 0.37));
  EXPECT_NEAR(e8.rel_mse, e8.per_layer[1] * en1 / (en0 + en1), 1e-12);
}

TEST(KvQuantEval, NiahTinyArms) {
  auto m = LlamaModel::load((testing::models_dir() / "niah-tiny-f32.gguf").string());
  ASSERT_TRUE(m.ok());
  auto tok = Tokenizer::from_gguf(m->gguf());
  ASSERT_TRUE(tok.ok());
  KvQuantEvalConfig cfg;
  cfg.lines = {20};
  cfg.samples = 5;
  auto r = run_kv_quant_eval(m.value(), tok.value(), test::cpu(2), cfg);
  ASSERT_TRUE(r.ok()) << r.error().str();
  const auto& arms = (*r)["arms"];
  ASSERT_EQ(arms.size(), 3u);
  EXPECT_EQ(arms[0]["aggregates"]["bits_per_value"], 32.0);
  // niah-tiny stores 4 KV heads x 16 = 64 values per slot row: one (scale, min) group per row.
  EXPECT_DOUBLE_EQ(arms[1]["aggregates"]["bits_per_value"].get<double>(), 9.0);
  EXPECT_DOUBLE_EQ(arms[2]["aggregates"]["bits_per_value"].get<double>(), 5.0);
  const double mse8 = arms[1]["aggregates"]["rel_mse"], mse4 = arms[2]["aggregates"]["rel_mse"];
  EXPECT_GT(mse8, 0.0);
  EXPECT_LT(mse8, 1e-3);
  EXPECT_GT(mse4, 20 * mse8);
  EXPECT_EQ(arms[0]["aggregates"]["recall"], 1.0);
  EXPECT_EQ(arms[1]["aggregates"]["recall"], 1.0);
  EXPECT_GT(arms[0]["aggregates"]["resident_kv_bytes_median"].get<double>(),
            3 * arms[1]["aggregates"]["resident_kv_bytes_median"].get<double>());
  const auto v = bridge::evaluate_gate(*r, {});
  for (const auto& x : v.evidence_violations) EXPECT_EQ(x.code, "RECALL_DELTA") << x.message;
}

}  // namespace
}  // namespace kakeya::engine
