#include "engine/presets/synth.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <iterator>
#include <vector>

#include "engine/cpu/quant.h"
#include "engine/gguf.h"
#include "engine/gguf_writer.h"
#include "engine/llama.h"
#include "engine/tokenizer.h"
#include "tests/engine/backends.h"
#include "tests/harness/paths.h"

namespace kakeya::engine {
namespace {

std::vector<char> slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

SynthOptions tiny(GgmlType type, uint64_t seed, int threads) {
  SynthOptions o;
  o.shape = SynthShape{"custom", 64, 96, 2, 4, 2, 300, 128};
  o.type = type;
  o.seed = seed;
  o.n_threads = threads;
  return o;
}

TEST(Synth, TinyCustomModelLoadsAndRuns) {
  testing::TempDir dir;
  for (GgmlType type : {GgmlType::F32, GgmlType::F16, GgmlType::BF16, GgmlType::Q8_0, GgmlType::Q4_0}) {
    const auto path = (dir.path() / (std::string("m-") + ggml_type_name(type) + ".gguf")).string();
    ASSERT_TRUE(write_synth_model(tiny(type, 7, 2), path).ok()) << ggml_type_name(type);
    auto model = LlamaModel::load(path);
    ASSERT_TRUE(model.ok()) << model.error().str();
    const LlamaHparams& hp = model->hparams();
    EXPECT_EQ(hp.n_embd, 64);
    EXPECT_EQ(hp.n_ff, 96);
    EXPECT_EQ(hp.n_layer, 2);
    EXPECT_EQ(hp.n_head_kv, 2);
    EXPECT_EQ(hp.n_vocab, 300);
    EXPECT_EQ(hp.n_ctx_train, 128);
    EXPECT_TRUE(model->synthetic());
    EXPECT_EQ(model->weights().layers[1].w_down.type, type);
    EXPECT_EQ(model->gguf().find_tensor("blk.0.attn_norm.weight")->type, GgmlType::F32);

    // Weights are N(0, 0.02²): check the sample statistics of the largest matrix.
    const WeightMatrix& e = model->weights().token_embd;
    std::vector<float> row(static_cast<size_t>(e.n_in));
    double sum = 0, sumsq = 0;
    for (int64_t r = 0; r < e.n_out; ++r) {
      dequantize_row(e.type, e.row(r), row.data(), e.n_in);
      for (float v : row) sum += v, sumsq += static_cast<double>(v) * v;
    }
    const double n = static_cast<double>(e.n_in * e.n_out);
    EXPECT_NEAR(sum / n, 0.0, 0.002);
    EXPECT_NEAR(std::sqrt(sumsq / n), 0.02, 0.002);
    const WeightMatrix& norm_w = model->weights().layers[0].attn_norm;
    std::vector<float> norm(static_cast<size_t>(norm_w.n_in));
    dequantize_row(norm_w.type, norm_w.data, norm.data(), norm_w.n_in);
    double mean_norm = 0;
    for (float v : norm) mean_norm += v;
    EXPECT_NEAR(mean_norm / static_cast<double>(norm.size()), 1.0, 0.05);

    auto tok = Tokenizer::from_gguf(model->gguf());
    ASSERT_TRUE(tok.ok()) << tok.error().str();
    EXPECT_EQ(tok->n_vocab(), 300);
    EXPECT_EQ(tok->decode(tok->encode("hi!", false)), " hi!");

    auto ctx_owner = test::context(model.value(), test::cpu(2), 0, 16);
    LlamaContext& ctx = *ctx_owner;
    const auto ids = tok->encode("hello synthetic world", true);
    auto logits = ctx.eval(ids, true);
    ASSERT_TRUE(logits.ok()) << logits.error().str();
    ASSERT_EQ(logits->size(), ids.size() * 300);
    for (float v : logits.value()) ASSERT_TRUE(std::isfinite(v));
  }
}

TEST(Synth, DeterministicForAnyThreadCountAndSeedSensitive) {
  testing::TempDir dir;
  const auto a = dir.path() / "a.gguf", b = dir.path() / "b.gguf", c = dir.path() / "c.gguf";
  ASSERT_TRUE(write_synth_model(tiny(GgmlType::Q8_0, 11, 1), a.string()).ok());
  ASSERT_TRUE(write_synth_model(tiny(GgmlType::Q8_0, 11, 3), b.string()).ok());
  ASSERT_TRUE(write_synth_model(tiny(GgmlType::Q8_0, 12, 1), c.string()).ok());
  EXPECT_EQ(slurp(a), slurp(b));
  EXPECT_NE(slurp(a), slurp(c));
}

TEST(Synth, CopiesStoriesVocabularyWhenSizesMatch) {
  testing::TempDir dir;
  SynthOptions o = tiny(GgmlType::F16, 1, 2);
  o.shape.n_vocab = 512;
  o.vocab_source = (testing::models_dir() / "stories260K-f32.gguf").string();
  const auto path = (dir.path() / "v.gguf").string();
  ASSERT_TRUE(write_synth_model(o, path).ok());
  auto f = GgufFile::open(path);
  ASSERT_TRUE(f.ok());
  auto src = GgufFile::open(o.vocab_source);
  ASSERT_TRUE(src.ok());
  EXPECT_EQ(f->get_string_array("tokenizer.ggml.tokens").value(),
            src->get_string_array("tokenizer.ggml.tokens").value());
  EXPECT_EQ(f->get_string("kakeya.synth.vocab").value(), "stories260K-f32.gguf");
  auto tok = Tokenizer::from_gguf(f.value());
  ASSERT_TRUE(tok.ok());
  // The stories prompt tokenizes exactly as in the reference JSONs.
  const std::vector<int32_t> want = {1, 403, 407, 261, 378, 432, 383, 286, 261, 376, 298, 315, 421, 395, 317, 426};
  EXPECT_EQ(tok->encode("Once upon a time, there was a little girl named Lily.", true), want);
}

TEST(Synth, RejectsBadShapesAndTypes) {
  testing::TempDir dir;
  const auto path = (dir.path() / "x.gguf").string();
  SynthOptions o = tiny(GgmlType::Q4_0, 1, 1);
  o.shape.n_ff = 100;  // not a multiple of 32
  EXPECT_EQ(write_synth_model(o, path).error().code, "bad_shape");
  o = tiny(GgmlType::Q4_K, 1, 1);
  EXPECT_EQ(write_synth_model(o, path).error().code, "unsupported_type");
  o = tiny(GgmlType::F32, 1, 1);
  o.shape.n_head = 3;
  EXPECT_EQ(write_synth_model(o, path).error().code, "bad_shape");
  EXPECT_EQ(synth_shape("gpt-5").error().code, "bad_shape");
  EXPECT_EQ(synth_shape("llama-7b")->n_ff, 11008);
  EXPECT_EQ(synth_shape("tinyllama-1.1b")->n_head_kv, 4);
}

TEST(Synth, ReferenceQuantizersRoundTripWithinHalfAStep) {
  std::vector<float> x(64);
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.37f * static_cast<float>(i)) * (1.0f + i % 5);
  for (GgmlType type : {GgmlType::Q8_0, GgmlType::Q4_0}) {
    std::vector<uint8_t> q(ggml_row_bytes(type, 64));
    ASSERT_TRUE(convert_row(type, x.data(), q.data(), 64).ok());
    std::vector<float> y(64);
    dequantize_row(type, q.data(), y.data(), 64);
    for (int b = 0; b < 2; ++b) {
      float amax = 0;
      for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[b * 32 + j]));
      // Q8_0: symmetric, error <= half a step (amax/127). Q4_0: levels -8..7 times amax/8, so the
      // side opposite the largest value clips at 7/8·amax: error <= one step (amax/8).
      const float bound = type == GgmlType::Q8_0 ? 0.5f * amax / 127 : amax / 8;
      for (int j = 0; j < 32; ++j)
        EXPECT_LE(std::fabs(y[b * 32 + j] - x[b * 32 + j]), bound + 1e-3f * amax)
            << ggml_type_name(type) << " element " << b * 32 + j;
    }
  }
}

TEST(Synth, ModelRefusesOtherArchitecturesByName) {
  testing::TempDir dir;
  GgufWriter w;
  w.add_kv("general.architecture", std::string("gpt2"));
  w.add_tensor("token_embd.weight", GgmlType::F32, {4, 4}, [](uint8_t* dst, size_t n) -> Status {
    std::fill(dst, dst + n, uint8_t{0});
    return ok_status();
  });
  const auto path = (dir.path() / "gpt2.gguf").string();
  ASSERT_TRUE(w.write(path).ok());
  auto m = LlamaModel::load(path);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error().code, "unsupported_architecture");
  EXPECT_NE(m.error().message.find("gpt2"), std::string::npos);
}

}  // namespace
}  // namespace kakeya::engine
