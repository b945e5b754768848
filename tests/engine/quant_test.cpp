// Tensor-type kernels: dequantization of every tensor of every reference model against ggml's
// own output (sha256 of the f32 array), fp16/bf16 conversion, the ggml activation formats,
// dot products against a float64 reference, and agreement of every kernel set with the portable
// one. The F32..Q6_K reference files are bundled (tests/data/reference); the eight of "More
// tensor types" (Q4_1 ... IQ4_XS) are read from the shared folder (../shared/reference).

#include "engine/cpu/quant.h"

#include <gtest/gtest.h>
#if defined(__x86_64__)
#include <immintrin.h>
#endif
#include <openssl/evp.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/cpu/cpu_features.h"
#include "engine/gguf.h"
#include "tests/harness/paths.h"

namespace kakeya::engine {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

constexpr GgmlType kWeightTypes[] = {GgmlType::F32,  GgmlType::F16,  GgmlType::BF16, GgmlType::Q8_0,
                                     GgmlType::Q4_0, GgmlType::Q4_K, GgmlType::Q6_K};
// The types whose reference files live in the shared folder.
constexpr GgmlType kMoreTypes[] = {GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1,   GgmlType::Q2_K,
                                   GgmlType::Q3_K, GgmlType::Q5_K, GgmlType::IQ4_NL, GgmlType::IQ4_XS};

std::vector<GgmlType> all_weight_types() {
  std::vector<GgmlType> v(std::begin(kWeightTypes), std::end(kWeightTypes));
  v.insert(v.end(), std::begin(kMoreTypes), std::end(kMoreTypes));
  return v;
}

bool is_more_type(GgmlType t) { return std::find(std::begin(kMoreTypes), std::end(kMoreTypes), t) != std::end(kMoreTypes); }

// Kernel sets agree bit for bit for these types (quant.h); the others only to f32 rounding.
bool bit_identical_across_isas(GgmlType t) {
  return t == GgmlType::Q4_0 || t == GgmlType::Q4_K || t == GgmlType::Q6_K || is_more_type(t);
}

std::string sha256_hex(const void* data, size_t n) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(data, n, md, &len, EVP_sha256(), nullptr);
  static const char* kHex = "0123456789abcdef";
  std::string s;
  for (unsigned i = 0; i < len; ++i) {
    s += kHex[md[i] >> 4];
    s += kHex[md[i] & 15];
  }
  return s;
}

struct RefModel {
  json ref;
  GgufFile file;
};

RefModel load_reference(const fs::path& json_path) {
  std::ifstream in(json_path);
  json ref = json::parse(in);
  fs::path model = json_path.parent_path() / ref.at("model_file").get<std::string>();
  if (!fs::exists(model)) model = testing::models_dir() / ref.at("model_file").get<std::string>();
  auto f = GgufFile::open(model.string());
  if (!f.ok()) throw std::runtime_error(f.error().str());
  return RefModel{std::move(ref), std::move(f).value()};
}

// ggml's lower-case file suffix of a type ("q4_k" for q4_K).
std::string file_suffix(GgmlType t) {
  std::string s = ggml_type_name(t);
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::vector<RefModel> load_reference_models() {
  std::vector<RefModel> out;
  for (const auto& e : fs::directory_iterator(testing::data_dir() / "reference")) {
    const std::string name = e.path().filename().string();
    if (name.size() < 9 || name.substr(name.size() - 9) != ".ref.json") continue;
    out.push_back(load_reference(e.path()));
  }
  if (testing::shared_dir_missing("reference").empty()) {
    for (GgmlType t : kMoreTypes)
      out.push_back(load_reference(testing::shared_dir() / "reference" / ("synth-llama-256-" + file_suffix(t) + ".ref.json")));
  }
  return out;
}

// Empty when the reference tensors of `type` are available; else why not (printed by the tests).
std::string reference_missing(GgmlType type) {
  if (!is_more_type(type)) return {};
  return testing::shared_dir_missing("reference");
}

const std::vector<RefModel>& reference_models() {
  static const std::vector<RefModel> models = load_reference_models();
  return models;
}

// The first tensor of `type` in the reference models (all 2-D tensors share a type per file).
const TensorInfo* tensor_of_type(GgmlType type, int64_t min_ne0 = 0) {
  for (const RefModel& m : reference_models())
    for (const TensorInfo& t : m.file.tensors())
      if (t.type == type && t.ne.size() == 2 && t.ne[0] >= min_ne0) return &t;
  return nullptr;
}

std::vector<float> dequantize_tensor(const QuantKernels& k, const TensorInfo& t) {
  std::vector<float> out(static_cast<size_t>(t.nelements()));
  const size_t rb = t.row_bytes();
  for (int64_t r = 0; r < t.rows(); ++r)
    k.dequantize_row(t.type, t.data + static_cast<size_t>(r) * rb, out.data() + r * t.ne[0], t.ne[0]);
  return out;
}

std::vector<KernelIsa> available_isas() {
  std::vector<KernelIsa> isas{KernelIsa::Portable};
  if (kernel_isa_available(KernelIsa::Avx2)) isas.push_back(KernelIsa::Avx2);
  if (kernel_isa_available(KernelIsa::Avx512)) isas.push_back(KernelIsa::Avx512);
  return isas;
}

std::vector<float> random_activations(int64_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> x(static_cast<size_t>(n));
  for (float& v : x) v = dist(rng);
  return x;
}

// The activation values as the kernels see them (after conversion), in float64.
std::vector<double> activation_values(const ActivationBuffer& act) {
  std::vector<float> f(static_cast<size_t>(act.n));
  quant_kernels(KernelIsa::Portable).dequantize_row(act.vec_dot_type, act.bytes.data(), f.data(), act.n);
  return std::vector<double>(f.begin(), f.end());
}

// ---- dequantization against ggml ----

TEST(Quant, DequantizeEveryReferenceTensorBitExact) {
  int checked = 0;
  for (KernelIsa isa : available_isas()) {
    SCOPED_TRACE(kernel_isa_name(isa));
    for (const RefModel& m : reference_models()) {
      const json& deq = m.ref.at("dequant_reference");
      ASSERT_EQ(deq.size(), m.file.tensors().size());
      for (const TensorInfo& t : m.file.tensors()) {
        SCOPED_TRACE(m.ref.at("model_file").get<std::string>() + " " + t.name);
        const json& expect = deq.at(t.name);
        const std::vector<float> v = dequantize_tensor(quant_kernels(isa), t);
        EXPECT_EQ(sha256_hex(v.data(), v.size() * sizeof(float)), expect.at("sha256_f32le").get<std::string>());
        double sum = 0, sumsq = 0;
        for (float x : v) {
          sum += x;
          sumsq += static_cast<double>(x) * x;
        }
        EXPECT_NEAR(sum, expect.at("sum").get<double>(), 1e-8 * (1 + std::fabs(sum)) + 1e-6);
        EXPECT_NEAR(sumsq, expect.at("sumsq").get<double>(), 1e-8 * sumsq + 1e-6);
        const auto first8 = expect.at("first8").get<std::vector<double>>();
        const auto last8 = expect.at("last8").get<std::vector<double>>();
        for (size_t i = 0; i < 8; ++i) {
          EXPECT_EQ(v[i], static_cast<float>(first8[i])) << "element " << i;
          EXPECT_EQ(v[v.size() - 8 + i], static_cast<float>(last8[i])) << "element from end " << 8 - i;
        }
        ++checked;
      }
    }
  }
  const std::string missing = reference_missing(GgmlType::Q4_1);
  if (!missing.empty()) std::printf("  skipped the eight shared reference files: %s\n", missing.c_str());
  EXPECT_GE(checked, static_cast<int>(available_isas().size()) * (missing.empty() ? 15 : 7) * 21);
}

TEST(Quant, ReferenceModelsCoverEveryWeightType) {
  for (GgmlType t : all_weight_types()) {
    if (const std::string why = reference_missing(t); !why.empty()) {
      std::printf("  %s: %s\n", ggml_type_name(t), why.c_str());
      continue;
    }
    EXPECT_NE(tensor_of_type(t), nullptr) << ggml_type_name(t);
  }
  // Every storage type has dot-product kernels, and every one is covered here.
  EXPECT_EQ(ggml_storage_types().size(), all_weight_types().size());
  for (GgmlType t : ggml_storage_types()) EXPECT_TRUE(has_dot_kernels(t)) << ggml_type_name(t);
  EXPECT_FALSE(has_dot_kernels(GgmlType::Q8_K));
  EXPECT_FALSE(has_dot_kernels(GgmlType::Q8_1));
}

// ---- fp16 / bf16 ----

#if defined(__x86_64__)
__attribute__((target("f16c"))) uint16_t f16c_to_half(float f) {
  return static_cast<uint16_t>(_mm_cvtsi128_si32(_mm_cvtps_ph(_mm_set_ss(f), 0)) & 0xFFFF);
}
#endif

TEST(Quant, Fp16RoundTripsEveryHalf) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const float f = fp16_to_fp32(static_cast<uint16_t>(h));
    if (std::isnan(f)) {
      EXPECT_EQ(h & 0x7C00u, 0x7C00u);
      EXPECT_TRUE(std::isnan(fp16_to_fp32(fp32_to_fp16(f))));
      continue;
    }
    ASSERT_EQ(fp32_to_fp16(f), h) << "half 0x" << std::hex << h;
  }
  EXPECT_EQ(fp16_to_fp32(0x3C00), 1.0f);
  EXPECT_EQ(fp16_to_fp32(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(fp16_to_fp32(0x7BFF), 65504.0f);
  EXPECT_EQ(fp16_to_fp32(0xC000), -2.0f);
}

TEST(Quant, Fp16RoundsToNearestEven) {
  EXPECT_EQ(fp32_to_fp16(65519.0f), 0x7BFF);
  EXPECT_EQ(fp32_to_fp16(65520.0f), 0x7C00);  // tie between 65504 and 65536 -> even -> inf
  EXPECT_EQ(fp32_to_fp16(1e10f), 0x7C00);
  EXPECT_EQ(fp32_to_fp16(-1e10f), 0xFC00);
  EXPECT_EQ(fp32_to_fp16(std::ldexp(1.0f, -25)), 0x0000);            // tie -> even (0)
  EXPECT_EQ(fp32_to_fp16(std::ldexp(1.5f, -25)), 0x0001);
  EXPECT_EQ(fp32_to_fp16(std::ldexp(3.0f, -25)), 0x0002);            // 1.5 ulp tie -> 2
  EXPECT_EQ(fp32_to_fp16(1.0f + std::ldexp(1.0f, -11)), 0x3C00);     // tie -> even
  EXPECT_EQ(fp32_to_fp16(1.0f + std::ldexp(3.0f, -11)), 0x3C02);     // tie -> even (up)
  EXPECT_EQ(fp32_to_fp16(-0.0f), 0x8000);
  EXPECT_TRUE(std::isnan(fp16_to_fp32(fp32_to_fp16(std::nanf("")))));
}

TEST(Quant, Fp16MatchesF16cOnRandomFloats) {
#if !defined(__x86_64__)
  GTEST_SKIP() << "x86 only";
#else
  if (!cpu_features().f16c) GTEST_SKIP() << "no F16C";
  std::mt19937 rng(7);
  for (int i = 0; i < 2000000; ++i) {
    uint32_t bits = rng();
    if (i % 2 == 0) bits = (bits & 0x80FFFFFFu) | ((100u + bits % 48u) << 23);  // concentrate near half range
    float f;
    std::memcpy(&f, &bits, 4);
    ASSERT_EQ(fp32_to_fp16(f), f16c_to_half(f)) << "bits 0x" << std::hex << bits;
  }
#endif
}

TEST(Quant, Bf16RoundsToNearestEven) {
  auto from_bits = [](uint32_t u) {
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  };
  EXPECT_EQ(fp32_to_bf16(1.0f), 0x3F80);
  EXPECT_EQ(fp32_to_bf16(from_bits(0x3F808000u)), 0x3F80);  // tie -> even
  EXPECT_EQ(fp32_to_bf16(from_bits(0x3F818000u)), 0x3F82);  // tie -> even (up)
  EXPECT_EQ(fp32_to_bf16(from_bits(0x3F808001u)), 0x3F81);
  EXPECT_EQ(bf16_to_fp32(0xC040), -3.0f);
  EXPECT_TRUE(std::isnan(bf16_to_fp32(fp32_to_bf16(std::nanf("")))));
  for (uint32_t h = 0; h < 65536; ++h) {
    const float f = bf16_to_fp32(static_cast<uint16_t>(h));
    if (!std::isnan(f)) {
      ASSERT_EQ(fp32_to_bf16(f), h);
    }
  }
}

// ---- type table ----

TEST(Quant, TypeTable) {
  EXPECT_STREQ(ggml_type_name(GgmlType::Q4_K), "q4_K");
  EXPECT_STREQ(ggml_type_name(GgmlType::BF16), "bf16");
  EXPECT_EQ(ggml_type_from_id(14).value(), GgmlType::Q6_K);
  EXPECT_EQ(ggml_type_from_id(30).value(), GgmlType::BF16);
  auto bad = ggml_type_from_id(16);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("16 (iq2_xxs)"), std::string::npos) << bad.error().message;
  EXPECT_NE(bad.error().message.find("iq4_xs"), std::string::npos) << "lists the supported types: " << bad.error().message;
  EXPECT_NE(ggml_type_from_id(15).error().message.find("activation-only"), std::string::npos);
  EXPECT_FALSE(ggml_type_from_id(9).ok()) << "q8_1 is an activation format";
  EXPECT_FALSE(ggml_type_from_id(999).ok());
  EXPECT_EQ(ggml_type_from_name("Q6_K").value(), GgmlType::Q6_K);
  EXPECT_EQ(ggml_type_from_name("q5_0").value(), GgmlType::Q5_0);
  EXPECT_EQ(ggml_type_from_name("IQ4_XS").value(), GgmlType::IQ4_XS);
  EXPECT_FALSE(ggml_type_from_name("q8_K").ok());
  EXPECT_FALSE(ggml_type_from_name("iq2_xxs").ok());
  EXPECT_STREQ(ggml_type_name(GgmlType::IQ4_NL), "iq4_nl");
  EXPECT_STREQ(ggml_type_name(GgmlType::Q8_1), "q8_1");
  // Block geometry (ggml-common.h).
  const std::pair<GgmlType, std::pair<int64_t, size_t>> geometry[] = {
      {GgmlType::Q4_1, {32, 20}},  {GgmlType::Q5_0, {32, 22}},   {GgmlType::Q5_1, {32, 24}},
      {GgmlType::Q8_1, {32, 36}},  {GgmlType::Q2_K, {256, 84}},  {GgmlType::Q3_K, {256, 110}},
      {GgmlType::Q5_K, {256, 176}}, {GgmlType::IQ4_NL, {32, 18}}, {GgmlType::IQ4_XS, {256, 136}}};
  for (const auto& [t, g] : geometry) {
    EXPECT_EQ(ggml_block_size(t), g.first) << ggml_type_name(t);
    EXPECT_EQ(ggml_block_bytes(t), g.second) << ggml_type_name(t);
  }
  EXPECT_EQ(ggml_row_bytes(GgmlType::Q4_K, 512), 288u);
  EXPECT_EQ(ggml_row_bytes(GgmlType::Q6_K, 256), 210u);
  EXPECT_EQ(ggml_row_bytes(GgmlType::Q4_0, 64), 36u);
  EXPECT_EQ(ggml_row_bytes(GgmlType::Q8_0, 64), 68u);
  EXPECT_EQ(ggml_row_bytes(GgmlType::BF16, 7), 14u);
  EXPECT_EQ(ggml_row_bytes(GgmlType::F32, 7), 28u);
  for (GgmlType t : all_weight_types()) {
    EXPECT_EQ(ggml_type_from_id(static_cast<uint32_t>(t)).value(), t);
    EXPECT_EQ(ggml_type_from_name(ggml_type_name(t)).value(), t);
  }
  // The activation format of each weight type (ggml-cpu's vec_dot_type).
  EXPECT_EQ(vec_dot_type(GgmlType::Q4_1), GgmlType::Q8_1);
  EXPECT_EQ(vec_dot_type(GgmlType::Q5_1), GgmlType::Q8_1);
  for (GgmlType t : {GgmlType::Q4_0, GgmlType::Q5_0, GgmlType::Q8_0, GgmlType::IQ4_NL}) EXPECT_EQ(vec_dot_type(t), GgmlType::Q8_0);
  for (GgmlType t : {GgmlType::Q2_K, GgmlType::Q3_K, GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K, GgmlType::IQ4_XS})
    EXPECT_EQ(vec_dot_type(t), GgmlType::Q8_K);
  EXPECT_EQ(vec_dot_type(GgmlType::F16), GgmlType::F16);
}

// ---- activation formats ----

TEST(Quant, Q8_0ActivationsFollowGgml) {
  const auto x = random_activations(256, 11);
  for (KernelIsa isa : available_isas()) {
    ActivationBuffer act;
    quant_kernels(isa).quantize_activations(GgmlType::Q4_0, x.data(), 256, act);
    EXPECT_EQ(act.vec_dot_type, GgmlType::Q8_0);
    ASSERT_EQ(act.bytes.size(), 8 * sizeof(BlockQ8_0));
    const auto* b = reinterpret_cast<const BlockQ8_0*>(act.bytes.data());
    for (int i = 0; i < 8; ++i) {
      float amax = 0;
      for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[i * 32 + j]));
      EXPECT_EQ(b[i].d, fp32_to_fp16(amax / 127.f));
      for (int j = 0; j < 32; ++j)
        EXPECT_EQ(b[i].qs[j], static_cast<int8_t>(std::nearbyint(x[i * 32 + j] * (127.f / amax))));
    }
  }
}

TEST(Quant, Q8_1ActivationsFollowGgml) {
  auto x = random_activations(96, 15);
  std::fill(x.begin() + 64, x.end(), 0.0f);  // an all-zero block
  for (KernelIsa isa : available_isas()) {
    SCOPED_TRACE(kernel_isa_name(isa));
    for (GgmlType weights : {GgmlType::Q4_1, GgmlType::Q5_1}) {
      ActivationBuffer act;
      quant_kernels(isa).quantize_activations(weights, x.data(), 96, act);
      EXPECT_EQ(act.vec_dot_type, GgmlType::Q8_1);
      ASSERT_EQ(act.bytes.size(), 3 * sizeof(BlockQ8_1));
      const auto* b = reinterpret_cast<const BlockQ8_1*>(act.bytes.data());
      for (int i = 0; i < 3; ++i) {
        float amax = 0;
        for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[i * 32 + j]));
        const float d = amax / 127.f;
        EXPECT_EQ(b[i].d, fp32_to_fp16(d));
        int sum = 0;
        for (int j = 0; j < 32; ++j) {
          const int q = amax == 0 ? 0 : static_cast<int>(std::nearbyint(x[i * 32 + j] * (127.f / amax)));
          EXPECT_EQ(b[i].qs[j], q);
          sum += q;
        }
        // s = d·Σq with the unrounded f32 d, then rounded to fp16 (ggml's AVX2 quantize_row_q8_1).
        EXPECT_EQ(b[i].s, fp32_to_fp16(d * static_cast<float>(sum))) << "block " << i;
      }
      EXPECT_EQ(b[2].d, 0);
      EXPECT_EQ(b[2].s, 0);
    }
  }
}

TEST(Quant, Q8_KActivationsFollowGgml) {
  auto x = random_activations(512, 12);
  std::fill(x.begin() + 256, x.end(), 0.0f);  // an all-zero super-block
  x[3] = 9.0f;                                // max |x| positive in block 0
  ActivationBuffer act;
  quantize_activations(GgmlType::Q6_K, x.data(), 512, act);
  EXPECT_EQ(act.vec_dot_type, GgmlType::Q8_K);
  ASSERT_EQ(act.bytes.size(), 2 * sizeof(BlockQ8_K));
  const auto* b = reinterpret_cast<const BlockQ8_K*>(act.bytes.data());
  const float iscale = -127.f / 9.0f;
  EXPECT_EQ(b[0].d, 1.0f / iscale);
  EXPECT_EQ(b[0].qs[3], -127);  // the largest magnitude maps to -127 (sign flipped)
  for (int j = 0; j < 256; ++j) EXPECT_EQ(b[0].qs[j], std::min(127, static_cast<int>(std::nearbyint(iscale * x[j]))));
  for (int g = 0; g < 16; ++g) {
    int s = 0;
    for (int k = 0; k < 16; ++k) s += b[0].qs[g * 16 + k];
    EXPECT_EQ(b[0].bsums[g], s);
  }
  EXPECT_EQ(b[1].d, 0.0f);
  for (int j = 0; j < 256; ++j) EXPECT_EQ(b[1].qs[j], 0);
}

TEST(Quant, DenseActivationsAreRounded) {
  const auto x = random_activations(40, 13);
  ActivationBuffer f16, bf16, f32;
  quantize_activations(GgmlType::F16, x.data(), 40, f16);
  quantize_activations(GgmlType::BF16, x.data(), 40, bf16);
  quantize_activations(GgmlType::F32, x.data(), 40, f32);
  EXPECT_EQ(f16.vec_dot_type, GgmlType::F16);
  EXPECT_EQ(bf16.vec_dot_type, GgmlType::BF16);
  const auto* h = reinterpret_cast<const uint16_t*>(f16.bytes.data());
  const auto* bh = reinterpret_cast<const uint16_t*>(bf16.bytes.data());
  for (int i = 0; i < 40; ++i) {
    EXPECT_EQ(h[i], fp32_to_fp16(x[i]));
    EXPECT_EQ(bh[i], fp32_to_bf16(x[i]));
  }
  EXPECT_EQ(std::memcmp(f32.bytes.data(), x.data(), 40 * sizeof(float)), 0);
}

// Every kernel set rounds F16 and BF16 activations as fp32_to_fp16 / fp32_to_bf16 do, bit for bit,
// at the values where conversions part ways: NaNs of both signs (quiet and signalling, with
// payloads), infinities, zeros, f32 denormals, half denormals and the edge of half's range,
// bf16 rounding ties to even either way, and the largest floats (which round to infinity), in
// vector steps and in the scalar tail (n = 16 * 4 + 7).
TEST(Quant, DenseActivationsMatchScalarConversionInEveryKernelSet) {
  const uint32_t special[] = {
      0x7FC00000u, 0xFFC00000u, 0x7F800001u, 0xFF800001u, 0x7FBFFFFFu, 0x7FFFFFFFu, 0x7F80FFFFu,  // NaN
      0x7F800000u, 0xFF800000u, 0x00000000u, 0x80000000u,                                      // inf, 0
      0x00000001u, 0x807FFFFFu, 0x00400000u,                                                   // f32 denormal
      0x33000000u, 0x33000001u, 0x387FC000u, 0x38800000u, 0xB3800000u,                         // half denormal
      0x477FEFFFu, 0x477FF000u, 0xC77FE000u,                                                   // half max
      0x3F808000u, 0x3F818000u, 0x3F808001u, 0xBF818000u, 0x3F807FFFu,                         // bf16 ties
      0x7F7FFFFFu, 0xFF7FFFFFu, 0x7F7F8000u, 0x7F7F7FFFu,                                      // near f32 max
  };
  constexpr int64_t kN = 16 * 4 + 7;
  std::vector<float> x = random_activations(kN, 17, 100.0f);
  for (size_t i = 0; i < std::size(special); ++i) {
    // Spread over vector lanes and into the tail.
    const size_t at = (i * 7) % static_cast<size_t>(kN);
    std::memcpy(&x[at], &special[i], 4);
  }
  for (KernelIsa isa : available_isas()) {
    SCOPED_TRACE(kernel_isa_name(isa));
    ActivationBuffer f16, bf16;
    quant_kernels(isa).quantize_activations(GgmlType::F16, x.data(), kN, f16);
    quant_kernels(isa).quantize_activations(GgmlType::BF16, x.data(), kN, bf16);
    ASSERT_EQ(f16.vec_dot_type, GgmlType::F16);
    ASSERT_EQ(bf16.vec_dot_type, GgmlType::BF16);
    ASSERT_EQ(bf16.bytes.size(), static_cast<size_t>(kN) * 2);
    const auto* h = reinterpret_cast<const uint16_t*>(f16.bytes.data());
    const auto* bh = reinterpret_cast<const uint16_t*>(bf16.bytes.data());
    for (int64_t i = 0; i < kN; ++i) {
      uint32_t bits;
      std::memcpy(&bits, &x[static_cast<size_t>(i)], 4);
      SCOPED_TRACE(::testing::Message() << "lane " << i << " bits 0x" << std::hex << bits);
      EXPECT_EQ(h[i], fp32_to_fp16(x[static_cast<size_t>(i)]));
      EXPECT_EQ(bh[i], fp32_to_bf16(x[static_cast<size_t>(i)]));
    }
  }
}

TEST(Quant, QuantizeActivationsReusesCapacity) {
  const auto x = random_activations(512, 14);
  ActivationBuffer act;
  quantize_activations(GgmlType::Q4_K, x.data(), 512, act);
  const uint8_t* p = act.bytes.data();
  quantize_activations(GgmlType::Q4_K, x.data(), 256, act);
  quantize_activations(GgmlType::Q4_K, x.data(), 512, act);
  EXPECT_EQ(act.bytes.data(), p);
  EXPECT_EQ(act.n, 512);
}

// ---- dot products ----

// The float64 value a quantized dot product stands for: the dequantized row · the converted
// activations, except that Q8_1 activations carry their block sum as s = fp16(d·Σq), which the
// Q4_1/Q5_1 kernels multiply by the block's min m (ggml's semantics) instead of d_a·Σq.
double exact_dot(GgmlType type, const uint8_t* row, const std::vector<float>& w, const ActivationBuffer& act,
                 const std::vector<double>& a, double* magnitude) {
  double exact = 0, mag = 0;
  for (size_t i = 0; i < w.size(); ++i) {
    exact += w[i] * a[i];
    mag += std::fabs(w[i] * a[i]);
  }
  if (act.vec_dot_type == GgmlType::Q8_1) {
    const auto* blocks = reinterpret_cast<const BlockQ8_1*>(act.bytes.data());
    for (int64_t b = 0; b < act.n / 32; ++b) {
      uint16_t m;  // the min, at bytes 2..3 of a Q4_1/Q5_1 block
      std::memcpy(&m, row + static_cast<size_t>(b) * ggml_block_bytes(type) + 2, 2);
      int sum = 0;
      for (int j = 0; j < 32; ++j) sum += blocks[b].qs[j];
      exact += fp16_to_fp32(m) * (static_cast<double>(fp16_to_fp32(blocks[b].s)) -
                                  static_cast<double>(fp16_to_fp32(blocks[b].d)) * sum);
    }
  }
  *magnitude = mag;
  return exact;
}

// vec_dot against a float64 dot of the dequantized weights and the converted activations.
TEST(Quant, VecDotMatchesFloat64Reference) {
  for (GgmlType type : all_weight_types()) {
    if (!reference_missing(type).empty()) continue;  // printed by ReferenceModelsCoverEveryWeightType
    const TensorInfo* t = tensor_of_type(type);
    ASSERT_NE(t, nullptr);
    const int64_t n = t->ne[0];
    const auto x = random_activations(n, 21, 0.3f);
    for (KernelIsa isa : available_isas()) {
      SCOPED_TRACE(std::string(ggml_type_name(type)) + " " + kernel_isa_name(isa));
      const QuantKernels& k = quant_kernels(isa);
      ActivationBuffer act;
      k.quantize_activations(type, x.data(), n, act);
      EXPECT_EQ(act.vec_dot_type, vec_dot_type(type));
      const std::vector<double> a = activation_values(act);
      std::vector<float> w(static_cast<size_t>(n));
      for (int64_t r = 0; r < std::min<int64_t>(t->rows(), 64); ++r) {
        const uint8_t* row = t->data + static_cast<size_t>(r) * t->row_bytes();
        k.dequantize_row(type, row, w.data(), n);
        double mag = 0;
        const double exact = exact_dot(type, row, w, act, a, &mag);
        const float got = k.vec_dot(type, row, act);
        ASSERT_NEAR(got, exact, 2e-6 * mag + 1e-12) << "row " << r;
      }
    }
  }
}

// The quantized path approximates the f32 product: a sanity bound on the activation error.
TEST(Quant, QuantizedActivationsApproximateF32) {
  for (GgmlType type : {GgmlType::Q8_0, GgmlType::Q4_K, GgmlType::Q6_K, GgmlType::Q4_1, GgmlType::Q5_0,
                        GgmlType::Q2_K, GgmlType::Q3_K, GgmlType::Q5_K, GgmlType::IQ4_XS}) {
    if (!reference_missing(type).empty()) continue;
    const TensorInfo* t = tensor_of_type(type);
    ASSERT_NE(t, nullptr);
    const int64_t n = t->ne[0];
    const auto x = random_activations(n, 22);
    ActivationBuffer act;
    quantize_activations(type, x.data(), n, act);
    std::vector<float> w(static_cast<size_t>(n));
    dequantize_row(type, t->data, w.data(), n);
    double exact = 0, mag = 0;
    for (int64_t i = 0; i < n; ++i) {
      exact += static_cast<double>(w[i]) * x[i];
      mag += std::fabs(static_cast<double>(w[i]) * x[i]);
    }
    EXPECT_NEAR(vec_dot(type, t->data, act), exact, 0.02 * mag) << ggml_type_name(type);
  }
}

TEST(Quant, MatvecEqualsVecDotPerRow) {
  for (GgmlType type : all_weight_types()) {
    if (!reference_missing(type).empty()) continue;
    const TensorInfo* t = tensor_of_type(type);
    ASSERT_NE(t, nullptr);
    const int64_t n = t->ne[0];
    const auto x = random_activations(n, 23);
    for (KernelIsa isa : available_isas()) {
      const QuantKernels& k = quant_kernels(isa);
      ActivationBuffer act;
      k.quantize_activations(type, x.data(), n, act);
      const int64_t r0 = 3, r1 = std::min<int64_t>(t->rows(), 40);
      std::vector<float> y(static_cast<size_t>(r1 - r0), -1.0f);
      k.matvec(type, t->data, n, r0, r1, act, y.data());
      for (int64_t r = r0; r < r1; ++r)
        EXPECT_EQ(y[r - r0], k.vec_dot(type, t->data + static_cast<size_t>(r) * t->row_bytes(), act))
            << ggml_type_name(type) << " " << kernel_isa_name(isa) << " row " << r;
    }
  }
}

// Q4_0 rounds like ggml-cpu's repacked x86 kernels (what llama.cpp ran for the references):
// per row, s = fma(float(exact block int sum), fp16(w.d)·fp16(a.d), s) over the blocks in order.
// A lane-wise or unfused sum differs by an ulp, which flips Q8_0 rounding ties downstream.
TEST(Quant, Q4_0DotIsOneFmaChainPerRow) {
  const TensorInfo* t = tensor_of_type(GgmlType::Q4_0);
  ASSERT_NE(t, nullptr);
  const int64_t n = t->ne[0];
  const int64_t nb = n / 32;
  const auto x = random_activations(n, 57);
  const int64_t rows = std::min<int64_t>(t->rows(), 37);  // not a multiple of 4: tail rows too
  for (KernelIsa isa : available_isas()) {
    const QuantKernels& k = quant_kernels(isa);
    ActivationBuffer act;
    k.quantize_activations(GgmlType::Q4_0, x.data(), n, act);
    const auto* a = reinterpret_cast<const BlockQ8_0*>(act.bytes.data());
    std::vector<float> y(static_cast<size_t>(rows));
    k.matvec(GgmlType::Q4_0, t->data, n, 0, rows, act, y.data());
    for (int64_t r = 0; r < rows; ++r) {
      const auto* w = reinterpret_cast<const BlockQ4_0*>(t->data + static_cast<size_t>(r) * t->row_bytes());
      float s = 0;
      for (int64_t b = 0; b < nb; ++b) {
        int sumi = 0;
        for (int j = 0; j < 16; ++j) {
          sumi += ((w[b].qs[j] & 15) - 8) * a[b].qs[j] + ((w[b].qs[j] >> 4) - 8) * a[b].qs[j + 16];
        }
        const volatile float d = fp16_to_fp32(w[b].d) * fp16_to_fp32(a[b].d);
        s = std::fma(static_cast<float>(sumi), d, s);
      }
      EXPECT_EQ(y[static_cast<size_t>(r)], s) << kernel_isa_name(isa) << " row " << r;
    }
  }
}

// ---- AVX2 vs portable ----

// Random but well-formed blocks: scales are finite and moderate.
std::vector<uint8_t> random_row(GgmlType type, int64_t n, std::mt19937& rng) {
  std::vector<uint8_t> bytes(ggml_row_bytes(type, n));
  for (uint8_t& b : bytes) b = static_cast<uint8_t>(rng());
  std::uniform_real_distribution<float> scale(-0.05f, 0.05f);
  const int64_t nb = n / ggml_block_size(type);
  auto set_half = [&](size_t off, float v) {
    const uint16_t h = fp32_to_fp16(v);
    std::memcpy(bytes.data() + off, &h, 2);
  };
  for (int64_t i = 0; i < nb; ++i) {
    const size_t base = static_cast<size_t>(i) * ggml_block_bytes(type);
    switch (type) {
      case GgmlType::Q4_0:
      case GgmlType::Q8_0: set_half(base, scale(rng)); break;
      case GgmlType::Q4_K:
        set_half(base, std::fabs(scale(rng)));
        set_half(base + 2, std::fabs(scale(rng)));
        break;
      case GgmlType::Q6_K: set_half(base + 208, scale(rng)); break;
      case GgmlType::Q5_0:
      case GgmlType::IQ4_NL:
      case GgmlType::IQ4_XS:
      case GgmlType::Q3_K: set_half(type == GgmlType::Q3_K ? base + 108 : base, scale(rng)); break;
      case GgmlType::Q4_1:
      case GgmlType::Q5_1:
      case GgmlType::Q5_K:
        set_half(base, std::fabs(scale(rng)));
        set_half(base + 2, type == GgmlType::Q5_K ? std::fabs(scale(rng)) : scale(rng));
        break;
      case GgmlType::Q2_K:
        set_half(base + 80, std::fabs(scale(rng)));
        set_half(base + 82, std::fabs(scale(rng)));
        break;
      case GgmlType::F16: set_half(base, scale(rng) * 20); break;
      case GgmlType::BF16: {
        const uint16_t h = fp32_to_bf16(scale(rng) * 20);
        std::memcpy(bytes.data() + base, &h, 2);
        break;
      }
      case GgmlType::F32: {
        const float v = scale(rng) * 20;
        std::memcpy(bytes.data() + base, &v, 4);
        break;
      }
      default: break;
    }
  }
  return bytes;
}

TEST(Quant, SimdKernelSetsAgreeWithPortable) {
  if (!kernel_isa_available(KernelIsa::Avx2)) GTEST_SKIP() << "CPU cannot run the AVX2 kernels";
  // The dispatcher picks the best set the CPU runs.
  EXPECT_EQ(active_kernel_isa(), kernel_isa_available(KernelIsa::Avx512) ? KernelIsa::Avx512 : KernelIsa::Avx2);
  const QuantKernels& p = quant_kernels(KernelIsa::Portable);
  for (KernelIsa isa : available_isas()) {
    if (isa == KernelIsa::Portable) continue;
    SCOPED_TRACE(kernel_isa_name(isa));
    const QuantKernels& v = quant_kernels(isa);
    std::mt19937 rng(99);
    for (GgmlType type : all_weight_types()) {
      const int64_t bs = ggml_block_size(type);
      // 2048 + 13 and 53 = 32 + 16 + 5 leave float rows a tail after their 32- and 16-wide steps.
      for (int64_t n : std::vector<int64_t>{bs, 3 * bs, 4 * bs, 6 * bs, 2048 + (bs == 1 ? 13 : 0), bs == 1 ? 53 : 0}) {
        if (n == 0 || n % bs != 0) continue;
        SCOPED_TRACE(std::string(ggml_type_name(type)) + " n=" + std::to_string(n));
        const int64_t rows = 7;
        std::vector<uint8_t> w;
        for (int r = 0; r < rows; ++r) {
          auto row = random_row(type, n, rng);
          w.insert(w.end(), row.begin(), row.end());
        }
        const auto x = random_activations(n, static_cast<uint32_t>(n), 0.7f);
        ActivationBuffer ap, av;
        p.quantize_activations(type, x.data(), n, ap);
        v.quantize_activations(type, x.data(), n, av);
        ASSERT_EQ(ap.vec_dot_type, av.vec_dot_type);
        ASSERT_EQ(ap.bytes, av.bytes) << "activation conversion differs";

        std::vector<float> dp(static_cast<size_t>(n)), dv(static_cast<size_t>(n));
        p.dequantize_row(type, w.data(), dp.data(), n);
        v.dequantize_row(type, w.data(), dv.data(), n);
        ASSERT_EQ(std::memcmp(dp.data(), dv.data(), dp.size() * 4), 0) << "dequantization differs";

        std::vector<float> yp(rows), yv(rows);
        p.matvec(type, w.data(), n, 0, rows, ap, yp.data());
        v.matvec(type, w.data(), n, 0, rows, av, yv.data());
        const std::vector<double> a = activation_values(ap);
        for (int64_t r = 0; r < rows; ++r) {
          p.dequantize_row(type, w.data() + static_cast<size_t>(r) * ggml_row_bytes(type, n), dp.data(), n);
          double mag = 0;
          for (int64_t i = 0; i < n; ++i) mag += std::fabs(dp[i] * a[i]);
          if (bit_identical_across_isas(type)) {
            EXPECT_EQ(yp[r], yv[r]) << "row " << r;  // exact integer sums, same f32 combination
          } else {
            EXPECT_NEAR(yp[r], yv[r], 2e-6 * mag + 1e-12) << "row " << r;
          }
        }
      }
    }
  }
}

// The order rule by vendor and family: one row at a time only on AMD before Zen 5 (family 25 is
// Zen 3/4, 26 Zen 5), two far streams on Intel and on Zen 5.
TEST(Quant, Dense16OrderIsOneRowOnlyOnAmdBeforeZen5) {
  CpuFeatures f;
  f.vendor = "GenuineIntel";
  f.family = 6;
  EXPECT_EQ(dense16_order_for(f), Dense16Order::kTwoStreams);
  f.vendor = "AuthenticAMD";
  for (unsigned family : {23u, 25u}) {
    f.family = family;
    EXPECT_EQ(dense16_order_for(f), Dense16Order::kOneRow) << "family " << family;
  }
  for (unsigned family : {26u, 27u}) {
    f.family = family;
    EXPECT_EQ(dense16_order_for(f), Dense16Order::kTwoStreams) << "family " << family;
  }
  EXPECT_EQ(dense16_order_for(CpuFeatures{}), Dense16Order::kTwoStreams);
}

// BF16's product by the rule: vdpbf16ps only where the order is one row at a time and the CPU has
// AVX512-BF16 (Zen 4); FMA on Zen 5 and Intel even with AVX512-BF16, and without it.
TEST(Quant, Dense16KernelTakesVdpbf16psOnlyWithOneRowAndAvx512Bf16) {
  CpuFeatures f;
  f.vendor = "AuthenticAMD";
  f.family = 25;
  EXPECT_EQ(dense16_kernel_for(f), (Dense16Kernel{Dense16Order::kOneRow, Bf16Product::kFma}));
  f.avx512bf16 = true;
  EXPECT_EQ(dense16_kernel_for(f), (Dense16Kernel{Dense16Order::kOneRow, Bf16Product::kDot}));
  f.family = 26;
  EXPECT_EQ(dense16_kernel_for(f), (Dense16Kernel{Dense16Order::kTwoStreams, Bf16Product::kFma}));
  f.vendor = "GenuineIntel";
  f.family = 6;
  EXPECT_EQ(dense16_kernel_for(f), (Dense16Kernel{Dense16Order::kTwoStreams, Bf16Product::kFma}));
}

// KAKEYA_DENSE16's values: an order alone (BF16's product by the rule for that order), or an order
// and a product; anything else, or vdpbf16ps on a CPU without AVX512-BF16, names no kernel and
// leaves *kernel as it was.
TEST(Quant, Dense16EnvValuesNameAnOrderAndAProduct) {
  CpuFeatures zen5;
  zen5.vendor = "AuthenticAMD";
  zen5.family = 26;
  zen5.avx512bf16 = true;
  const Dense16Kernel kOneDot{Dense16Order::kOneRow, Bf16Product::kDot};
  const Dense16Kernel kOneFma{Dense16Order::kOneRow, Bf16Product::kFma};
  const Dense16Kernel kTwoDot{Dense16Order::kTwoStreams, Bf16Product::kDot};
  const Dense16Kernel kTwoFma{Dense16Order::kTwoStreams, Bf16Product::kFma};
  const std::vector<std::pair<const char*, Dense16Kernel>> named = {
      {nullptr, kTwoFma},          {"", kTwoFma},
      {"one-row", kOneDot},        {"two-streams", kTwoFma},
      {"one-row+fma", kOneFma},    {"one-row+vdpbf16ps", kOneDot},
      {"two-streams+fma", kTwoFma}, {"two-streams+vdpbf16ps", kTwoDot}};
  for (const auto& [value, want] : named) {
    Dense16Kernel k{Dense16Order::kOneRow, Bf16Product::kFma};
    EXPECT_TRUE(parse_dense16(value, zen5, &k)) << (value ? value : "(unset)");
    EXPECT_EQ(k, want) << (value ? value : "(unset)");
  }
  for (const char* bad : {"one_row", "One-Row", "two-streams+", "+fma", "one-row+fma+fma", "two-streams+amx",
                          "one-row ", "two"}) {
    Dense16Kernel k = kTwoDot;
    EXPECT_FALSE(parse_dense16(bad, zen5, &k)) << bad;
    EXPECT_EQ(k, kTwoDot) << bad;
  }
  CpuFeatures no_bf16 = zen5;
  no_bf16.avx512bf16 = false;
  Dense16Kernel k = kTwoFma;
  EXPECT_FALSE(parse_dense16("one-row+vdpbf16ps", no_bf16, &k));
  EXPECT_TRUE(parse_dense16("one-row", no_bf16, &k));
  EXPECT_EQ(k, kOneFma);
}

// The AVX-512 F16/BF16 mat-vec walks rows in two orders (two far streams with widened activations,
// or one row at a time with half activations); the vendor and family rule picks one, and both must
// give the same bits for every row of every range, the 64- and 16-column steps and the scalar tail
// alike. BF16 by vdpbf16ps (on a CPU with AVX512-BF16) pairs neighbouring columns in its lanes:
// there both orders must give the same bits as each other, for every row whatever range it is
// computed in, and lie within the f32 summation bound of the exact dot product (the products are
// exact). The set's vec_dot agrees with the kernel it uses.
TEST(Quant, Avx512DenseRowOrdersAreBitIdentical) {
  if (!kernel_isa_available(KernelIsa::Avx512)) GTEST_SKIP() << "CPU cannot run the AVX-512 kernels";
  Dense16Kernel from_env;
  dense16_env(&from_env);
  EXPECT_EQ(avx512_dense16_kernel(), from_env)
      << "vendor " << cpu_features().vendor << " family " << cpu_features().family;
  std::mt19937 rng(7);
  const bool has_dot = cpu_features().avx512bf16;
  for (GgmlType type : {GgmlType::F16, GgmlType::BF16}) {
    for (int64_t n : std::vector<int64_t>{8, 16, 40, 100, 112, 1000, 2048}) {
      SCOPED_TRACE(std::string(ggml_type_name(type)) + " n=" + std::to_string(n));
      const int64_t rows = 37;
      std::vector<uint8_t> w;
      for (int r = 0; r < rows; ++r) {
        auto row = random_row(type, n, rng);
        w.insert(w.end(), row.begin(), row.end());
      }
      const auto x = random_activations(n, static_cast<uint32_t>(n) + 1, 0.7f);
      ActivationBuffer act;
      quant_kernels(KernelIsa::Avx512).quantize_activations(type, x.data(), n, act);
      const Dense16Kernel one_fma{Dense16Order::kOneRow, Bf16Product::kFma};
      const Dense16Kernel two_fma{Dense16Order::kTwoStreams, Bf16Product::kFma};
      const Dense16Kernel one_dot{Dense16Order::kOneRow, Bf16Product::kDot};
      const Dense16Kernel two_dot{Dense16Order::kTwoStreams, Bf16Product::kDot};
      const bool dot = type == GgmlType::BF16 && has_dot;
      std::vector<float> whole_one(static_cast<size_t>(rows)), whole_dot(static_cast<size_t>(rows));
      avx512_matvec_dense16(one_fma, type, w.data(), n, 0, rows, act, whole_one.data());
      if (dot) avx512_matvec_dense16(one_dot, type, w.data(), n, 0, rows, act, whole_dot.data());
      for (auto [r0, r1] : std::vector<std::pair<int64_t, int64_t>>{{0, rows}, {3, 36}, {5, 6}, {10, 20}}) {
        const size_t m = static_cast<size_t>(r1 - r0);
        std::vector<float> two(m, -1.0f), one(m, -2.0f), two_d(m, -3.0f), one_d(m, -4.0f);
        avx512_matvec_dense16(two_fma, type, w.data(), n, r0, r1, act, two.data());
        avx512_matvec_dense16(one_fma, type, w.data(), n, r0, r1, act, one.data());
        if (dot) {
          avx512_matvec_dense16(two_dot, type, w.data(), n, r0, r1, act, two_d.data());
          avx512_matvec_dense16(one_dot, type, w.data(), n, r0, r1, act, one_d.data());
        }
        for (size_t i = 0; i < m; ++i) {
          const int64_t r = r0 + static_cast<int64_t>(i);
          EXPECT_EQ(std::memcmp(&one[i], &whole_one[static_cast<size_t>(r)], 4), 0) << "row " << r;
          EXPECT_EQ(std::memcmp(&two[i], &one[i], 4), 0) << "row " << r << ": " << two[i] << " vs " << one[i];
          if (!dot) continue;
          EXPECT_EQ(std::memcmp(&one_d[i], &whole_dot[static_cast<size_t>(r)], 4), 0) << "row " << r;
          EXPECT_EQ(std::memcmp(&two_d[i], &one_d[i], 4), 0) << "row " << r << ": " << two_d[i] << " vs " << one_d[i];
          const uint8_t* row = w.data() + static_cast<size_t>(r) * ggml_row_bytes(type, n);
          double exact = 0.0, magnitude = 0.0;
          for (int64_t k = 0; k < n; ++k) {
            uint16_t wk, xk;
            std::memcpy(&wk, row + 2 * k, 2);
            std::memcpy(&xk, act.bytes.data() + 2 * k, 2);
            const double p = static_cast<double>(bf16_to_fp32(wk)) * static_cast<double>(bf16_to_fp32(xk));
            exact += p;
            magnitude += std::fabs(p);
          }
          // Recursive f32 summation of n exact terms: |error| <= (n - 1) u sum|p| (u = 2^-24).
          const double bound = static_cast<double>(n) * std::ldexp(1.0, -24) * magnitude;
          EXPECT_LE(std::fabs(static_cast<double>(one_d[i]) - exact), bound) << "row " << r;
          EXPECT_LE(std::fabs(static_cast<double>(one[i]) - exact), bound) << "row " << r;
        }
        // Each agrees with the set's own vec_dot when it is the kernel the set takes.
        const Dense16Kernel chosen_kernel = avx512_dense16_kernel();
        const bool chosen_dot = type == GgmlType::BF16 && chosen_kernel.bf16 == Bf16Product::kDot;
        const std::vector<float>& chosen = chosen_dot ? one_d : one;
        for (int64_t r = r0; r < r1; ++r) {
          const float d = quant_kernels(KernelIsa::Avx512).vec_dot(
              type, w.data() + static_cast<size_t>(r) * ggml_row_bytes(type, n), act);
          EXPECT_EQ(d, chosen[static_cast<size_t>(r - r0)]) << "row " << r;
        }
      }
    }
  }
}

// Q8_K activations (the K-quants' vec_dot_type) from every set equal ggml's scalar reference on
// the inputs where a vectorized max and rounding could part from it: an all-zero block, a
// magnitude tie between signs (the first one sets the sign of the scale), values landing on .5
// after scaling (ties to even), infinities and the default NaN (nearest_int gives it 0).
TEST(Quant, Q8KActivationsMatchTheReferenceOnEdgeInputs) {
  std::vector<std::vector<float>> cases;
  cases.push_back(std::vector<float>(512, 0.0f));
  std::vector<float> tie = random_activations(256, 5, 0.5f);
  tie[40] = -2.0f;
  tie[200] = 2.0f;
  cases.push_back(tie);
  std::vector<float> halves(256);
  for (int j = 0; j < 256; ++j) halves[static_cast<size_t>(j)] = static_cast<float>((j % 254) - 127) + 0.5f;
  halves[3] = -127.0f;  // max: iscale = 1, so every other value is an exact .5 tie
  cases.push_back(halves);
  std::vector<float> odd = random_activations(512, 6);
  odd[7] = std::numeric_limits<float>::quiet_NaN();
  odd[300] = std::numeric_limits<float>::infinity();
  odd[301] = std::numeric_limits<float>::quiet_NaN();
  cases.push_back(odd);
  for (size_t c = 0; c < cases.size(); ++c) {
    const std::vector<float>& x = cases[c];
    ActivationBuffer ref;
    quant_kernels(KernelIsa::Portable).quantize_activations(GgmlType::Q4_K, x.data(), static_cast<int64_t>(x.size()), ref);
    ASSERT_EQ(ref.vec_dot_type, GgmlType::Q8_K);
    for (KernelIsa isa : available_isas()) {
      ActivationBuffer got;
      quant_kernels(isa).quantize_activations(GgmlType::Q4_K, x.data(), static_cast<int64_t>(x.size()), got);
      EXPECT_EQ(got.bytes, ref.bytes) << "case " << c << ", " << kernel_isa_name(isa);
    }
  }
  // The tie: the first of {-2, +2} is negative, so iscale = -127/-2 > 0 and q(+2) = 127.
  ActivationBuffer ref;
  quant_kernels(KernelIsa::Portable).quantize_activations(GgmlType::Q4_K, cases[1].data(), 256, ref);
  const auto* b = reinterpret_cast<const BlockQ8_K*>(ref.bytes.data());
  EXPECT_EQ(b->qs[40], -127);
  EXPECT_EQ(b->qs[200], 127);
}

TEST(Quant, SimdKernelSetsAgreeWithPortableOnReferenceTensors) {
  if (!kernel_isa_available(KernelIsa::Avx2)) GTEST_SKIP() << "CPU cannot run the AVX2 kernels";
  for (GgmlType type : all_weight_types()) {
    if (!reference_missing(type).empty()) continue;
    const TensorInfo* t = tensor_of_type(type);
    ASSERT_NE(t, nullptr);
    const int64_t n = t->ne[0];
    const auto x = random_activations(n, 31);
    ActivationBuffer act;
    quant_kernels(KernelIsa::Portable).quantize_activations(type, x.data(), n, act);
    std::vector<float> yp(static_cast<size_t>(t->rows())), yv(static_cast<size_t>(t->rows()));
    quant_kernels(KernelIsa::Portable).matvec(type, t->data, n, 0, t->rows(), act, yp.data());
    for (KernelIsa isa : available_isas()) {
      if (isa == KernelIsa::Portable) continue;
      quant_kernels(isa).matvec(type, t->data, n, 0, t->rows(), act, yv.data());
      if (bit_identical_across_isas(type)) {
        EXPECT_EQ(yp, yv) << ggml_type_name(type) << " " << kernel_isa_name(isa);
        continue;
      }
      double max_rel = 0;
      for (size_t r = 0; r < yp.size(); ++r)
        max_rel = std::max(max_rel, std::fabs(yp[r] - yv[r]) / (std::fabs(yp[r]) + 1e-3));
      EXPECT_LT(max_rel, 1e-4) << ggml_type_name(type) << " " << kernel_isa_name(isa);
    }
  }
}

}  // namespace
}  // namespace kakeya::engine

namespace kakeya::engine {
namespace {

// ---- packed (row-interleaved) Q4_0 / Q8_0 matrices ----

TEST(Quant, PackedLayoutRoundTripsAndDequantizesLikeRowMajor) {
  std::mt19937 rng(7);
  for (GgmlType type : {GgmlType::Q4_0, GgmlType::Q8_0}) {
    for (auto [rows, n] : std::vector<std::pair<int64_t, int64_t>>{{1, 96}, {16, 128}, {37, 96}, {37, 64}}) {
      SCOPED_TRACE(std::string(ggml_type_name(type)) + " rows=" + std::to_string(rows) + " n=" + std::to_string(n));
      std::vector<uint8_t> w;
      for (int64_t r = 0; r < rows; ++r) {
        auto row = random_row(type, n, rng);
        w.insert(w.end(), row.begin(), row.end());
      }
      ASSERT_TRUE(packable(type, n));
      const size_t groups = static_cast<size_t>((rows + kPackRows - 1) / kPackRows);
      // Blocks go in pairs: an odd block count is padded with one empty block per group.
      const auto blocks = static_cast<size_t>(n / 32 + (n / 32) % 2);
      EXPECT_EQ(packed_bytes(type, n, rows), groups * kPackRows * blocks * ggml_block_bytes(type));
      std::vector<uint8_t> packed(packed_bytes(type, n, rows), 0xAB);
      pack_rows(type, w.data(), n, rows, packed.data());
      const size_t rb = ggml_row_bytes(type, n);
      std::vector<uint8_t> back(rb);
      std::vector<float> want(static_cast<size_t>(n)), got(static_cast<size_t>(n));
      for (int64_t r = 0; r < rows; ++r) {
        unpack_row(type, packed.data(), n, r, back.data());
        EXPECT_EQ(std::memcmp(back.data(), w.data() + static_cast<size_t>(r) * rb, rb), 0) << "row " << r;
        dequantize_row(type, w.data() + static_cast<size_t>(r) * rb, want.data(), n);
        dequantize_packed_row(type, packed.data(), n, r, got.data());
        EXPECT_EQ(std::memcmp(want.data(), got.data(), want.size() * 4), 0) << "row " << r;
      }
    }
  }
  EXPECT_FALSE(packable(GgmlType::Q4_K, 256));
  EXPECT_FALSE(packable(GgmlType::F16, 64));
  EXPECT_FALSE(packable(GgmlType::Q4_0, 48));
}

// Every kernel set's packed mat-vec equals the portable row-major kernel bit for bit, for whole
// matrices and for ranges that start and end inside a group.
TEST(Quant, PackedMatvecIsBitIdenticalToPortableOnEveryIsa) {
  std::mt19937 rng(21);
  const QuantKernels& portable = quant_kernels(KernelIsa::Portable);
  int checked = 0;
  for (GgmlType type : {GgmlType::Q4_0, GgmlType::Q8_0}) {
    for (int64_t n : {32, 256, 2048}) {
      const int64_t rows = 45;
      std::vector<uint8_t> w;
      for (int64_t r = 0; r < rows; ++r) {
        auto row = random_row(type, n, rng);
        w.insert(w.end(), row.begin(), row.end());
      }
      std::vector<uint8_t> packed(packed_bytes(type, n, rows));
      pack_rows(type, w.data(), n, rows, packed.data());
      const auto x = random_activations(n, static_cast<uint32_t>(n + rows), 0.8f);
      ActivationBuffer act;
      portable.quantize_activations(type, x.data(), n, act);
      std::vector<float> want(static_cast<size_t>(rows));
      portable.matvec(type, w.data(), n, 0, rows, act, want.data());
      for (KernelIsa isa : available_isas()) {
        SCOPED_TRACE(std::string(ggml_type_name(type)) + " n=" + std::to_string(n) + " " + kernel_isa_name(isa));
        for (auto [r0, r1] : std::vector<std::pair<int64_t, int64_t>>{{0, rows}, {3, 21}, {16, 45}, {5, 6}, {32, 40}}) {
          std::vector<float> got(static_cast<size_t>(r1 - r0), -1.0f);
          quant_kernels(isa).matvec_packed(type, packed.data(), n, r0, r1, act, got.data());
          for (int64_t r = r0; r < r1; ++r) {
            ASSERT_EQ(got[static_cast<size_t>(r - r0)], want[static_cast<size_t>(r)])
                << "row " << r << " of range [" << r0 << ", " << r1 << ")";
          }
          ++checked;
        }
      }
      // Every path of the AVX-512 set, not only the one this CPU's vendor rule takes.
      if (!kernel_isa_available(KernelIsa::Avx512)) continue;
      for (PackedPath path : {PackedPath::kTwoStreams, PackedPath::kOneStream, PackedPath::kAvx2}) {
        SCOPED_TRACE(std::string(ggml_type_name(type)) + " n=" + std::to_string(n) + " avx512 path " +
                     std::to_string(static_cast<int>(path)));
        for (auto [r0, r1] : std::vector<std::pair<int64_t, int64_t>>{{0, rows}, {3, 21}, {16, 45}, {5, 6}}) {
          std::vector<float> got(static_cast<size_t>(r1 - r0), -1.0f);
          avx512_matvec_packed_path(path, type, packed.data(), n, r0, r1, act, got.data());
          for (int64_t r = r0; r < r1; ++r) {
            ASSERT_EQ(got[static_cast<size_t>(r - r0)], want[static_cast<size_t>(r)])
                << "row " << r << " of range [" << r0 << ", " << r1 << ")";
          }
          ++checked;
        }
      }
    }
  }
  EXPECT_GE(checked, 30);
  if (kernel_isa_available(KernelIsa::Avx512)) {
    const bool amd = cpu_features().amd();
    EXPECT_EQ(avx512_packed_path(GgmlType::Q4_0), amd ? PackedPath::kOneStream : PackedPath::kTwoStreams);
    EXPECT_EQ(avx512_packed_path(GgmlType::Q8_0), amd ? PackedPath::kAvx2 : PackedPath::kTwoStreams);
  }
}

}  // namespace
}  // namespace kakeya::engine

namespace kakeya::engine {
namespace {

// The attention dot of every kernel set against float64 (lengths with and without a tail), over
// rows of a strided matrix (two blocks of eight and a rest in the AVX sets): each row as a
// single-row call gives, bit for bit.
TEST(Quant, DotF32RowsAgreesWithFloat64OnEveryIsa) {
  for (KernelIsa isa : available_isas()) {
    const QuantKernels& k = quant_kernels(isa);
    for (int64_t n : {1, 7, 64, 131}) {
      SCOPED_TRACE(std::string(kernel_isa_name(isa)) + " n=" + std::to_string(n));
      constexpr size_t kRows = 19;
      const size_t stride = static_cast<size_t>(n) + 3;
      const auto q = random_activations(n, 5);
      const auto m = random_activations(static_cast<int64_t>(kRows * stride), 6);
      std::vector<float> dots(kRows);
      k.dot_f32_rows(q.data(), m.data(), stride, kRows, n, dots.data());
      for (size_t r = 0; r < kRows; ++r) {
        const float* row = m.data() + r * stride;
        double want = 0, mag = 0;
        for (int64_t i = 0; i < n; ++i) {
          want += static_cast<double>(q[i]) * row[i];
          mag += std::fabs(static_cast<double>(q[i]) * row[i]);
        }
        EXPECT_NEAR(dots[r], want, 1e-6 * mag + 1e-9) << "row " << r;
        float one = 0;
        k.dot_f32_rows(q.data(), row, stride, 1, n, &one);
        EXPECT_EQ(one, dots[r]) << "row " << r << " alone";
      }
    }
  }
}

// The AVX-512 set's attention dot runs the AVX2 set's accumulation in 16-lane registers: every
// result is the AVX2 set's bit for bit (head sizes that are whole 8-element steps, with and
// without 32-element steps, over rows of a strided matrix: two blocks of eight and a rest), so
// attention gives the same bits on AVX2 and AVX-512 hosts.
TEST(Quant, DotF32RowsOfAvx512IsAvx2BitForBit) {
  if (!kernel_isa_available(KernelIsa::Avx512)) GTEST_SKIP() << "CPU cannot run the AVX-512 kernels";
  const QuantKernels& avx2 = quant_kernels(KernelIsa::Avx2);
  const QuantKernels& avx512 = quant_kernels(KernelIsa::Avx512);
  for (int64_t n : {8, 24, 40, 64, 80, 128, 136}) {
    SCOPED_TRACE("n=" + std::to_string(n));
    constexpr size_t kRows = 19;
    const size_t stride = static_cast<size_t>(n) + 5;
    const auto q = random_activations(n, 7);
    const auto m = random_activations(static_cast<int64_t>(kRows * stride), 8);
    std::vector<float> want(kRows), got(kRows, -1.0f);
    avx2.dot_f32_rows(q.data(), m.data(), stride, kRows, n, want.data());
    avx512.dot_f32_rows(q.data(), m.data(), stride, kRows, n, got.data());
    for (size_t r = 0; r < kRows; ++r)
      EXPECT_EQ(std::bit_cast<uint32_t>(got[r]), std::bit_cast<uint32_t>(want[r])) << "row " << r;
  }
}

// Distance in representable floats between a (finite or inf) and the f32 rounding of b.
int64_t ulps_from(float a, double b) {
  auto ordered = [](float f) {
    int32_t i;
    std::memcpy(&i, &f, sizeof i);
    return i < 0 ? static_cast<int64_t>(INT32_MIN) - i : static_cast<int64_t>(i);
  };
  return std::llabs(ordered(a) - ordered(static_cast<float>(b)));
}

// exp_f32 against e^x in float64 over its normal range, [−87.33654, 88.3762] (every 97th f32
// bit pattern of each sign, and both ends), and at its edges: 0 below, +inf above, NaN for NaN.
TEST(Quant, ExpF32IsWithinOneUlpOfExp) {
  int64_t worst = 0;
  float worst_x = 0;
  auto check = [&](float x) {
    const int64_t u = ulps_from(exp_f32(x), std::exp(static_cast<double>(x)));
    if (u > worst) worst = u, worst_x = x;
  };
  for (float end : {88.3762f, -87.33654f}) {  // bit patterns rise from ±0 to each end
    const float zero = end < 0 ? -0.0f : 0.0f;
    uint32_t a, b;
    std::memcpy(&a, &zero, 4);
    std::memcpy(&b, &end, 4);
    for (uint32_t bits = a; bits < b; bits += 97) {
      float x;
      std::memcpy(&x, &bits, 4);
      check(x);
    }
    check(end);
  }
  EXPECT_LE(worst, 1) << "at x = " << worst_x;
  EXPECT_EQ(exp_f32(0.0f), 1.0f);
  EXPECT_EQ(exp_f32(-0.0f), 1.0f);
  EXPECT_EQ(exp_f32(-87.5f), 0.0f);
  EXPECT_EQ(exp_f32(-std::numeric_limits<float>::infinity()), 0.0f);
  EXPECT_EQ(exp_f32(88.5f), std::numeric_limits<float>::infinity());
  EXPECT_EQ(exp_f32(std::numeric_limits<float>::infinity()), std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(exp_f32(std::numeric_limits<float>::quiet_NaN())));
}

// Every set's swiglu_f32 is the portable one bit for bit (lengths that leave every tail of the
// 8-lane loop; gates across the exp's range, past both of its ends, ±0, denormals, ±inf, NaN),
// and within a few ulp of g / (1 + e^−g) · u in float64.
TEST(Quant, SwigluOfEverySetIsThePortableBitForBit) {
  std::mt19937 rng(17);
  std::uniform_real_distribution<float> wide(-95.0f, 95.0f), narrow(-6.0f, 6.0f);
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> special = {0.0f, -0.0f, 1e-40f, -1e-40f, 87.33654f, 87.34f, -88.3762f, -88.38f,
                                      95.0f, -95.0f, inf, -inf, nan, 1.0f, -1.0f, 20.0f, -20.0f};
  for (int64_t n : {0, 1, 7, 8, 9, 17, 64, 133, (1 << 16) + 5}) {
    std::vector<float> gate(static_cast<size_t>(n)), up(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      gate[i] = i < static_cast<int64_t>(special.size()) && n > 100 ? special[i] : (i % 3 == 0 ? wide(rng) : narrow(rng));
      up[i] = narrow(rng);
    }
    std::vector<float> want = gate;
    quant_kernels(KernelIsa::Portable).swiglu_f32(want.data(), up.data(), n);
    for (int64_t i = 0; i < n; ++i) {
      const double g = gate[i];
      const double ref = g / (1.0 + std::exp(-g)) * up[i];
      if (std::isnan(ref)) {
        EXPECT_TRUE(std::isnan(want[i])) << "gate " << gate[i];
      } else if (std::isinf(ref)) {
        EXPECT_EQ(want[i], ref) << "gate " << gate[i];
      } else if (std::isfinite(ref) && std::fabs(ref) > 1e-30) {
        EXPECT_LE(ulps_from(want[i], ref), 4) << "gate " << gate[i] << " up " << up[i];
      } else {
        EXPECT_NEAR(want[i], ref, 1e-30) << "gate " << gate[i];
      }
    }
    for (KernelIsa isa : available_isas()) {
      SCOPED_TRACE(std::string(kernel_isa_name(isa)) + " n=" + std::to_string(n));
      std::vector<float> got = gate;
      quant_kernels(isa).swiglu_f32(got.data(), up.data(), n);
      for (int64_t i = 0; i < n; ++i) {
        if (std::isnan(want[i])) {
          EXPECT_TRUE(std::isnan(got[i])) << "gate " << gate[i];
        } else {
          EXPECT_EQ(std::memcmp(&got[i], &want[i], sizeof(float)), 0)
              << "gate " << gate[i] << ": " << got[i] << " vs the portable " << want[i];
        }
      }
    }
  }
}

// Every set's exp_sum_f32 is the portable one bit for bit, values and sum (lengths that leave
// every tail of the 8-lane loop; scores below a shift, −inf among them as masked slots), and
// within 1 ulp per value and 2e-7 of the sum of e^(x − shift) in float64.
TEST(Quant, ExpSumOfEverySetIsThePortableBitForBit) {
  std::mt19937 rng(23);
  std::uniform_real_distribution<float> score(-30.0f, 4.0f);
  for (int64_t n : {0, 1, 5, 8, 13, 64, 301, 4103}) {
    std::vector<float> row(static_cast<size_t>(n));
    for (float& v : row) v = score(rng);
    if (n > 4) row[3] = -std::numeric_limits<float>::infinity();
    const float shift = n > 0 ? *std::max_element(row.begin(), row.end()) : 0.0f;
    std::vector<float> want = row;
    const double want_sum = quant_kernels(KernelIsa::Portable).exp_sum_f32(want.data(), n, shift);
    double ref_sum = 0;
    for (int64_t i = 0; i < n; ++i) {
      const double ref = std::exp(static_cast<double>(row[i] - shift));
      ref_sum += ref;
      EXPECT_LE(ulps_from(want[i], ref), 1) << "score " << row[i];
    }
    EXPECT_NEAR(want_sum, ref_sum, 2e-7 * ref_sum) << "n=" << n;
    for (KernelIsa isa : available_isas()) {
      SCOPED_TRACE(std::string(kernel_isa_name(isa)) + " n=" + std::to_string(n));
      std::vector<float> got = row;
      const double sum = quant_kernels(isa).exp_sum_f32(got.data(), n, shift);
      EXPECT_EQ(std::memcmp(&sum, &want_sum, sizeof sum), 0) << sum << " vs the portable " << want_sum;
      EXPECT_TRUE(std::equal(got.begin(), got.end(), want.begin(), [](float a, float b) {
        return std::memcmp(&a, &b, sizeof a) == 0;
      }));
    }
  }
}

// Every set's scale_f32 is x[i]·s rounded once, bit for bit (lengths that leave every tail of the
// 8- and 16-lane loops, from an odd offset; denormal, infinite and NaN elements), and touches
// nothing past x[n).
TEST(Quant, ScaleF32OfEverySetIsEachProductRounded) {
  std::mt19937 rng(29);
  std::uniform_real_distribution<float> value(-1e3f, 1e3f);
  const float s = 1.0f / 3.0f;
  for (int64_t n : {0, 1, 7, 8, 15, 16, 17, 31, 64, 301}) {
    std::vector<float> x(static_cast<size_t>(n) + 2);
    for (float& v : x) v = value(rng);
    if (n > 3) {
      x[1] = std::numeric_limits<float>::denorm_min();
      x[2] = std::numeric_limits<float>::infinity();
      x[3] = std::numeric_limits<float>::quiet_NaN();
    }
    for (KernelIsa isa : available_isas()) {
      SCOPED_TRACE(std::string(kernel_isa_name(isa)) + " n=" + std::to_string(n));
      std::vector<float> got = x;
      quant_kernels(isa).scale_f32(got.data() + 1, n, s);
      for (size_t i = 0; i < x.size(); ++i) {
        const bool inside = i >= 1 && i < static_cast<size_t>(n) + 1;
        const float want = inside ? x[i] * s : x[i];
        if (std::isnan(want)) {
          EXPECT_TRUE(std::isnan(got[i])) << "element " << i;
        } else {
          EXPECT_EQ(std::memcmp(&got[i], &want, sizeof(float)), 0) << "element " << i << ": " << got[i] << " vs " << want;
        }
      }
    }
  }
}

// max_f32 is the maximum wherever it lies: in any of the 8 lanes, in the tail past the last whole
// 8, or nowhere (then init); equal elements, -inf and a larger init included.
TEST(Quant, MaxF32FindsTheMaximumInEveryLaneAndTheTail) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-50.0f, 50.0f);
  for (size_t n = 0; n <= 41; ++n) {
    std::vector<float> x(n);
    for (float& v : x) v = dist(rng);
    EXPECT_EQ(max_f32(x.data(), n, -INFINITY), n == 0 ? -INFINITY : *std::max_element(x.begin(), x.end())) << n;
    EXPECT_EQ(max_f32(x.data(), n, 1000.0f), 1000.0f) << n;
    for (size_t at = 0; at < n; ++at) {
      std::vector<float> y = x;
      y[at] = 60.0f + static_cast<float>(at);
      EXPECT_EQ(max_f32(y.data(), n, -INFINITY), y[at]) << "n " << n << ", maximum at " << at;
      std::fill(y.begin(), y.end(), -INFINITY);
      y[at] = -3.0f;
      EXPECT_EQ(max_f32(y.data(), n, -INFINITY), -3.0f) << "n " << n << ", the only finite value at " << at;
    }
  }
}

}  // namespace
}  // namespace kakeya::engine
