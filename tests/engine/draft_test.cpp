// Draft sources: vocabulary check, spec parsing, prompt lookup, the quantized copy, and the
// layer-skip pass (LlamaContext::eval_layers) sharing the target's KV.
#include "engine/draft.h"

#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "engine/presets/synth.h"
#include "tests/engine/backends.h"
#include "tests/harness/paths.h"

namespace kakeya::engine {
namespace {

using test::model_path;
using test::stories;

float max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  float m = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) m = std::max(m, std::fabs(a[i] - b[i]));
  return m;
}

TEST(DraftVocab, SameVocabularyPasses) {
  auto niah = LlamaModel::load(model_path("niah-tiny-f32.gguf"));
  ASSERT_TRUE(niah.ok());
  EXPECT_TRUE(check_same_vocab(stories().gguf(), niah->gguf()).ok());
}

TEST(DraftVocab, DifferentStringsOrSizeAreRejected) {
  testing::TempDir tmp;
  SynthOptions o;
  o.shape.n_embd = 64;
  o.shape.n_ff = 64;
  o.shape.n_head = 2;
  o.shape.n_head_kv = 1;
  o.shape.n_vocab = 512;  // byte-level vocabulary: same size, different strings
  const std::string same_size = (tmp.path() / "bytes.gguf").string();
  ASSERT_TRUE(write_synth_model(o, same_size).ok());
  o.shape.n_vocab = 600;
  const std::string other_size = (tmp.path() / "600.gguf").string();
  ASSERT_TRUE(write_synth_model(o, other_size).ok());

  auto target_ctx = test::context(stories(), test::cpu(1), 64);
  LlamaContext& target = *target_ctx;
  auto a = make_draft_source("gguf:" + same_size, target, {});
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.error().code, "vocab_mismatch");
  EXPECT_NE(a.error().message.find("token "), std::string::npos) << a.error().message;
  auto b = make_draft_source("gguf:" + other_size, target, {});
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.error().code, "vocab_mismatch");
  EXPECT_NE(b.error().message.find("600"), std::string::npos) << b.error().message;
}

TEST(DraftSpec, BadSpecsAreRejected) {
  auto target_ctx = test::context(stories(), test::cpu(1), 64);
  LlamaContext& target = *target_ctx;
  for (const char* spec : {"layers:0", "layers:5", "layers:x", "quant:q5_1", "lookup:0", "lookup:17",
                           "foo:1", "layers"}) {
    auto r = make_draft_source(spec, target, {});
    ASSERT_FALSE(r.ok()) << spec;
    EXPECT_EQ(r.error().code, "bad_param") << spec;
  }
  auto missing = make_draft_source("gguf:/nonexistent/model.gguf", target, {});
  EXPECT_FALSE(missing.ok());
  for (const char* spec : {"layers:1", "layers:4", "lookup:1", "quant:q4_0"}) {
    auto r = make_draft_source(spec, target, {});
    ASSERT_TRUE(r.ok()) << spec << ": " << r.error().str();
    EXPECT_EQ(r.value()->spec(), spec);
  }
}

TEST(PromptLookup, ContinuesTheMostRecentLongestMatch) {
  const std::vector<int32_t> ctx = {1, 2, 3, 4, 9, 2, 3, 5, 6, 7, 2, 3};
  // Last bigram (2,3): most recent earlier occurrence at index 5 → continuation 5 6 7 2.
  EXPECT_EQ(lookup_ngram(ctx, 2, 4), (std::vector<int32_t>{5, 6, 7, 2}));
  // Trigram (7,2,3) never occurred before, so it falls back to the bigram.
  EXPECT_EQ(lookup_ngram(ctx, 3, 2), (std::vector<int32_t>{5, 6}));
  const std::vector<int32_t> tail = {4, 1, 2, 8, 1, 2};
  // Longest match first: (1,2) at index 1 → 8 1 2 (clipped at the context end).
  EXPECT_EQ(lookup_ngram(tail, 2, 5), (std::vector<int32_t>{8, 1, 2}));
  EXPECT_TRUE(lookup_ngram(std::vector<int32_t>{1, 2, 3}, 2, 4).empty());
  EXPECT_TRUE(lookup_ngram(std::vector<int32_t>{7}, 2, 4).empty());
  EXPECT_TRUE(lookup_ngram(ctx, 2, 0).empty());
}

TEST(QuantizedCopy, QuantizesEligibleWeightsAndStaysClose) {
  testing::TempDir tmp;
  const std::string path = (tmp.path() / "q8.gguf").string();
  ASSERT_TRUE(write_quantized_copy(stories(), GgmlType::Q8_0, path).ok());
  auto q = LlamaModel::load(path);
  ASSERT_TRUE(q.ok()) << q.error().str();
  const auto& W = q->weights();
  EXPECT_EQ(W.layers[0].wq.type, GgmlType::Q8_0);
  EXPECT_EQ(W.output.type, GgmlType::Q8_0);
  EXPECT_EQ(W.layers[0].w_down.type, GgmlType::F32);  // rows of 172: not a multiple of 32
  auto from = q->gguf().get_string("kakeya.draft.quantized_from");
  ASSERT_TRUE(from.ok());
  EXPECT_EQ(from.value(), stories().gguf().sha256());
  EXPECT_TRUE(check_same_vocab(stories().gguf(), q->gguf()).ok());

  const std::vector<int32_t> prompt = {1, 400, 261, 300, 270, 290};
  auto a_ctx = test::context(stories(), test::cpu(1), 64);
  LlamaContext& a = *a_ctx;
  auto b_ctx = test::context(q.value(), test::cpu(1), 64);
  LlamaContext& b = *b_ctx;
  auto la = a.eval(prompt);
  auto lb = b.eval(prompt);
  ASSERT_TRUE(la.ok() && lb.ok());
  const float d = max_abs_diff(la.value(), lb.value());
  EXPECT_GT(d, 0.0f);   // really quantized
  EXPECT_LT(d, 0.5f);   // but close

  EXPECT_EQ(write_quantized_copy(stories(), GgmlType::F16, path).error().code, "unsupported_type");
}

TEST(EvalLayers, PartialPassSharesKvAndIsDropped) {
  const std::vector<int32_t> prompt = {1, 400, 261, 300, 270, 290, 310};
  auto ctx_owner = test::context(stories(), test::cpu(1), 64);
  LlamaContext& ctx = *ctx_owner;
  auto ref_ctx = test::context(stories(), test::cpu(1), 64);
  LlamaContext& ref = *ref_ctx;
  ASSERT_TRUE(ctx.eval(std::span(prompt).first(5)).ok());
  // Two partial tokens through 2 of 5 layers.
  auto p1 = ctx.eval_layers(std::span(prompt).subspan(5, 1), 2);
  auto p2 = ctx.eval_layers(std::span(prompt).subspan(6, 1), 2);
  ASSERT_TRUE(p1.ok() && p2.ok()) << p1.error().str();
  EXPECT_EQ(ctx.n_past(), 5u);
  EXPECT_EQ(ctx.n_partial(), 2u);
  EXPECT_EQ(ctx.kv().layer(0).head_slots(0), 7u);
  EXPECT_EQ(ctx.kv().layer(1).head_slots(0), 7u);
  EXPECT_EQ(ctx.kv().layer(2).head_slots(0), 5u);
  // Mixing depths while partial tokens are pending is refused.
  EXPECT_EQ(ctx.eval_layers(std::span(prompt).first(1), 3).error().code, "bad_param");
  EXPECT_EQ(ctx.eval_layers(std::span(prompt).first(1), 0).error().code, "bad_param");

  // The partial K/V of layers 0..1 equal what a full pass writes there (same inputs, same kernels).
  auto full = ref.eval(prompt);
  ASSERT_TRUE(full.ok());
  for (size_t il = 0; il < 2; ++il) {
    for (size_t h = 0; h < ctx.kv().shape().n_head_kv; ++h) {
      std::vector<float> a, b;
      ctx.kv().layer(il).read_head(h, nullptr, &a, nullptr);
      ref.kv().layer(il).read_head(h, nullptr, &b, nullptr);
      const size_t hd = ctx.kv().shape().head_dim;
      for (size_t s = 5; s < 7; ++s)
        for (size_t j = 0; j < hd; ++j) EXPECT_NEAR(a[s * hd + j], b[s * hd + j], 1e-5) << il << " " << s;
    }
  }
  // Logits of a 2-layer pass differ from the full model's.
  EXPECT_GT(max_abs_diff(p2.value(), full.value()), 1e-3f);

  // The next eval drops the partial tokens: result equals a context that never saw them.
  auto after = ctx.eval(std::span(prompt).subspan(5, 2));
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(ctx.n_partial(), 0u);
  EXPECT_EQ(ctx.n_past(), 7u);
  EXPECT_LT(max_abs_diff(after.value(), full.value()), 1e-4f);
}

}  // namespace
}  // namespace kakeya::engine
