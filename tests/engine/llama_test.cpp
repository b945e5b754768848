// The Llama forward pass against llama.cpp's reference logits and the bundled goldens.
// Reference data and tolerances: tests/data/reference/README.md ("Observed tolerances").
#include "engine/llama.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "engine/cpu/cpu_backend.h"
#include "tests/engine/backends.h"
#include "tests/harness/paths.h"

namespace kakeya::engine {
namespace {

using nlohmann::json;

json load_json(const std::filesystem::path& p) {
  std::ifstream in(p);
  EXPECT_TRUE(in.good()) << p;
  return json::parse(in);
}

const LlamaModel& load_cached(const std::string& path) {
  static std::map<std::string, std::unique_ptr<LlamaModel>> cache;
  auto it = cache.find(path);
  if (it == cache.end()) {
    auto m = LlamaModel::load(path);
    if (!m.ok()) ADD_FAILURE() << m.error().str();
    it = cache.emplace(path, std::make_unique<LlamaModel>(std::move(m).value())).first;
  }
  return *it->second;
}

int32_t argmax(std::span<const float> v) {
  return static_cast<int32_t>(std::max_element(v.begin(), v.end()) - v.begin());
}

// Greedy continuation: `n` tokens after `prompt`, each from a one-token eval.
std::vector<int32_t> greedy(LlamaContext& ctx, const std::vector<int32_t>& prompt, size_t n) {
  auto r = ctx.eval(prompt);
  EXPECT_TRUE(r.ok()) << r.error().str();
  std::vector<int32_t> out;
  std::vector<float> logits = r.value();
  for (size_t i = 0; i < n; ++i) {
    const int32_t id = argmax(logits);
    out.push_back(id);
    if (i + 1 == n) break;
    const int32_t tok[1] = {id};
    auto s = ctx.eval(tok);
    EXPECT_TRUE(s.ok()) << s.error().str();
    logits = std::move(s).value();
  }
  return out;
}

float max_abs_diff(std::span<const float> a, std::span<const float> b) {
  EXPECT_EQ(a.size(), b.size());
  float m = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) m = std::max(m, std::fabs(a[i] - b[i]));
  return m;
}

std::vector<int32_t> ids(const json& j) { return j.get<std::vector<int32_t>>(); }

// The 200 ids under "Expected token ids (200):" in models/stories260K.md.
std::vector<int32_t> stories_golden_ids() {
  std::ifstream in(testing::models_dir() / "stories260K.md");
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string md = ss.str();
  const size_t at = md.find("Expected token ids (200):");
  EXPECT_NE(at, std::string::npos);
  const size_t open = md.find('[', at);
  const size_t close = md.find(']', open);
  return json::parse(md.substr(open, close - open + 1)).get<std::vector<int32_t>>();
}

TEST(Llama, Stories260kGreedyFromBosMatchesGolden) {
  const auto& model = load_cached(test::stories_path());
  const LlamaHparams& hp = model.hparams();
  EXPECT_EQ(hp.n_embd, 64);
  EXPECT_EQ(hp.n_layer, 5);
  EXPECT_EQ(hp.n_head_kv, 4);
  EXPECT_EQ(hp.rope.freq_base, 10000.0f);
  EXPECT_EQ(hp.rope.layout, RopeLayout::kNormal);
  EXPECT_EQ(hp.rope.freq_scale, 1.0f);
  const auto expected = stories_golden_ids();
  ASSERT_EQ(expected.size(), 200u);
  for (int threads : {1, 2}) {
    auto ctx = test::context(model, test::cpu(threads));
    EXPECT_EQ(greedy(*ctx, {1}, 200), expected) << "threads " << threads;
    EXPECT_EQ(ctx->n_past(), 200u);
  }
}

TEST(Llama, Stories260kReferencePromptGreedyAndLogits) {
  const json ref = load_json(testing::data_dir() / "reference" / "stories260K-f32.ref.json");
  const auto& model = load_cached(test::stories_path());
  const auto prompt = ids(ref["prompt_ids"]);
  auto c = test::context(model, test::cpu(2), 512);
  LlamaContext& ctx = *c;
  auto all = ctx.eval(prompt, /*all_logits=*/true);
  ASSERT_TRUE(all.ok()) << all.error().str();
  const auto rl = ref["logits"];
  for (size_t i = 0; i < prompt.size(); ++i) {
    const auto row = rl[i].get<std::vector<float>>();
    EXPECT_LT(max_abs_diff(std::span(all.value()).subspan(i * 512, 512), row), 1e-4f)
        << "position " << i;
  }
  ctx.truncate(0);
  EXPECT_EQ(greedy(ctx, prompt, 24), ids(ref["greedy_ids"]));
}

struct SynthCase {
  const char* type;
  float decode_tol;   // token-by-token (decode path: activations converted like ggml)
  float batched_tol;  // one batched sgemm eval (f32 activations)
  bool shared = false;  // the file is in ../shared/reference ("More tensor types"), not bundled
};

class SynthReference : public ::testing::TestWithParam<SynthCase> {};

// Logits of every prompt position, via the decode path (one token per eval).
std::vector<float> logits_token_by_token(LlamaContext& ctx, const std::vector<int32_t>& prompt) {
  std::vector<float> all;
  for (int32_t t : prompt) {
    const int32_t tok[1] = {t};
    auto r = ctx.eval(tok);
    EXPECT_TRUE(r.ok());
    all.insert(all.end(), r.value().begin(), r.value().end());
  }
  return all;
}

void expect_rows_close(const std::vector<float>& got, const json& ref_logits, float tol,
                       const std::string& what) {
  const size_t n_vocab = ref_logits[0].size();
  ASSERT_EQ(got.size(), ref_logits.size() * n_vocab) << what;
  float worst = 0;
  for (size_t i = 0; i < ref_logits.size(); ++i) {
    const auto row = ref_logits[i].get<std::vector<float>>();
    const float d = max_abs_diff(std::span(got).subspan(i * n_vocab, n_vocab), row);
    worst = std::max(worst, d);
    EXPECT_LT(d, tol) << what << ": position " << i;
  }
  ::testing::Test::RecordProperty(what + "_max_abs_diff", std::to_string(worst));
  std::printf("  %s: max |dlogit| %.3g (tol %.3g)\n", what.c_str(), worst, tol);
}

TEST_P(SynthReference, LogitsAndGreedyMatchLlamaCpp) {
  const SynthCase c = GetParam();
  const std::string name = std::string("synth-llama-256-") + c.type;
  if (c.shared) {
    if (const std::string why = testing::shared_dir_missing("reference"); !why.empty()) GTEST_SKIP() << why;
  }
  const auto dir = (c.shared ? testing::shared_dir() : testing::data_dir()) / "reference";
  const json ref = load_json(dir / (name + ".ref.json"));
  const auto& model = load_cached((dir / (name + ".gguf")).string());
  ASSERT_EQ(model.hparams().n_ff, 512);
  ASSERT_EQ(model.hparams().n_head_kv, 2);
  const auto prompt = ids(ref["prompt_ids"]);

  // 1. Decode path, token by token: activations converted like ggml → tight tolerance.
  auto ctx = test::context(model, test::cpu(2), 512);
  expect_rows_close(logits_token_by_token(*ctx, prompt), ref["logits"], c.decode_tol, "decode");

  // 2. Batched, quantized-activation matmuls: same kernels as decode.
  auto qc = test::context(model, test::cpu(2, "quantized"), 512);
  LlamaContext& qctx = *qc;
  auto qb = qctx.eval(prompt, true);
  ASSERT_TRUE(qb.ok());
  expect_rows_close(qb.value(), ref["logits"], c.decode_tol, "batched_quantized_act");

  // 3. Batched sgemm on dequantized weights (f32 activations): documented looser tolerance.
  auto bctx = test::context(model, test::cpu(2, "sgemm"), 512);
  auto b = bctx->eval(prompt, true);
  ASSERT_TRUE(b.ok());
  expect_rows_close(b.value(), ref["logits"], c.batched_tol, "batched_sgemm");

  // 4. Greedy ids up to the first step whose margin is below the tolerance: the prompt in one
  //    batch with quantized activations (as llama.cpp did), then one-token decode steps.
  const auto margins = ref["greedy_margin"].get<std::vector<float>>();
  const auto want = ids(ref["greedy_ids"]);
  size_t n_check = 0;
  while (n_check < margins.size() && margins[n_check] >= 2 * c.decode_tol) ++n_check;
  ASSERT_GT(n_check, 0u);
  qctx.truncate(0);
  const auto got = greedy(qctx, prompt, n_check);
  EXPECT_EQ(got, std::vector<int32_t>(want.begin(), want.begin() + static_cast<long>(n_check)));
}

INSTANTIATE_TEST_SUITE_P(AllTypes, SynthReference,
                         ::testing::Values(SynthCase{"f32", 1e-4f, 1e-4f},
                                           SynthCase{"f16", 2e-3f, 5e-3f},
                                           SynthCase{"bf16", 1e-2f, 2e-2f},
                                           SynthCase{"q8_0", 1e-3f, 5e-2f},
                                           SynthCase{"q6_k", 1e-3f, 5e-2f},
                                           SynthCase{"q4_k", 1e-3f, 5e-2f},
                                           SynthCase{"q4_0", 1e-3f, 5e-2f},
                                           // "More tensor types": kernels that round like ggml's x86 code
                                           SynthCase{"q4_1", 1e-5f, 5e-2f, true},
                                           SynthCase{"q5_0", 1e-5f, 5e-2f, true},
                                           SynthCase{"q5_1", 1e-5f, 5e-2f, true},
                                           SynthCase{"q2_k", 1e-5f, 5e-2f, true},
                                           SynthCase{"q3_k", 1e-5f, 5e-2f, true},
                                           SynthCase{"q5_k", 1e-5f, 5e-2f, true},
                                           SynthCase{"iq4_nl", 1e-5f, 5e-2f, true},
                                           SynthCase{"iq4_xs", 1e-5f, 5e-2f, true}),
                         [](const ::testing::TestParamInfo<SynthCase>& p) { return std::string(p.param.type); });

// eval(prompt) without all_logits: the last layer computes queries, attention, wo and the FFN
// for the prompt's last row only, and a chunk before the last for none (llama.cpp skips the FFN of
// unused rows, inp_out_ids), while K and V go to the cache for every row. The logits are those of
// the token-by-token pass, and so is the next token's (it attends to the last layer's K and V of
// every prompt row: a chunk that skipped them would fail here).
TEST(Llama, LastRowPrefillMatchesTokenByTokenAndKeepsEveryRowsKv) {
  const auto& model = load_cached(test::stories_path());
  std::vector<int32_t> prompt = {1};
  for (int i = 0; i < 40; ++i) prompt.push_back(260 + (i * 37) % 250);
  const int32_t next[1] = {300};
  auto one = test::context(model, test::cpu(1), 512);
  const auto seq = logits_token_by_token(*one, prompt);
  const size_t n_vocab = static_cast<size_t>(model.hparams().n_vocab);
  const std::span<const float> want_last = std::span(seq).subspan(seq.size() - n_vocab);
  auto want_next = one->eval(next);
  ASSERT_TRUE(want_next.ok());
  for (const char* mode : {"sgemm", "auto", "quantized"}) {
    for (size_t n_batch : {size_t{512}, size_t{7}}) {
      auto ctx = test::context(model, test::cpu(2, mode), 512, n_batch);
      auto last = ctx->eval(prompt);
      ASSERT_TRUE(last.ok());
      EXPECT_LT(max_abs_diff(last.value(), want_last), 1e-4f) << mode << ", n_batch " << n_batch;
      EXPECT_EQ(ctx->n_past(), prompt.size());
      auto got_next = ctx->eval(next);
      ASSERT_TRUE(got_next.ok());
      EXPECT_LT(max_abs_diff(got_next.value(), want_next.value()), 1e-4f) << mode << ", n_batch " << n_batch;
    }
  }
}

TEST(Llama, BatchedPrefillEqualsTokenByTokenAndChunking) {
  const auto& model = load_cached(test::stories_path());
  std::vector<int32_t> prompt = {1};
  for (int i = 0; i < 40; ++i) prompt.push_back(260 + (i * 37) % 250);
  auto one = test::context(model, test::cpu(1), 512);
  const auto seq = logits_token_by_token(*one, prompt);
  for (const char* mode : {"sgemm", "auto"}) {
    for (size_t n_batch : {size_t{512}, size_t{7}}) {
      auto ctx = test::context(model, test::cpu(2, mode), 512, n_batch);
      auto b = ctx->eval(prompt, true);
      ASSERT_TRUE(b.ok());
      EXPECT_LT(max_abs_diff(b.value(), seq), 1e-4f) << mode << ", n_batch " << n_batch;
      EXPECT_EQ(ctx->n_past(), prompt.size());
    }
  }
}

// Verify blocks (MatmulMode::kQuantizedActivations) reuse each L2-sized tile of weight rows for
// every token of the block; the rows are computed by the same kernels as one-token decode, so the
// logits must be bit-identical to token-by-token decode. The 256-wide synthetic models have
// matrices of several tiles (e.g. 512 output rows of 1 KiB in F32).
TEST(Llama, QuantizedActivationBatchIsBitIdenticalToDecode) {
  std::vector<std::filesystem::path> files;
  for (const char* type : {"f32", "f16", "q8_0", "q4_0", "q4_k"})
    files.push_back(testing::data_dir() / "reference" / (std::string("synth-llama-256-") + type + ".gguf"));
  if (testing::shared_dir_missing("reference").empty()) {
    for (const char* type : {"q4_1", "q5_0", "q5_1", "q2_k", "q3_k", "q5_k", "iq4_nl", "iq4_xs"})
      files.push_back(testing::shared_dir() / "reference" / (std::string("synth-llama-256-") + type + ".gguf"));
  } else {
    std::printf("  the eight shared files skipped: %s\n", testing::shared_dir_missing("reference").c_str());
  }
  for (const auto& path : files) {
    const std::string type = path.stem().string();
    const auto& model = load_cached(path.string());
    const std::vector<int32_t> prompt = {1, 17, 300, 42, 99, 511, 7, 250, 3};
    auto one = test::context(model, test::cpu(2), 64);
    const auto seq = logits_token_by_token(*one, prompt);
    auto batch = test::context(model, test::cpu(2, "quantized"), 64);
    auto b = batch->eval(prompt, true);
    ASSERT_TRUE(b.ok()) << type;
    EXPECT_EQ(max_abs_diff(b.value(), seq), 0.0f) << type;
  }
}

// The other matmul types are copied as stored under weight_layout "packed" (cpu_backend.h: into
// huge pages, the file's pages released): the kernels read the same bytes, so the logits are bit
// for bit those of the weights read in place, and the copies are the backend's counted memory.
TEST(Llama, CopiedWeightsGiveTheLogitsOfWeightsReadInPlace) {
  for (const char* type : {"f16", "bf16", "f32", "q4_k", "q6_k"}) {
    const auto path = testing::data_dir() / "reference" / (std::string("synth-llama-256-") + type + ".gguf");
    const auto& model = load_cached(path.string());
    const size_t n_layer = static_cast<size_t>(model.hparams().n_layer);
    const std::vector<int32_t> prompt = {1, 17, 300, 42, 99, 511, 7, 250, 3};
    auto a = test::context(model, test::cpu(2, "auto", "packed"), 64);
    auto b = test::context(model, test::cpu(2, "auto", "row-major"), 64);
    const nlohmann::json& layout = a->weights().layout;
    EXPECT_EQ(layout["packed_matrices"], 0u) << type;
    EXPECT_EQ(layout["copied_matrices"], 7 * n_layer + 1) << type;  // every matmul and the output head
    const auto* down = static_cast<const CpuBuffer*>(a->weights().layers[0].w_down.buffer);
    EXPECT_TRUE(down->owns_copy()) << type;
    EXPECT_EQ(down->bytes(), a->weights().layers[0].w_down.bytes()) << type;
    EXPECT_GE(layout["bytes"].get<size_t>(), layout["copied_bytes"].get<size_t>()) << type;
    EXPECT_FALSE(static_cast<const CpuBuffer*>(a->weights().token_embd.buffer)->owns_copy()) << type;
    EXPECT_EQ(b->weights().layout["copied_matrices"], 0u) << type;
    EXPECT_FALSE(static_cast<const CpuBuffer*>(b->weights().layers[0].w_down.buffer)->owns_copy()) << type;
    EXPECT_EQ(max_abs_diff(logits_token_by_token(*a, prompt), logits_token_by_token(*b, prompt)), 0.0f) << type;
    auto pa = a->eval(prompt, true);
    auto pb = b->eval(prompt, true);
    ASSERT_TRUE(pa.ok() && pb.ok()) << type;
    EXPECT_EQ(max_abs_diff(pa.value(), pb.value()), 0.0f) << type << " prefill";
  }
}

// Q4_0/Q8_0 matmul weights packed at upload by the CPU backend (cpu_backend.h, weight_layout); the
// packed kernels compute every row like the row-major ones, so the logits agree: bit for bit for
// Q4_0 (the same fma chain per row in every kernel set) and to float rounding for Q8_0 (the AVX2
// row-major kernel sums in lanes). Both the decode path and the sgemm prefill (dequantized from
// the packed rows) are compared.
TEST(Llama, PackedWeightsGiveTheLogitsOfRowMajorWeights) {
  for (const char* type : {"q4_0", "q8_0"}) {
    const auto path = testing::data_dir() / "reference" / (std::string("synth-llama-256-") + type + ".gguf");
    const auto& model = load_cached(path.string());
    const size_t n_layer = static_cast<size_t>(model.hparams().n_layer);
    const std::vector<int32_t> prompt = {1, 17, 300, 42, 99, 511, 7, 250, 3};
    for (const char* mode : {"auto", "sgemm"}) {
      auto a = test::context(model, test::cpu(2, mode, "packed"), 64);
      auto b = test::context(model, test::cpu(2, mode, "row-major"), 64);
      const nlohmann::json& la_layout = a->weights().layout;
      EXPECT_EQ(la_layout["layout"], "packed");
      EXPECT_EQ(la_layout["packed_matrices"], 7 * n_layer + 1) << type;  // every matmul and the output head
      EXPECT_NE(static_cast<const CpuBuffer*>(a->weights().layers[0].w_down.buffer)->packed(), nullptr);
      EXPECT_EQ(static_cast<const CpuBuffer*>(a->weights().token_embd.buffer)->packed(), nullptr);
      EXPECT_EQ(b->weights().layout["packed_matrices"], 0u);
      EXPECT_EQ(static_cast<const CpuBuffer*>(b->weights().layers[0].wq.buffer)->packed(), nullptr);
      if (std::string(mode) == "auto") {
        const auto la = logits_token_by_token(*a, prompt);
        const auto lb = logits_token_by_token(*b, prompt);
        if (std::string(type) == "q4_0") {
          EXPECT_EQ(max_abs_diff(la, lb), 0.0f) << type;
        } else {
          EXPECT_LT(max_abs_diff(la, lb), 1e-3f) << type;
        }
        continue;
      }
      auto pa = a->eval(prompt, true);
      auto pb = b->eval(prompt, true);
      ASSERT_TRUE(pa.ok() && pb.ok());
      EXPECT_EQ(max_abs_diff(pa.value(), pb.value()), 0.0f) << type << " sgemm prefill";
    }
  }
}

// MatmulMode::kAuto (the default) runs batches below kMinBatchedTokens on the decode-exact path
// (int8 GEMM kernels that round like decode, the decode kernels otherwise, attention token by
// token) and longer ones on the GEMM path (F16's f32 GEMM, batched attention through gemm_f32).
// Below the threshold auto is bit-identical to "quantized"; from it, Q4_0's matmuls stay exact and
// only attention's f32 order differs, while F16's GEMM rounds differently (and must have run).
TEST(Llama, AutoMatmulModeIsExactBelowThirtyTwoTokens) {
  std::vector<int32_t> prompt = {1};
  for (int i = 0; i < 40; ++i) prompt.push_back(3 + (i * 53) % 500);
  for (const char* type : {"q4_0", "f16"}) {
    const auto path = testing::data_dir() / "reference" / (std::string("synth-llama-256-") + type + ".gguf");
    const auto& model = load_cached(path.string());
    const bool f16 = std::string(type) == "f16";
    for (const char* layout : {"row-major", "packed"}) {
      for (size_t n : {size_t{9}, kMinBatchedTokens - 1, kMinBatchedTokens, size_t{41}}) {
        const std::span<const int32_t> p(prompt.data(), n);
        auto run = [&](const char* mode) {
          auto& backend = static_cast<CpuBackend&>(test::cpu(2, mode, layout));
          auto ctx = test::context(model, backend, 64);
          auto r = ctx->eval(p, true);
          EXPECT_TRUE(r.ok());
          return r.ok() ? r.value() : std::vector<float>{};
        };
        SCOPED_TRACE(std::string(type) + ", " + layout + ", " + std::to_string(n) + " tokens");
        auto& autob = static_cast<CpuBackend&>(test::cpu(2, "auto", layout));
        EXPECT_EQ(autob.batch_path(n), n >= kMinBatchedTokens ? BatchPath::kGemm : BatchPath::kExact);
        EXPECT_EQ(static_cast<CpuBackend&>(test::cpu(2, "quantized", layout)).batch_path(n), BatchPath::kExact);
        EXPECT_EQ(static_cast<CpuBackend&>(test::cpu(2, "sgemm", layout)).batch_path(n), BatchPath::kSgemm);
        const auto autom = run("auto");
        const auto quant = run("quantized");
        const auto sgemm = run("sgemm");
        if (n < kMinBatchedTokens) {
          EXPECT_EQ(max_abs_diff(autom, quant), 0.0f);
        } else {
          EXPECT_LT(max_abs_diff(autom, quant), f16 ? 2e-3f : 1e-4f);
          if (f16) {
            EXPECT_GT(max_abs_diff(autom, quant), 0.0f) << "the f32 GEMM rounds differently from decode";
          }
        }
        if (!f16) {
          EXPECT_GT(max_abs_diff(sgemm, quant), 1e-4f) << "sgemm does not quantize activations";
        }
      }
    }
  }
}

TEST(Llama, TruncateThenReevalReproducesLogits) {
  const auto& model = load_cached(test::stories_path());
  const std::vector<int32_t> prefix = {1, 403, 407, 261, 378};
  const std::vector<int32_t> a = {432, 383, 286};
  const std::vector<int32_t> b = {300, 301, 302, 303};
  auto c = test::context(model, test::cpu(2), 64);
  LlamaContext& ctx = *c;
  ASSERT_TRUE(ctx.eval(prefix).ok());
  auto first = ctx.eval(a, true);
  ASSERT_TRUE(first.ok());
  ASSERT_TRUE(ctx.eval(b).ok());  // a rejected "draft"
  EXPECT_EQ(ctx.n_past(), 12u);
  ctx.truncate(prefix.size());
  EXPECT_EQ(ctx.n_past(), prefix.size());
  auto again = ctx.eval(a, true);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(max_abs_diff(first.value(), again.value()), 0.0f);
}

TEST(Llama, ErrorsAreResults) {
  const auto& model = load_cached(test::stories_path());
  auto c = test::context(model, test::cpu(1), 8);
  LlamaContext& ctx = *c;
  const std::vector<int32_t> bad = {1, 512};
  auto r = ctx.eval(bad);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, "bad_token");
  EXPECT_NE(r.error().message.find("512"), std::string::npos);
  const std::vector<int32_t> neg = {-1};
  EXPECT_EQ(ctx.eval(neg).error().code, "bad_token");
  EXPECT_EQ(ctx.eval(std::span<const int32_t>()).error().code, "empty_input");
  const std::vector<int32_t> six = {1, 2, 3, 4, 5, 6};
  ASSERT_TRUE(ctx.eval(six).ok());
  auto over = ctx.eval(std::vector<int32_t>{7, 8, 9});
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.error().code, "context_overflow");
  EXPECT_EQ(ctx.n_past(), 6u) << "nothing appended on error";
  EXPECT_TRUE(ctx.eval(std::vector<int32_t>{7, 8}).ok());

  auto missing = LlamaModel::load("/nonexistent/model.gguf");
  EXPECT_FALSE(missing.ok());
}

// niah-tiny has n_ctx 3072: a ~3000-token prompt exercises positions near the context length.
TEST(Llama, NiahTinyLongContextGolden) {
  const json g = load_json(testing::models_dir() / "niah-tiny.goldens.json");
  const json* golden = nullptr;
  for (const auto& e : g["goldens"])
    if (e["name"] == "niah-design-seed0-lines60-sample0-full") golden = &e;
  ASSERT_NE(golden, nullptr);
  const auto& model = load_cached((testing::models_dir() / "niah-tiny-f32.gguf").string());
  EXPECT_EQ(model.hparams().n_ctx_train, 3072);
  const auto prompt = ids((*golden)["prompt_token_ids"]);
  ASSERT_GT(prompt.size(), 2900u);
  auto ctx = test::context(model, test::cpu(2));
  EXPECT_EQ(ctx->n_ctx(), 3072u);
  const auto want = ids((*golden)["expected_token_ids"]);
  EXPECT_EQ(greedy(*ctx, prompt, want.size()), want);
}

}  // namespace
}  // namespace kakeya::engine
