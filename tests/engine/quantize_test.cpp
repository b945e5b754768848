// The reference quantizers (engine/quantize.h) against llama.cpp's llama-quantize: every 2-D
// tensor of the F32 reference model, quantized here, is byte-identical to the same tensor of each
// quantized reference file (llama-quantize --pure, no importance matrix; README "Variants" and
// "More tensor types"), and dequantizes to what the reference checksums say.

#include "engine/quantize.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "engine/cpu/quant.h"
#include "engine/gguf.h"
#include "tests/harness/paths.h"

namespace kakeya::engine {
namespace {

namespace fs = std::filesystem;

const GgufFile& f32_reference() {
  static const GgufFile f = [] {
    auto r = GgufFile::open((testing::data_dir() / "reference" / "synth-llama-256-f32.gguf").string());
    if (!r.ok()) throw std::runtime_error(r.error().str());
    return std::move(r).value();
  }();
  return f;
}

struct QuantizedFile {
  const char* suffix;
  GgmlType type;
  bool shared;  // in ../shared/reference rather than bundled
};

class LlamaQuantizeBytes : public ::testing::TestWithParam<QuantizedFile> {};

TEST_P(LlamaQuantizeBytes, EveryTensorIsByteIdentical) {
  const QuantizedFile q = GetParam();
  fs::path dir = testing::data_dir() / "reference";
  if (q.shared) {
    if (const std::string why = testing::shared_dir_missing("reference"); !why.empty()) GTEST_SKIP() << why;
    dir = testing::shared_dir() / "reference";
  }
  auto file = GgufFile::open((dir / ("synth-llama-256-" + std::string(q.suffix) + ".gguf")).string());
  ASSERT_TRUE(file.ok()) << file.error().str();
  int compared = 0;
  for (const TensorInfo& src : f32_reference().tensors()) {
    if (src.ne.size() != 2) continue;  // norms stay F32
    const TensorInfo* want = file->find_tensor(src.name);
    ASSERT_NE(want, nullptr) << src.name;
    ASSERT_EQ(want->type, q.type) << src.name;
    const int64_t n = src.ne[0];
    const auto* x = reinterpret_cast<const float*>(src.data);
    std::vector<uint8_t> got(ggml_row_bytes(q.type, n));
    int64_t differing_rows = 0, first_bad = -1;
    for (int64_t r = 0; r < src.rows(); ++r) {
      ASSERT_TRUE(convert_row(q.type, x + r * n, got.data(), n).ok());
      if (std::memcmp(got.data(), want->data + static_cast<size_t>(r) * got.size(), got.size()) != 0) {
        if (first_bad < 0) first_bad = r;
        ++differing_rows;
      }
    }
    EXPECT_EQ(differing_rows, 0) << src.name << ": first differing row " << first_bad;
    ++compared;
  }
  EXPECT_EQ(compared, 1 + 7 * 2 + 1) << "token_embd, 7 matrices per layer, output";
}

INSTANTIATE_TEST_SUITE_P(
    Types, LlamaQuantizeBytes,
    ::testing::Values(QuantizedFile{"q8_0", GgmlType::Q8_0, false}, QuantizedFile{"q4_0", GgmlType::Q4_0, false},
                      QuantizedFile{"q4_k", GgmlType::Q4_K, false}, QuantizedFile{"q6_k", GgmlType::Q6_K, false},
                      QuantizedFile{"q4_1", GgmlType::Q4_1, true}, QuantizedFile{"q5_0", GgmlType::Q5_0, true},
                      QuantizedFile{"q5_1", GgmlType::Q5_1, true}, QuantizedFile{"q2_k", GgmlType::Q2_K, true},
                      QuantizedFile{"q3_k", GgmlType::Q3_K, true}, QuantizedFile{"q5_k", GgmlType::Q5_K, true},
                      QuantizedFile{"iq4_nl", GgmlType::IQ4_NL, true}, QuantizedFile{"iq4_xs", GgmlType::IQ4_XS, true}),
    [](const ::testing::TestParamInfo<QuantizedFile>& p) { return std::string(p.param.suffix); });

}  // namespace
}  // namespace kakeya::engine
