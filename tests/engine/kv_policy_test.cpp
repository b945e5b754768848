// KV policies: bounded attention equals an explicit-mask reference forward; truncate/commit
// semantics; bounded memory; the niah-tiny goldens for sink+window and L1-exact.
#include "engine/kv_policy.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <vector>

#include "engine/cpu/quant.h"
#include "engine/llama.h"
#include "engine/presets/niah_eval.h"
#include "engine/sampling.h"
#include "tests/engine/backends.h"
#include "tests/harness/paths.h"

namespace kakeya::engine {
namespace {

const LlamaModel& model(const std::string& file) {
  static std::map<std::string, std::unique_ptr<LlamaModel>> cache;
  auto it = cache.find(file);
  if (it == cache.end()) {
    auto m = LlamaModel::load((testing::models_dir() / file).string());
    EXPECT_TRUE(m.ok()) << m.error().str();
    it = cache.emplace(file, std::make_unique<LlamaModel>(std::move(m).value())).first;
  }
  return *it->second;
}

std::vector<float> matvec_ref(const WeightMatrix& w, const std::vector<float>& x) {
  std::vector<float> row(static_cast<size_t>(w.n_in)), y(static_cast<size_t>(w.n_out));
  for (int64_t r = 0; r < w.n_out; ++r) {
    dequantize_row(w.type, w.row(r), row.data(), w.n_in);
    double s = 0;
    for (int64_t i = 0; i < w.n_in; ++i) s += static_cast<double>(row[i]) * x[i];
    y[static_cast<size_t>(r)] = static_cast<float>(s);
  }
  return y;
}

std::vector<float> rmsnorm_ref(const std::vector<float>& x, const WeightMatrix& norm, float eps) {
  std::vector<float> w(static_cast<size_t>(norm.n_in));
  dequantize_row(norm.type, norm.data, w.data(), norm.n_in);
  double ss = 0;
  for (float v : x) ss += static_cast<double>(v) * v;
  const double sc = 1.0 / std::sqrt(ss / static_cast<double>(x.size()) + eps);
  std::vector<float> y(x.size());
  for (size_t i = 0; i < x.size(); ++i) y[i] = static_cast<float>(x[i] * sc) * w[i];
  return y;
}

void rope_ref(float* v, int64_t n_heads, int64_t hd, int64_t rope_dim, float base, int pos) {
  for (int64_t h = 0; h < n_heads; ++h)
    for (int64_t i = 0; i < rope_dim; i += 2) {
      const double th = pos * std::pow(static_cast<double>(base), -static_cast<double>(i) / static_cast<double>(rope_dim));
      const double c = std::cos(th), s = std::sin(th);
      float* p = v + h * hd + i;
      const double x0 = p[0], x1 = p[1];
      p[0] = static_cast<float>(x0 * c - x1 * s);
      p[1] = static_cast<float>(x0 * s + x1 * c);
    }
}

// Independent full-sequence forward: no cache; attention of (layer, kv head) at query i sees key
// j iff j <= i and (exact(layer, head) || j < sink || j > i - window). Returns the logits after
// the last token.
std::vector<float> reference_logits(const LlamaModel& m, const std::vector<int32_t>& toks,
                                    const KvPolicy& p) {
  const LlamaHparams& hp = m.hparams();
  const LlamaWeights& W = m.weights();
  const size_t T = toks.size(), E = static_cast<size_t>(hp.n_embd), HD = static_cast<size_t>(hp.head_dim);
  std::vector<std::vector<float>> x(T, std::vector<float>(E));
  for (size_t t = 0; t < T; ++t) dequantize_row(W.token_embd.type, W.token_embd.row(toks[t]), x[t].data(), hp.n_embd);
  for (size_t il = 0; il < W.layers.size(); ++il) {
    const LlamaLayerWeights& L = W.layers[il];
    std::vector<std::vector<float>> q(T), k(T), v(T);
    for (size_t t = 0; t < T; ++t) {
      const auto n = rmsnorm_ref(x[t], L.attn_norm, hp.rms_eps);
      q[t] = matvec_ref(L.wq, n);
      k[t] = matvec_ref(L.wk, n);
      v[t] = matvec_ref(L.wv, n);
      rope_ref(q[t].data(), hp.n_head, hp.head_dim, hp.rope.n_dims, hp.rope.freq_base, static_cast<int>(t));
      rope_ref(k[t].data(), hp.n_head_kv, hp.head_dim, hp.rope.n_dims, hp.rope.freq_base, static_cast<int>(t));
    }
    for (size_t i = 0; i < T; ++i) {
      std::vector<float> att(static_cast<size_t>(hp.n_head) * HD, 0.0f);
      for (int64_t h = 0; h < hp.n_head; ++h) {
        const int64_t g = h / hp.n_gqa();
        const bool exact = p.head_exact(static_cast<int>(il), static_cast<int>(g));
        std::vector<double> sc;
        std::vector<size_t> js;
        for (size_t j = 0; j <= i; ++j) {
          const long jj = static_cast<long>(j), ii = static_cast<long>(i);
          if (!exact && !(jj < p.sink || jj > ii - p.window)) continue;
          double s = 0;
          for (size_t d = 0; d < HD; ++d) s += static_cast<double>(q[i][h * HD + d]) * k[j][g * HD + d];
          sc.push_back(s / std::sqrt(static_cast<double>(HD)));
          js.push_back(j);
        }
        double mx = -1e300, z = 0;
        for (double s : sc) mx = std::max(mx, s);
        for (double& s : sc) z += (s = std::exp(s - mx));
        for (size_t a = 0; a < js.size(); ++a)
          for (size_t d = 0; d < HD; ++d) att[h * HD + d] += static_cast<float>(sc[a] / z) * v[js[a]][g * HD + d];
      }
      const auto o = matvec_ref(L.wo, att);
      for (size_t e = 0; e < E; ++e) x[i][e] += o[e];
    }
    for (size_t t = 0; t < T; ++t) {
      const auto n = rmsnorm_ref(x[t], L.ffn_norm, hp.rms_eps);
      auto gt = matvec_ref(L.w_gate, n);
      const auto up = matvec_ref(L.w_up, n);
      for (size_t f = 0; f < gt.size(); ++f) gt[f] = gt[f] / (1.0f + std::exp(-gt[f])) * up[f];
      const auto d = matvec_ref(L.w_down, gt);
      for (size_t e = 0; e < E; ++e) x[t][e] += d[e];
    }
  }
  return matvec_ref(W.output, rmsnorm_ref(x[T - 1], W.output_norm, hp.rms_eps));
}

float max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  float m = 0;
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::abs(a[i] - b[i]));
  return m;
}

// Greedy decoding under a bounded policy (mixed exact/bounded heads, tail smaller than the
// sequence) matches the explicit-mask reference at every step, well past sink + window + tail.
void check_against_mask(const char* mode, size_t n_batch, int kv_bits) {
  const LlamaModel& m = model("niah-tiny-f32.gguf");
  KvPolicy p;
  p.sink = 2;
  p.window = 6;
  p.tail = 3;
  p.exact_heads = {{1, 0}, {3, 2}};
  p.kv_bits = kv_bits;
  auto c = test::context(m, test::cpu(2, mode), 64, n_batch);
  LlamaContext& ctx = *c;
  ASSERT_TRUE(apply_kv_policy(ctx.kv(), p).ok());
  std::vector<int32_t> seq = {1, 403, 407, 261, 378, 432, 383, 286, 261, 376, 298, 315};
  auto lg = ctx.eval(seq);
  ASSERT_TRUE(lg.ok());
  for (int step = 0; step < 14; ++step) {
    const auto ref = reference_logits(m, seq, p);
    const float tol = kv_bits == 32 ? 2e-3f : 0.5f;
    EXPECT_LT(max_abs_diff(lg.value(), ref), tol) << "step " << step;
    if (kv_bits == 32) {
      EXPECT_EQ(argmax(lg.value()), argmax(ref)) << "step " << step;
    }
    const int32_t next = argmax(ref);
    seq.push_back(next);
    const int32_t one[1] = {next};
    lg = ctx.eval(one);
    ASSERT_TRUE(lg.ok());
  }
  EXPECT_GT(seq.size(), static_cast<size_t>(p.sink + p.window + p.tail) * 2);
}

TEST(KvPolicy, BoundedDecodeEqualsMaskReference) { check_against_mask("sgemm", 512, 32); }
TEST(KvPolicy, BoundedSmallChunksEqualMaskReference) { check_against_mask("sgemm", 5, 32); }
TEST(KvPolicy, BoundedQuantizedActivationsEqualMaskReference) { check_against_mask("quantized", 4, 32); }
TEST(KvPolicy, Quantized8BitStaysCloseToMaskReference) { check_against_mask("sgemm", 4, 8); }

std::vector<float> row(size_t n, float base) {
  std::vector<float> r(n);
  for (size_t i = 0; i < n; ++i) r[i] = base + 0.01f * static_cast<float>(i);
  return r;
}

void append_tokens(KvCache& kv, size_t from, size_t n) {
  const size_t stride = kv.shape().n_head_kv * kv.shape().head_dim;
  for (size_t t = from; t < from + n; ++t) {
    const int32_t pos = static_cast<int32_t>(t);
    const auto k = row(stride, static_cast<float>(t)), v = row(stride, -static_cast<float>(t));
    for (size_t il = 0; il < kv.n_layer(); ++il)
      ASSERT_TRUE(test::append_rows(kv.layer(il), kv.backend(), std::span(&pos, 1), k, v).ok());
    ASSERT_TRUE(kv.commit(1).ok());
  }
}

TEST(KvPolicy, EvictsOnlyOnCommitAndRollsBackWithinTail) {
  const KvCacheShape shape{1, 2, 4, 1000};
  KvPolicy p;
  p.sink = 2;
  p.window = 4;
  p.tail = 3;
  p.exact_heads = {{0, 1}};
  KvCache kv(test::cpu(1), shape);
  ASSERT_TRUE(apply_kv_policy(kv, p).ok());
  append_tokens(kv, 0, 20);
  KvLayer& layer = kv.layer(0);
  // Bounded head: sinks 0,1 + positions > 20 - 4 - 3 = 13 → 14..19.
  EXPECT_EQ(layer.head_slots(0), 2u + 6u);
  EXPECT_EQ(layer.head_slots(1), 20u);  // exact head keeps everything
  // Append a draft block without committing: nothing is evicted.
  const int32_t pos[3] = {20, 21, 22};
  std::vector<float> k(3 * 8, 1.0f);
  ASSERT_TRUE(test::append_rows(layer, kv.backend(), pos, k, k).ok());
  EXPECT_EQ(layer.head_slots(0), 11u);
  // Rejecting the block is a length reset; the floor is 20 - tail = 17.
  EXPECT_EQ(kv.truncate_floor(), 17u);
  kv.truncate(20);  // n_committed is 20: layer-level reset of the uncommitted block
  layer.truncate(20);
  EXPECT_EQ(layer.head_slots(0), 8u);
  EXPECT_TRUE(kv.truncate_checked(17).ok());
  EXPECT_EQ(kv.n_committed(), 17u);
  std::vector<int32_t> positions;
  std::vector<float> keys;
  layer.read_head(0, &positions, &keys, nullptr);
  ASSERT_EQ(positions.size(), 5u);  // 0, 1, 14, 15, 16
  EXPECT_EQ(positions[2], 14);
  EXPECT_EQ(keys[2 * 4], 14.0f);  // the slot still holds position 14's key
  std::vector<KvHeadView> views;
  layer.head_views(views);
  EXPECT_EQ(views[0].n_slots, 5u);
  EXPECT_EQ(views[0].sink, 2);
  EXPECT_EQ(views[0].window, 4);
  EXPECT_EQ(views[1].window, 0) << "the exact head sees every position";
  // The next query (position 17) sees sinks and 14..16 (> 17 - 4): everything it needs is kept.
  const KvSlots slots{positions.size(), 4, positions.data(), keys.data(), keys.data(), 2, 4};
  const KvVisibleRanges r = kv_visible_ranges(slots, 17);
  EXPECT_EQ(r.a, 2u);
  EXPECT_EQ(r.b, 2u);
  EXPECT_EQ(r.c, 5u);
  // Below the floor the needed slots are gone: refused, nothing changes.
  auto st = kv.truncate_checked(16);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, "evicted");
  EXPECT_EQ(kv.n_committed(), 17u);
}

TEST(KvPolicy, MemoryStaysBoundedAfterManyTokens) {
  const KvCacheShape shape{2, 2, 8, 5000};
  KvPolicy p;
  p.sink = 4;
  p.window = 16;
  p.tail = 8;
  KvCache kv(test::cpu(1), shape);
  ASSERT_TRUE(apply_kv_policy(kv, p).ok());
  append_tokens(kv, 0, 100);
  const size_t after100 = kv.resident_bytes();
  append_tokens(kv, 100, 3000);
  EXPECT_EQ(kv.resident_bytes(), after100) << "bounded: no growth with sequence length";
  // Measured capacity equals the exact-fit storage of sink + window + tail slots per group
  // (decode appends one token at a time: at most sink + window + tail - 1 + 1 slots).
  const size_t slot_bytes = sizeof(int32_t) + 2 * 2 * 8 * sizeof(float);
  EXPECT_EQ(kv.resident_bytes(), 2 * 28 * slot_bytes);
  EXPECT_LE(kv.resident_bytes(), kv_policy_bound_bytes(p, shape, 3100, 1));
  KvCache full(test::cpu(1), shape);
  append_tokens(full, 0, 3100);
  EXPECT_GT(full.resident_bytes(), 50 * kv.resident_bytes());
  EXPECT_LE(full.resident_bytes(), kv_policy_bound_bytes(KvPolicy{}, shape, 3100, 1));
  EXPECT_GE(full.resident_bytes(), 2 * 3100 * slot_bytes);
}

TEST(KvPolicy, QuantizedStorageIsSmallerAndMeasured) {
  const KvCacheShape shape{1, 4, 16, 512};
  for (int bits : {8, 4}) {
    KvPolicy p;
    p.kv_bits = bits;
    KvCache kv(test::cpu(1), shape);
    ASSERT_TRUE(apply_kv_policy(kv, p).ok());
    append_tokens(kv, 0, 64);
    const KvLayer& layer = kv.layer(0);
    const double bpv = 8.0 * static_cast<double>(layer.kv_value_bytes()) / static_cast<double>(layer.kv_values());
    EXPECT_NEAR(bpv, bits + 64.0 / 64.0, 1e-9) << "codes + f32 scale and min per 64 values";
    EXPECT_LE(kv.resident_bytes(), kv_policy_bound_bytes(p, shape, 64, 1));
    const float step = bits == 8 ? (0.63f / 255) : (0.63f / 15);
    for (size_t h = 0; h < 4; ++h) {
      std::vector<float> k;
      layer.read_head(h, nullptr, &k, nullptr);  // decoded from the backend's codes
      for (size_t i = 0; i < 16; ++i)
        EXPECT_NEAR(k[5 * 16 + i], 5.0f + 0.01f * static_cast<float>(h * 16 + i), step / 2 + 1e-5f);
    }
  }
}

TEST(KvPolicy, PolicyFileRoundTripAndErrors) {
  auto p = kv_policy_from_json(nlohmann::json::parse(
      R"({"sink": 4, "window": 64, "tail": 16, "exact_layers": [1, 3], "exact_heads": [[0, 2]], "kv_bits": 8})"));
  ASSERT_TRUE(p.ok()) << p.error().str();
  EXPECT_TRUE(p->head_exact(1, 0));
  EXPECT_TRUE(p->head_exact(0, 2));
  EXPECT_FALSE(p->head_exact(0, 1));
  auto again = kv_policy_from_json(to_json(p.value()));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->describe(), p->describe());
  EXPECT_EQ(kv_policy_from_json(nlohmann::json::parse(R"({"kv_bits": 5})")).error().code, "bad_param");
  EXPECT_EQ(kv_policy_from_json(nlohmann::json::parse(R"({"windw": 5})")).error().code, "bad_param");
  KvPolicy bad;
  bad.window = 8;
  bad.exact_heads = {{0, 9}};
  EXPECT_FALSE(check_kv_policy(bad, KvCacheShape{4, 4, 16, 100}).ok());
}

// models/niah-tiny.goldens.json: sink 4 + window 64 (all layers) and with L1 exact, exact ids.
TEST(KvPolicy, NiahTinyGoldens) {
  std::ifstream in(testing::models_dir() / "niah-tiny.goldens.json");
  const auto j = nlohmann::json::parse(in);
  const LlamaModel& m = model("niah-tiny-f32.gguf");
  auto c = test::context(m, test::cpu(2), 0, 64);
  LlamaContext& ctx = *c;
  int checked = 0;
  for (const auto& g : j["goldens"]) {
    const std::string name = g["name"];
    KvPolicy p;
    if (name == "niah-design-seed0-lines20-sample0-sink4-win64") {
      p.window = 64;
    } else if (name == "niah-design-seed0-lines20-sample0-sink4-win64-L1exact") {
      p.window = 64;
      p.exact_layers = {1};
    } else if (name != "niah-design-seed0-lines20-sample0-full") {
      continue;
    }
    const auto prompt = g["prompt_token_ids"].get<std::vector<int32_t>>();
    auto run = run_greedy(ctx, p, prompt, g["n_new"].get<int>());
    ASSERT_TRUE(run.ok()) << run.error().str();
    EXPECT_EQ(run->ids, g["expected_token_ids"].get<std::vector<int32_t>>()) << name;
    ++checked;
  }
  EXPECT_EQ(checked, 3);
}

}  // namespace
}  // namespace kakeya::engine
