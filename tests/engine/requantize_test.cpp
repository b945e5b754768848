// write_requantized (engine/requantize.h), the engine's llama-quantize: re-typing a synth F32
// file gives byte for byte the file synth writes directly in that type or mix (synth draws the
// same f32 weights and converts them with the same quantizers), 1-D tensors and metadata are
// kept, general.file_type is the new type. The command: tests/integration/engine_cli_test.cpp.
#include "engine/requantize.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "engine/gguf.h"
#include "engine/model.h"
#include "engine/presets/synth.h"
#include "tests/harness/paths.h"

namespace kakeya::engine {
namespace {

// A 2-layer synth model (rows of 256: every K-type fits) of `type` or `mix`.
std::string synth(const testing::TempDir& dir, const std::string& name, GgmlType type,
                  std::optional<LlamaFileType> mix = std::nullopt) {
  SynthOptions o;
  o.type = type;
  o.mix = mix;
  o.seed = 7;
  o.vocab_source = (testing::models_dir() / "stories260K-f32.gguf").string();
  const std::string path = (dir.path() / name).string();
  const Status st = write_synth_model(o, path);
  EXPECT_TRUE(st.ok()) << st.error().str();
  return path;
}

// Every tensor of `a` and `b` has the same name, type, shape and bytes.
void expect_same_tensors(const GgufFile& a, const GgufFile& b) {
  ASSERT_EQ(a.tensors().size(), b.tensors().size());
  for (size_t i = 0; i < a.tensors().size(); ++i) {
    const TensorInfo& x = a.tensors()[i];
    const TensorInfo& y = b.tensors()[i];
    EXPECT_EQ(x.name, y.name);
    EXPECT_EQ(x.type, y.type) << x.name;
    EXPECT_EQ(x.ne, y.ne) << x.name;
    ASSERT_EQ(x.nbytes, y.nbytes) << x.name;
    EXPECT_TRUE(std::equal(x.data, x.data + x.nbytes, y.data)) << x.name << ": bytes differ";
  }
}

TEST(Requantize, RetypedFileEqualsTheFileWrittenInThatTypeOrMix) {
  testing::TempDir dir;
  auto f32 = LlamaModel::load(synth(dir, "f32.gguf", GgmlType::F32));
  ASSERT_TRUE(f32.ok()) << f32.error().str();
  struct Case {
    LlamaFileType ftype;
    bool pure;
    std::optional<LlamaFileType> mix;
    GgmlType type;
  };
  for (const Case& c : {Case{LlamaFileType::Q8_0, false, std::nullopt, GgmlType::Q8_0},
                        Case{LlamaFileType::F16, false, std::nullopt, GgmlType::F16},
                        Case{LlamaFileType::Q4_K_M, false, LlamaFileType::Q4_K_M, GgmlType::F32},
                        Case{LlamaFileType::Q4_K_M, true, std::nullopt, GgmlType::Q4_K}}) {
    SCOPED_TRACE(llama_file_type_name(c.ftype) + std::string(c.pure ? " pure" : ""));
    const std::string out = (dir.path() / "re.gguf").string();
    auto written = write_requantized(*f32, RequantizeOptions{c.ftype, c.pure, {}}, out);
    ASSERT_TRUE(written.ok()) << written.error().str();
    EXPECT_EQ(written->retyped, 16u);  // token_embd, output, 7 matrices per layer x 2
    EXPECT_EQ(written->kept, 5u);      // the norms
    auto got = GgufFile::open(out);
    auto want = GgufFile::open(synth(dir, "want.gguf", c.type, c.mix));
    ASSERT_TRUE(got.ok() && want.ok());
    expect_same_tensors(*got, *want);
    EXPECT_EQ(got->get_int("general.file_type").value(), static_cast<int64_t>(c.ftype));
    EXPECT_EQ(got->get_string_array("tokenizer.ggml.tokens").value(),
              f32->gguf().get_string_array("tokenizer.ggml.tokens").value());
    EXPECT_EQ(got->get_int("llama.block_count").value(), 2);
    EXPECT_EQ(got->get_string("kakeya.synth.shape").value(), "custom");
  }
}

TEST(Requantize, ExtraKeysReplaceCopiedOnesAndPureKeepsShortRows) {
  testing::TempDir dir;
  auto stories = LlamaModel::load((testing::models_dir() / "stories260K-f32.gguf").string());
  ASSERT_TRUE(stories.ok());
  const std::string out = (dir.path() / "q.gguf").string();
  // llama-quantize's rules refuse Q8_0 for rows of 172, naming the tensor; --pure keeps them.
  auto refused = write_requantized(*stories, RequantizeOptions{LlamaFileType::Q8_0, false, {}}, out);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, "bad_shape");
  EXPECT_NE(refused.error().message.find("blk.0.ffn_down.weight"), std::string::npos) << refused.error().message;
  RequantizeOptions o{LlamaFileType::Q8_0, true, {{"general.name", std::string("renamed")}}};
  auto written = write_requantized(*stories, o, out);
  ASSERT_TRUE(written.ok()) << written.error().str();
  auto q = LlamaModel::load(out);
  ASSERT_TRUE(q.ok()) << q.error().str();
  EXPECT_EQ(q->gguf().get_string("general.name").value(), "renamed");
  EXPECT_EQ(q->weights().layers[0].wq.type, GgmlType::Q8_0);
  EXPECT_EQ(q->weights().layers[0].w_down.type, GgmlType::F32);  // rows of 172: no whole Q8_0 blocks
}

}  // namespace
}  // namespace kakeya::engine
