#include "engine/presets/synth.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "engine/cpu/quant.h"
#include "engine/gguf.h"
#include "engine/gguf_writer.h"
#include "engine/llama.h"
#include "engine/presets/ar_bench.h"
#include "engine/tokenizer.h"
#include "tests/engine/backends.h"
#include "tests/harness/paths.h"

namespace kakeya::engine {
namespace {

// The smallest shape whose rows hold whole blocks of `type` (64/96 wide for 1- and 32-element
// blocks, 256/256 for the 256-element K-quants and IQ4_XS).
SynthOptions tiny(GgmlType type, uint64_t seed, int threads) {
  SynthOptions o;
  o.shape = ggml_block_size(type) == 256 ? SynthShape{"custom", 256, 256, 2, 4, 2, 300, 128}
                                         : SynthShape{"custom", 64, 96, 2, 4, 2, 300, 128};
  o.type = type;
  o.seed = seed;
  o.n_threads = threads;
  return o;
}

TEST(Synth, TinyCustomModelLoadsAndRuns) {
  testing::TempDir dir;
  for (GgmlType type : ggml_storage_types()) {
    SCOPED_TRACE(ggml_type_name(type));
    const auto path = (dir.path() / (std::string("m-") + ggml_type_name(type) + ".gguf")).string();
    const SynthOptions o = tiny(type, 7, 2);
    ASSERT_TRUE(write_synth_model(o, path).ok()) << ggml_type_name(type);
    auto model = LlamaModel::load(path);
    ASSERT_TRUE(model.ok()) << model.error().str();
    const LlamaHparams& hp = model->hparams();
    EXPECT_EQ(hp.n_embd, o.shape.n_embd);
    EXPECT_EQ(hp.n_ff, o.shape.n_ff);
    EXPECT_EQ(hp.n_layer, 2);
    EXPECT_EQ(hp.n_head_kv, 2);
    EXPECT_EQ(hp.n_vocab, 300);
    EXPECT_EQ(hp.n_ctx_train, 128);
    EXPECT_TRUE(model->synthetic());
    EXPECT_EQ(model->weights().layers[1].w_down.type, type);
    EXPECT_EQ(model->gguf().get_int("general.file_type").value(),
              static_cast<int64_t>(llama_file_type_of_pure(type)));
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
    // Q2_K and Q3_K lose a few percent of the RMS to quantization.
    EXPECT_NEAR(std::sqrt(sumsq / n), 0.02, type == GgmlType::Q2_K || type == GgmlType::Q3_K ? 0.004 : 0.002);
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
  const std::string bytes_a = testing::file_text(a);
  ASSERT_FALSE(bytes_a.empty());
  EXPECT_EQ(bytes_a, testing::file_text(b));
  EXPECT_NE(bytes_a, testing::file_text(c));
}

TEST(Synth, CopiesStoriesVocabularyWhenSizesMatch) {
  testing::TempDir dir;
  SynthOptions o = tiny(GgmlType::F16, 1, 2);
  o.shape.n_vocab = 512;
  o.vocab_source = test::stories_path();
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
  o.shape.n_embd = 64;  // not a multiple of 256
  auto short_rows = write_synth_model(o, path);
  EXPECT_EQ(short_rows.error().code, "bad_shape");
  EXPECT_NE(short_rows.error().message.find("multiples of 256 for q4_K"), std::string::npos) << short_rows.error().message;
  o = tiny(GgmlType::Q8_K, 1, 1);
  EXPECT_EQ(write_synth_model(o, path).error().code, "unsupported_type");
  o = tiny(GgmlType::F32, 1, 1);
  o.mix = LlamaFileType::Q4_K_M;
  o.shape.n_ff = 100;  // a mix needs rows of whole 32-blocks for its fallbacks
  EXPECT_EQ(write_synth_model(o, path).error().code, "bad_shape");
  o = tiny(GgmlType::F32, 1, 1);
  o.shape.n_head = 3;
  EXPECT_EQ(write_synth_model(o, path).error().code, "bad_shape");
  EXPECT_EQ(synth_shape("gpt-5").error().code, "bad_shape");
  EXPECT_EQ(synth_shape("llama-7b")->n_ff, 11008);
  EXPECT_EQ(synth_shape("tinyllama-1.1b")->n_head_kv, 4);
}

// A synth file with a llama.cpp mix: per-tensor types as llama-quantize chooses them
// (engine/presets/synth_mix.h), checked tensor by tensor for an 8-layer model, where
// use_more_bits picks layers 0, 3, 6 and 7.
TEST(Synth, MixesTypesPerTensorLikeLlamaQuantize) {
  testing::TempDir dir;
  struct Expect {
    LlamaFileType mix;
    GgmlType base, attn_v_more, attn_v_rest, down_more, down_rest, attn_output;
    std::vector<int> more_v, more_down;  // layers with the "more" type
  };
  using T = GgmlType;
  const Expect cases[] = {
      {LlamaFileType::Q4_K_M, T::Q4_K, T::Q6_K, T::Q4_K, T::Q6_K, T::Q4_K, T::Q4_K, {0, 3, 6, 7}, {0, 3, 6, 7}},
      {LlamaFileType::Q5_K_M, T::Q5_K, T::Q6_K, T::Q5_K, T::Q6_K, T::Q5_K, T::Q5_K, {0, 3, 6, 7}, {0, 3, 6, 7}},
      {LlamaFileType::Q4_K_S, T::Q4_K, T::Q5_K, T::Q4_K, T::Q5_K, T::Q4_K, T::Q4_K, {0, 1, 2, 3}, {0}},
      {LlamaFileType::Q3_K_M, T::Q3_K, T::Q5_K, T::Q4_K, T::Q4_K, T::Q4_K, T::Q4_K, {0, 1}, {}},
      {LlamaFileType::Q2_K, T::Q2_K, T::Q3_K, T::Q3_K, T::Q3_K, T::Q3_K, T::Q3_K, {}, {}},
  };
  for (const Expect& c : cases) {
    SCOPED_TRACE(llama_file_type_name(c.mix));
    SynthOptions o = tiny(GgmlType::F32, 3, 2);
    o.shape = SynthShape{"custom", 256, 256, 8, 4, 2, 300, 64};
    o.mix = c.mix;
    const auto path = (dir.path() / (std::string(llama_file_type_name(c.mix)) + ".gguf")).string();
    ASSERT_TRUE(write_synth_model(o, path).ok());
    auto f = GgufFile::open(path);
    ASSERT_TRUE(f.ok());
    EXPECT_EQ(f->get_int("general.file_type").value(), static_cast<int64_t>(c.mix));
    auto type = [&](const std::string& name) { return f->find_tensor(name)->type; };
    EXPECT_EQ(type("output.weight"), T::Q6_K);
    EXPECT_EQ(type("token_embd.weight"), c.base);
    EXPECT_EQ(type("blk.0.attn_norm.weight"), T::F32);
    for (int il = 0; il < 8; ++il) {
      const std::string b = "blk." + std::to_string(il) + ".";
      auto in = [il](const std::vector<int>& v) { return std::find(v.begin(), v.end(), il) != v.end(); };
      EXPECT_EQ(type(b + "attn_v.weight"), in(c.more_v) ? c.attn_v_more : c.attn_v_rest) << b;
      EXPECT_EQ(type(b + "ffn_down.weight"), in(c.more_down) ? c.down_more : c.down_rest) << b;
      EXPECT_EQ(type(b + "attn_output.weight"), c.attn_output) << b;
      for (const char* same : {"attn_q.weight", "attn_k.weight", "ffn_gate.weight", "ffn_up.weight"})
        EXPECT_EQ(type(b + same), c.base) << b << same;
    }
  }
}

// Q4_K_M on rows that are not whole 256-blocks (n_embd 288): llama.cpp's fallbacks Q4_K -> Q5_0,
// Q6_K -> Q8_0, and the output straight to Q8_0.
TEST(Synth, MixFallsBackWhereRowsAreNotWhole256Blocks) {
  testing::TempDir dir;
  SynthOptions o = tiny(GgmlType::F32, 5, 2);
  o.shape = SynthShape{"custom", 288, 512, 2, 4, 2, 300, 64};
  o.mix = LlamaFileType::Q4_K_M;
  const auto path = (dir.path() / "fallback.gguf").string();
  ASSERT_TRUE(write_synth_model(o, path).ok());
  auto f = GgufFile::open(path);
  ASSERT_TRUE(f.ok());
  auto type = [&](const std::string& name) { return f->find_tensor(name)->type; };
  EXPECT_EQ(type("output.weight"), GgmlType::Q8_0);
  EXPECT_EQ(type("token_embd.weight"), GgmlType::Q5_0);
  EXPECT_EQ(type("blk.0.attn_q.weight"), GgmlType::Q5_0);
  // With 2 layers use_more_bits picks layer 1 only.
  EXPECT_EQ(type("blk.0.attn_v.weight"), GgmlType::Q5_0);
  EXPECT_EQ(type("blk.1.attn_v.weight"), GgmlType::Q8_0);  // Q6_K fallen back
  EXPECT_EQ(type("blk.0.attn_output.weight"), GgmlType::Q5_0);
  EXPECT_EQ(type("blk.0.ffn_down.weight"), GgmlType::Q4_K);  // 512-wide rows keep their K-types
  EXPECT_EQ(type("blk.1.ffn_down.weight"), GgmlType::Q6_K);
  EXPECT_EQ(type("blk.1.ffn_gate.weight"), GgmlType::Q5_0);
}

// Mixed files run through every path: one-token decode and the quantized-activation batch agree
// bit for bit (each tensor with its own kernels), and the dequantize + sgemm batch agrees with
// them to the activation-quantization tolerance of the reference tests.
TEST(Synth, MixedFilesRunOnEveryMatmulPath) {
  testing::TempDir dir;
  for (LlamaFileType mix : {LlamaFileType::Q4_K_M, LlamaFileType::Q3_K_M, LlamaFileType::Q4_K_S}) {
    SCOPED_TRACE(llama_file_type_name(mix));
    SynthOptions o = tiny(GgmlType::F32, 9, 2);
    o.shape = SynthShape{"custom", 288, 512, 3, 4, 2, 512, 64};  // Q5_0/Q8_0 fallbacks beside K-types
    o.vocab_source = test::stories_path();
    o.mix = mix;
    const auto path = (dir.path() / "mixed.gguf").string();
    ASSERT_TRUE(write_synth_model(o, path).ok());
    auto model = LlamaModel::load(path);
    ASSERT_TRUE(model.ok()) << model.error().str();
    EXPECT_GE(model->tensor_type_counts().size(), 4u) << "f32 norms and at least three weight types";
    const std::vector<int32_t> prompt = {1, 403, 407, 261, 378, 432, 383, 286};
    auto one = test::context(model.value(), test::cpu(2), 64);
    std::vector<float> seq;
    for (int32_t t : prompt) {
      auto r = one->eval(std::vector<int32_t>{t});
      ASSERT_TRUE(r.ok()) << r.error().str();
      seq.insert(seq.end(), r->begin(), r->end());
    }
    auto quantized = test::context(model.value(), test::cpu(2, "quantized"), 64);
    auto q = quantized->eval(prompt, true);
    ASSERT_TRUE(q.ok());
    auto sgemm = test::context(model.value(), test::cpu(2, "sgemm"), 64);
    auto g = sgemm->eval(prompt, true);
    ASSERT_TRUE(g.ok());
    ASSERT_EQ(q->size(), seq.size());
    float d_quant = 0, d_sgemm = 0;
    for (size_t i = 0; i < seq.size(); ++i) {
      ASSERT_TRUE(std::isfinite(seq[i]));
      d_quant = std::max(d_quant, std::fabs(q.value()[i] - seq[i]));
      d_sgemm = std::max(d_sgemm, std::fabs(g.value()[i] - seq[i]));
    }
    EXPECT_EQ(d_quant, 0.0f);
    EXPECT_LT(d_sgemm, 5e-2f);
  }
}

// ar-bench (the preset users run on their own files) on a tiny synth file of every storage type
// and of a mix.
TEST(Synth, ArBenchRunsOnEveryType) {
  testing::TempDir dir;
  std::vector<SynthOptions> files;
  for (GgmlType type : ggml_storage_types()) files.push_back(tiny(type, 4, 1));
  SynthOptions mixed = tiny(GgmlType::F32, 4, 1);
  mixed.shape = SynthShape{"custom", 288, 512, 2, 4, 2, 300, 64};
  mixed.mix = LlamaFileType::Q4_K_M;
  files.push_back(mixed);
  for (const SynthOptions& o : files) {
    const std::string label = o.mix ? llama_file_type_name(*o.mix) : ggml_type_name(o.type);
    SCOPED_TRACE(label);
    const auto path = (dir.path() / (label + ".gguf")).string();
    ASSERT_TRUE(write_synth_model(o, path).ok());
    auto model = LlamaModel::load(path);
    ASSERT_TRUE(model.ok()) << model.error().str();
    auto tok = Tokenizer::from_gguf(model->gguf());
    ASSERT_TRUE(tok.ok());
    ArBenchConfig c;
    c.prompt_lengths = {8};
    c.gen_tokens = 2;
    c.samples = 1;
    auto r = run_ar_bench(model.value(), tok.value(), test::cpu(1), c);
    ASSERT_TRUE(r.ok()) << r.error().str();
    const auto& types = (*r)["model"]["tensor_types"];
    if (!o.mix) {
      EXPECT_TRUE(types.contains(ggml_type_name(o.type))) << types.dump();
    } else {
      EXPECT_TRUE(types.contains("q6_K") && types.contains("q5_0") && types.contains("q8_0")) << types.dump();
    }
    ASSERT_EQ((*r)["samples"].size(), 1u) << r->dump();
    EXPECT_GT((*r)["samples"][0]["decode_tok_s"].get<double>(), 0.0) << r->dump();
  }
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
