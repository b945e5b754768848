// GGUF reader: the bundled models against their reference JSON (hparams, tensor types and shapes,
// sha256), every metadata value type through a byte-level builder, and malformed input
// (truncation at every header offset, byte flips, hostile counts) returning errors with offsets.

#include "engine/gguf.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/harness/paths.h"

namespace kakeya::engine {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

std::vector<uint8_t> read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

json read_json(const fs::path& p) {
  std::ifstream in(p);
  return json::parse(in);
}

// Every *.ref.json with the GGUF it describes (stories260K lives in models/).
std::vector<std::pair<fs::path, fs::path>> reference_models() {
  std::vector<std::pair<fs::path, fs::path>> out;
  const fs::path ref = testing::data_dir() / "reference";
  for (const auto& e : fs::directory_iterator(ref)) {
    const std::string name = e.path().filename().string();
    if (name.size() < 9 || name.substr(name.size() - 9) != ".ref.json") continue;
    const json j = read_json(e.path());
    fs::path model = ref / j.at("model_file").get<std::string>();
    if (!fs::exists(model)) model = testing::models_dir() / j.at("model_file").get<std::string>();
    out.emplace_back(e.path(), model);
  }
  return out;
}

// ---- byte-level GGUF builder ----
class Builder {
 public:
  Builder& raw(const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    bytes.insert(bytes.end(), b, b + n);
    return *this;
  }
  template <typename T>
  Builder& put(T v) {
    return raw(&v, sizeof v);
  }
  Builder& str(const std::string& s) {
    put<uint64_t>(s.size());
    return raw(s.data(), s.size());
  }
  Builder& header(uint32_t version, uint64_t n_tensors, uint64_t n_kv) {
    raw("GGUF", 4);
    put(version);
    put(n_tensors);
    return put(n_kv);
  }
  template <typename T>
  Builder& kv(const std::string& key, GgufValueType t, T v) {
    str(key);
    put(static_cast<uint32_t>(t));
    return put(v);
  }
  Builder& kv_str(const std::string& key, const std::string& v) {
    str(key);
    put(static_cast<uint32_t>(GgufValueType::STRING));
    return str(v);
  }
  Builder& tensor(const std::string& name, std::vector<uint64_t> ne, uint32_t type, uint64_t offset) {
    str(name);
    put(static_cast<uint32_t>(ne.size()));
    for (uint64_t d : ne) put(d);
    put(type);
    return put(offset);
  }
  Builder& pad(size_t align) {
    while (bytes.size() % align != 0) bytes.push_back(0);
    return *this;
  }
  Result<GgufFile> parse() const { return GgufFile::from_memory(bytes.data(), bytes.size()); }
  std::vector<uint8_t> bytes;
};

// One F32 tensor "w" [4, 2] with values 0..7, default alignment, plus `extra_kv` pairs.
Builder small_model(uint32_t version = 3) {
  Builder b;
  b.header(version, 1, 1).kv_str("general.architecture", "llama");
  b.tensor("w", {4, 2}, 0, 0).pad(32);
  for (int i = 0; i < 8; ++i) b.put(static_cast<float>(i));
  return b;
}

void expect_offset_error(const Result<GgufFile>& r, const std::string& must_contain = "") {
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message.rfind("offset ", 0), 0u) << r.error().str();
  if (!must_contain.empty()) {
    EXPECT_NE(r.error().message.find(must_contain), std::string::npos) << r.error().str();
  }
}

// ---- the bundled models ----

TEST(Gguf, ReferenceModelsMatchTheirJson) {
  const auto models = reference_models();
  ASSERT_GE(models.size(), 8u);
  for (const auto& [ref_path, model_path] : models) {
    SCOPED_TRACE(model_path.string());
    const json ref = read_json(ref_path);
    auto f = GgufFile::open(model_path.string());
    ASSERT_TRUE(f.ok()) << f.error().str();
    EXPECT_EQ(f->version(), 3u);
    EXPECT_EQ(f->file_size(), ref.at("file_size_bytes").get<size_t>());
    EXPECT_EQ(f->sha256(), ref.at("sha256").get<std::string>());
    EXPECT_EQ(f->alignment(), 32u);
    EXPECT_EQ(f->data_offset() % 32, 0u);

    const json& hp = ref.at("hparams");
    EXPECT_EQ(f->get_string("general.architecture").value(), "llama");
    EXPECT_EQ(f->get_int("llama.embedding_length").value(), hp.at("n_embd").get<int64_t>());
    EXPECT_EQ(f->get_int("llama.feed_forward_length").value(), hp.at("n_ff").get<int64_t>());
    EXPECT_EQ(f->get_int("llama.block_count").value(), hp.at("n_layer").get<int64_t>());
    EXPECT_EQ(f->get_int("llama.attention.head_count").value(), hp.at("n_head").get<int64_t>());
    EXPECT_EQ(f->get_int("llama.attention.head_count_kv").value(), hp.at("n_head_kv").get<int64_t>());
    EXPECT_EQ(f->get_int("llama.context_length").value(), hp.at("n_ctx_train").get<int64_t>());
    EXPECT_EQ(f->get_int("llama.rope.dimension_count").value(), hp.at("rope_dimension_count").get<int64_t>());
    EXPECT_EQ(f->get_int("tokenizer.ggml.bos_token_id").value(), hp.at("bos_id").get<int64_t>());
    EXPECT_EQ(f->get_int("tokenizer.ggml.eos_token_id").value(), hp.at("eos_id").get<int64_t>());
    EXPECT_NEAR(f->get_float("llama.attention.layer_norm_rms_epsilon").value(), hp.at("rms_norm_eps").get<double>(),
                1e-12);
    EXPECT_EQ(f->has("llama.rope.freq_base"), hp.at("rope_freq_base_in_file").get<bool>());
    if (f->has("llama.rope.freq_base")) {
      EXPECT_EQ(f->get_float("llama.rope.freq_base").value(), hp.at("rope_freq_base").get<double>());
    }
    if (!hp.at("general.file_type").is_null()) {
      EXPECT_EQ(f->get_int("general.file_type").value(), hp.at("general.file_type").get<int64_t>());
    }
    EXPECT_EQ(f->get_array_size("tokenizer.ggml.tokens").value(), hp.at("n_vocab").get<uint64_t>());
    auto tokens = f->get_string_array("tokenizer.ggml.tokens");
    ASSERT_TRUE(tokens.ok());
    EXPECT_EQ(tokens->size(), hp.at("n_vocab").get<size_t>());
    EXPECT_EQ(tokens->at(1), "<s>");
    EXPECT_EQ(f->get_float_array("tokenizer.ggml.scores")->size(), tokens->size());
    EXPECT_EQ(f->get_int_array("tokenizer.ggml.token_type")->size(), tokens->size());

    const json& types = ref.at("tensor_types");
    const json& shapes = ref.at("tensor_shapes_ne");
    EXPECT_EQ(f->tensors().size(), types.size());
    const auto* base = reinterpret_cast<const uint8_t*>(f->tensors().front().data) - f->data_offset() -
                       f->tensors().front().offset;
    for (const auto& [name, type_name] : types.items()) {
      SCOPED_TRACE(name);
      const TensorInfo* t = f->find_tensor(name);
      ASSERT_NE(t, nullptr);
      EXPECT_EQ(t->type, ggml_type_from_name(type_name.get<std::string>().c_str()).value());
      EXPECT_EQ(t->ne, shapes.at(name).get<std::vector<int64_t>>());
      EXPECT_EQ(t->nbytes, ggml_row_bytes(t->type, t->ne[0]) * static_cast<size_t>(t->rows()));
      EXPECT_EQ(t->data, base + f->data_offset() + t->offset);
      EXPECT_LE(f->data_offset() + t->offset + t->nbytes, f->file_size());
    }
    EXPECT_EQ(f->find_tensor("no.such.tensor"), nullptr);
  }
}

TEST(Gguf, OpensEveryBundledModel) {
  int opened = 0;
  for (const auto& e : fs::directory_iterator(testing::models_dir())) {
    if (e.path().extension() != ".gguf") continue;
    SCOPED_TRACE(e.path().string());
    auto f = GgufFile::open(e.path().string());
    ASSERT_TRUE(f.ok()) << f.error().str();
    EXPECT_FALSE(f->tensors().empty());
    EXPECT_NE(f->find_tensor("token_embd.weight"), nullptr);
    EXPECT_EQ(f->sha256().size(), 64u);
    ++opened;
  }
  EXPECT_GE(opened, 2);
}

TEST(Gguf, Sha256MatchesSha256Sums) {
  std::ifstream sums(testing::data_dir() / "reference" / "SHA256SUMS");
  std::string hex, name;
  int checked = 0;
  while (sums >> hex >> name) {
    if (name.size() < 5 || name.substr(name.size() - 5) != ".gguf") continue;
    const fs::path p = testing::data_dir() / "reference" / name;
    if (!fs::exists(p)) continue;
    auto f = GgufFile::open(p.string());
    ASSERT_TRUE(f.ok()) << f.error().str();
    EXPECT_EQ(f->sha256(), hex) << name;
    EXPECT_EQ(f->sha256(), hex) << name << " (second call, cached)";
    ++checked;
  }
  EXPECT_GE(checked, 7);
}

// Resident bytes of the mapping that contains p (its "Rss:" in /proc/self/smaps): only that
// mapping, so libraries loaded meanwhile (OpenSSL on its first digest) do not count.
long mapping_rss_bytes(const void* p) {
  std::ifstream smaps("/proc/self/smaps");
  const auto addr = reinterpret_cast<uintptr_t>(p);
  std::string line;
  bool inside = false;
  while (std::getline(smaps, line)) {
    unsigned long lo = 0, hi = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx ", &lo, &hi) == 2 && line.find(':') > line.find(' ')) {
      inside = addr >= lo && addr < hi;
      continue;
    }
    long kb = 0;
    if (inside && std::sscanf(line.c_str(), "Rss: %ld kB", &kb) == 1) return kb * 1024;
  }
  return -1;
}

// release_pages drops the mapping's resident pages (the data stay readable, from the file), and
// sha256 reads the file without making the mapping resident again.
TEST(Gguf, ReleasePagesDropsResidentPagesAndSha256DoesNotTouchTheMapping) {
  auto f = GgufFile::open((testing::models_dir() / "niah-tiny-f32.gguf").string());
  ASSERT_TRUE(f.ok()) << f.error().str();
  // The tensor data region: from the first tensor's data to the end of the last one (~3.4 MB).
  const uint8_t* begin = nullptr;
  const uint8_t* end = nullptr;
  for (const TensorInfo& t : f->tensors()) {
    if (begin == nullptr || t.data < begin) begin = t.data;
    if (end == nullptr || t.data + t.nbytes > end) end = t.data + t.nbytes;
  }
  ASSERT_NE(begin, nullptr);
  const size_t bytes = static_cast<size_t>(end - begin);
  ASSERT_GT(bytes, size_t{2} << 20);
  auto checksum = [&] {
    uint64_t sum = 0;
    for (size_t i = 0; i < bytes; i += 64) sum += begin[i] * (i + 1);
    return sum;
  };
  const uint64_t before = checksum();  // every page of the region is resident now
  const long resident = mapping_rss_bytes(begin);
  ASSERT_GE(resident, static_cast<long>(bytes) - 8192) << "the mapping was not found in /proc/self/smaps";
  f->release_pages(begin, bytes);
  const long released = mapping_rss_bytes(begin);
  EXPECT_LT(released, resident - static_cast<long>(bytes / 2))
      << "mapping Rss " << resident << " -> " << released << " after releasing " << bytes << " bytes";
  EXPECT_FALSE(f->sha256().empty());
  EXPECT_LT(mapping_rss_bytes(begin), resident - static_cast<long>(bytes / 2)) << "sha256 made the mapping resident";
  EXPECT_EQ(checksum(), before);  // read back from the file
  f->release_pages(nullptr, 10);  // outside the mapping: no-op
}

TEST(Gguf, MoveKeepsTensorPointersValid) {
  auto f = GgufFile::open((testing::models_dir() / "stories260K-f32.gguf").string());
  ASSERT_TRUE(f.ok());
  const TensorInfo* t = f->find_tensor("output_norm.weight");
  ASSERT_NE(t, nullptr);
  const uint8_t* data = t->data;
  float first;
  std::memcpy(&first, data, 4);
  GgufFile moved = std::move(f).value();
  const TensorInfo* t2 = moved.find_tensor("output_norm.weight");
  ASSERT_NE(t2, nullptr);
  EXPECT_EQ(t2->data, data);
  float again;
  std::memcpy(&again, t2->data, 4);
  EXPECT_EQ(first, again);
}

TEST(Gguf, OpenMissingFileIsIoError) {
  auto f = GgufFile::open("/nonexistent/model.gguf");
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.error().code, "io");
  EXPECT_NE(f.error().message.find("/nonexistent/model.gguf"), std::string::npos);
}

TEST(Gguf, OpenEmptyFileIsTruncationError) {
  testing::TempDir dir;
  const fs::path p = dir.path() / "empty.gguf";
  std::ofstream(p).close();
  auto f = GgufFile::open(p.string());
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.error().code, "gguf_truncated");
  EXPECT_NE(f.error().message.find("offset 0"), std::string::npos) << f.error().message;
}

// ---- metadata value types ----

TEST(Gguf, EveryMetadataValueType) {
  Builder b;
  b.header(3, 0, 17);
  b.kv<uint8_t>("u8", GgufValueType::U8, 200);
  b.kv<int8_t>("i8", GgufValueType::I8, -100);
  b.kv<uint16_t>("u16", GgufValueType::U16, 60000);
  b.kv<int16_t>("i16", GgufValueType::I16, -30000);
  b.kv<uint32_t>("u32", GgufValueType::U32, 4000000000u);
  b.kv<int32_t>("i32", GgufValueType::I32, -2000000000);
  b.kv<float>("f32", GgufValueType::F32, 0.25f);
  b.kv<uint8_t>("bool", GgufValueType::BOOL, 1);
  b.kv_str("string", "h\xC3\xA9llo");
  b.kv<uint64_t>("u64", GgufValueType::U64, 1ull << 40);
  b.kv<int64_t>("i64", GgufValueType::I64, -(1ll << 50));
  b.kv<double>("f64", GgufValueType::F64, -1.5);
  b.kv<uint64_t>("u64_huge", GgufValueType::U64, std::numeric_limits<uint64_t>::max());
  // array<i16> [3, -4]
  b.str("arr_i16").put<uint32_t>(9).put<uint32_t>(3).put<uint64_t>(2).put<int16_t>(3).put<int16_t>(-4);
  // array<string> ["a", "bc", ""]
  b.str("arr_str").put<uint32_t>(9).put<uint32_t>(8).put<uint64_t>(3).str("a").str("bc").str("");
  // array<array<u8>> [[1, 2], [], [3]]
  b.str("arr_nested").put<uint32_t>(9).put<uint32_t>(9).put<uint64_t>(3);
  b.put<uint32_t>(0).put<uint64_t>(2).put<uint8_t>(1).put<uint8_t>(2);
  b.put<uint32_t>(0).put<uint64_t>(0);
  b.put<uint32_t>(0).put<uint64_t>(1).put<uint8_t>(3);
  // array<f32> of 20 elements (longer than metadata_json's default head)
  b.str("arr_f32").put<uint32_t>(9).put<uint32_t>(6).put<uint64_t>(20);
  for (int i = 0; i < 20; ++i) b.put<float>(static_cast<float>(i) * 0.5f);

  auto f = b.parse();
  ASSERT_TRUE(f.ok()) << f.error().str();
  EXPECT_EQ(f->keys().size(), 17u);
  EXPECT_EQ(f->keys().front(), "u8");
  EXPECT_EQ(f->keys().back(), "arr_f32");
  EXPECT_EQ(f->get_int("u8").value(), 200);
  EXPECT_EQ(f->get_int("i8").value(), -100);
  EXPECT_EQ(f->get_int("u16").value(), 60000);
  EXPECT_EQ(f->get_int("i16").value(), -30000);
  EXPECT_EQ(f->get_int("u32").value(), 4000000000ll);
  EXPECT_EQ(f->get_int("i32").value(), -2000000000);
  EXPECT_EQ(f->get_int("u64").value(), 1ll << 40);
  EXPECT_EQ(f->get_int("i64").value(), -(1ll << 50));
  EXPECT_EQ(f->get_float("f32").value(), 0.25);
  EXPECT_EQ(f->get_float("f64").value(), -1.5);
  EXPECT_EQ(f->get_float("i16").value(), -30000.0);  // ints are accepted as floats
  EXPECT_TRUE(f->get_bool("bool").value());
  EXPECT_EQ(f->get_string("string").value(), "h\xC3\xA9llo");
  EXPECT_EQ(f->value_type("arr_nested"), GgufValueType::ARRAY);
  EXPECT_EQ(f->get_array_type("arr_nested").value(), GgufValueType::ARRAY);

  EXPECT_EQ(f->get_int("u64_huge").error().code, "out_of_range");
  EXPECT_EQ(f->get_int("missing").error().code, "not_found");
  EXPECT_EQ(f->get_int("f32").error().code, "type_mismatch");
  EXPECT_EQ(f->get_int("bool").error().code, "type_mismatch");
  EXPECT_EQ(f->get_bool("u8").error().code, "type_mismatch");
  EXPECT_EQ(f->get_string("u8").error().code, "type_mismatch");
  EXPECT_NE(f->get_string("u8").error().message.find("expected string, found u8"), std::string::npos);
  EXPECT_EQ(f->get_float("string").error().code, "type_mismatch");

  EXPECT_EQ(f->get_int_array("arr_i16").value(), (std::vector<int64_t>{3, -4}));
  EXPECT_EQ(f->get_float_array("arr_i16").value(), (std::vector<double>{3.0, -4.0}));
  EXPECT_EQ(f->get_string_array("arr_str").value(), (std::vector<std::string>{"a", "bc", ""}));
  EXPECT_EQ(f->get_float_array("arr_f32")->at(19), 9.5);
  EXPECT_EQ(f->get_int_array("arr_f32").error().code, "type_mismatch");
  EXPECT_EQ(f->get_string_array("arr_nested").error().code, "type_mismatch");
  EXPECT_EQ(f->get_int_array("arr_nested").error().code, "type_mismatch");
  EXPECT_EQ(f->get_string_array("string").error().code, "type_mismatch");

  const json meta = f->metadata_json(16);
  EXPECT_EQ(meta.at("u8"), 200);
  EXPECT_EQ(meta.at("bool"), true);
  EXPECT_EQ(meta.at("u64_huge").get<uint64_t>(), std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(meta.at("arr_nested"), json::parse("[[1,2],[],[3]]"));
  EXPECT_EQ(meta.at("arr_str"), json::parse(R"(["a","bc",""])"));
  EXPECT_EQ(meta.at("arr_f32").at("count"), 20);
  EXPECT_EQ(meta.at("arr_f32").at("type"), "array<f32>");
  EXPECT_EQ(meta.at("arr_f32").at("head").size(), 16u);
  EXPECT_EQ(meta.at("arr_f32").at("head").at(3), 1.5);
  EXPECT_NO_THROW((void)meta.dump());
}

TEST(Gguf, MetadataJsonReplacesInvalidUtf8) {
  Builder b;
  b.header(3, 0, 1).kv_str("name", std::string("ok\xFF\xC3", 4));
  auto f = b.parse();
  ASSERT_TRUE(f.ok()) << f.error().str();
  EXPECT_EQ(f->get_string("name").value(), std::string("ok\xFF\xC3", 4));  // raw bytes preserved
  const std::string dumped = f->metadata_json().dump();
  EXPECT_NE(dumped.find("ok\xEF\xBF\xBD\xEF\xBF\xBD"), std::string::npos) << dumped;
}

// ---- header and tensor table ----

TEST(Gguf, SmallModelParses) {
  Builder b = small_model();
  auto f = b.parse();
  ASSERT_TRUE(f.ok()) << f.error().str();
  const TensorInfo& t = f->tensors().at(0);
  EXPECT_EQ(t.name, "w");
  EXPECT_EQ(t.nelements(), 8);
  EXPECT_EQ(t.rows(), 2);
  EXPECT_EQ(t.nbytes, 32u);
  EXPECT_EQ(f->data_offset() % 32, 0u);
  float v[8];
  std::memcpy(v, t.data, sizeof v);
  EXPECT_EQ(v[7], 7.0f);
  EXPECT_EQ(f->path(), "");
}

TEST(Gguf, VersionTwoAcceptedVersionOneRejected) {
  EXPECT_TRUE(small_model(2).parse().ok());
  auto v1 = small_model(1).parse();
  ASSERT_FALSE(v1.ok());
  EXPECT_EQ(v1.error().code, "gguf_version");
  EXPECT_NE(v1.error().message.find("v1 is not supported"), std::string::npos) << v1.error().message;
  auto v4 = small_model(4).parse();
  expect_offset_error(v4, "expected 2 or 3, found 4");
  auto be = small_model(0x03000000u).parse();
  expect_offset_error(be, "big-endian");
}

TEST(Gguf, BadMagic) {
  Builder b = small_model();
  b.bytes[0] = 'X';
  expect_offset_error(b.parse(), "expected \"GGUF\", found \"XGUF\"");
}

TEST(Gguf, CustomAlignment) {
  Builder b;
  b.header(3, 2, 2).kv_str("general.architecture", "llama");
  b.kv<uint32_t>("general.alignment", GgufValueType::U32, 64);
  b.tensor("a", {32}, 8, 0);    // Q8_0: one block, 34 bytes
  b.tensor("b", {3}, 1, 64);    // F16, 6 bytes, at the next 64-byte boundary
  b.pad(64);
  const size_t data_start = b.bytes.size();
  b.put<uint16_t>(0x3C00);      // d = 1.0
  for (int i = 0; i < 32; ++i) b.put<int8_t>(static_cast<int8_t>(i));
  b.pad(64);
  b.put<uint16_t>(1).put<uint16_t>(2).put<uint16_t>(3);
  auto f = b.parse();
  ASSERT_TRUE(f.ok()) << f.error().str();
  EXPECT_EQ(f->alignment(), 64u);
  EXPECT_EQ(f->data_offset(), data_start);
  EXPECT_EQ(f->find_tensor("a")->nbytes, 34u);
  EXPECT_EQ(f->find_tensor("b")->data, b.bytes.data() + data_start + 64);
  EXPECT_EQ(f->find_tensor("b")->type, GgmlType::F16);
}

TEST(Gguf, BadAlignmentRejected) {
  for (uint32_t a : {0u, 3u, 48u}) {
    Builder b;
    b.header(3, 0, 1).kv<uint32_t>("general.alignment", GgufValueType::U32, a);
    expect_offset_error(b.parse(), "expected a power of two, found " + std::to_string(a));
  }
  Builder wrong_type;
  wrong_type.header(3, 0, 1).kv<uint64_t>("general.alignment", GgufValueType::U64, 32);
  expect_offset_error(wrong_type.parse(), "expected type u32, found u64");
}

TEST(Gguf, UnsupportedTensorTypeNamesTheTensor) {
  Builder b;
  b.header(3, 1, 0).tensor("blk.0.attn_q.weight", {256, 2}, 16, 0).pad(32);
  b.bytes.resize(b.bytes.size() + 512);
  auto f = b.parse();
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.error().code, "unsupported_type");
  EXPECT_NE(f.error().message.find("'blk.0.attn_q.weight'"), std::string::npos) << f.error().message;
  EXPECT_NE(f.error().message.find("16 (iq2_xxs)"), std::string::npos) << f.error().message;
  EXPECT_EQ(f.error().message.rfind("offset ", 0), 0u) << f.error().message;
  // The activation-only formats are not storage types.
  for (auto [id, block_bytes] : {std::pair<uint32_t, size_t>{15, 292}, {9, 36}}) {
    Builder act;
    act.header(3, 1, 0).tensor("x", {256}, id, 0).pad(32);
    act.bytes.resize(act.bytes.size() + 8 * block_bytes);
    auto r = act.parse();
    ASSERT_FALSE(r.ok()) << id;
    EXPECT_EQ(r.error().code, "unsupported_type");
    EXPECT_NE(r.error().message.find("activation-only"), std::string::npos) << r.error().message;
  }
}

// Every tensor type the engine executes is accepted, with its block geometry checked.
TEST(Gguf, AcceptsEveryStorageTypeAndChecksItsBlockSize) {
  for (GgmlType type : ggml_storage_types()) {
    SCOPED_TRACE(ggml_type_name(type));
    const int64_t bs = ggml_block_size(type);
    Builder ok;
    ok.header(3, 1, 0).tensor("w", {static_cast<uint64_t>(bs * 2), 3}, static_cast<uint32_t>(type), 0).pad(32);
    ok.bytes.resize(ok.bytes.size() + ggml_row_bytes(type, bs * 2) * 3);
    auto f = ok.parse();
    ASSERT_TRUE(f.ok()) << f.error().str();
    EXPECT_EQ(f->find_tensor("w")->type, type);
    EXPECT_EQ(f->find_tensor("w")->nbytes, ggml_row_bytes(type, bs * 2) * 3);
    if (bs == 1) continue;
    Builder bad;
    bad.header(3, 1, 0).tensor("w", {static_cast<uint64_t>(bs + bs / 2), 1}, static_cast<uint32_t>(type), 0).pad(32);
    bad.bytes.resize(bad.bytes.size() + 4096);
    auto r = bad.parse();
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message.find("block size " + std::to_string(bs)), std::string::npos) << r.error().message;
  }
}

TEST(Gguf, TensorShapeErrors) {
  {  // ne[0] not a multiple of the block size
    Builder b;
    b.header(3, 1, 0).tensor("q", {33}, 8, 0).pad(32);
    b.bytes.resize(b.bytes.size() + 64);
    expect_offset_error(b.parse(), "multiple of the q8_0 block size 32, found 33");
  }
  {  // too many dims
    Builder b;
    b.header(3, 1, 0).tensor("t", {1, 1, 1, 1, 1}, 0, 0).pad(32);
    b.bytes.resize(b.bytes.size() + 4);
    expect_offset_error(b.parse(), "n_dims: expected 1..4, found 5");
  }
  {  // element count overflow
    Builder b;
    b.header(3, 1, 0).tensor("t", {1ull << 40, 1ull << 40}, 0, 0).pad(32);
    expect_offset_error(b.parse(), "overflows");
  }
  {  // misaligned offset
    Builder b;
    b.header(3, 1, 0).tensor("t", {4}, 0, 16).pad(32);
    b.bytes.resize(b.bytes.size() + 64);
    expect_offset_error(b.parse(), "not a multiple of the alignment 32");
  }
  {  // data past the end of the file
    Builder b = small_model();
    b.bytes.resize(b.bytes.size() - 4);
    auto f = b.parse();
    expect_offset_error(f, "tensor 'w' data [");
    EXPECT_NE(f.error().message.find("exceeds file size " + std::to_string(b.bytes.size())), std::string::npos)
        << f.error().message;
  }
  {  // huge offset
    Builder b;
    b.header(3, 1, 0).tensor("t", {4}, 0, 1ull << 62).pad(32);
    expect_offset_error(b.parse(), "exceeds file size");
  }
}

TEST(Gguf, DuplicatesRejected) {
  Builder keys;
  keys.header(3, 0, 2).kv_str("k", "a").kv_str("k", "b");
  expect_offset_error(keys.parse(), "duplicate metadata key 'k'");
  Builder tensors;
  tensors.header(3, 2, 0).tensor("t", {8}, 0, 0).tensor("t", {8}, 0, 32).pad(32);
  tensors.bytes.resize(tensors.bytes.size() + 64);
  expect_offset_error(tensors.parse(), "duplicate tensor name 't'");
}

TEST(Gguf, HostileCountsFailFastWithoutAllocating) {
  {
    Builder b;
    b.header(3, 0, 1ull << 60);
    expect_offset_error(b.parse(), "metadata key/value count");
  }
  {
    Builder b;
    b.header(3, std::numeric_limits<uint64_t>::max(), 0);
    expect_offset_error(b.parse(), "tensor count");
  }
  {
    Builder b;
    b.header(3, 0, 1).str("arr").put<uint32_t>(9).put<uint32_t>(8).put<uint64_t>(1ull << 62);
    expect_offset_error(b.parse(), "array of 4611686018427387904 string");
  }
  {
    Builder b;
    b.header(3, 0, 1).str("s").put<uint32_t>(8).put<uint64_t>(std::numeric_limits<uint64_t>::max());
    expect_offset_error(b.parse(), "string length 18446744073709551615");
  }
  {
    Builder b;
    b.header(3, 0, 1).str("bad").put<uint32_t>(13).put<uint64_t>(0);
    expect_offset_error(b.parse(), "expected a value type 0..12, found 13");
  }
  {  // arrays nested past the depth limit
    Builder b;
    b.header(3, 0, 1).str("deep").put<uint32_t>(9);
    for (int i = 0; i < 10; ++i) b.put<uint32_t>(9).put<uint64_t>(1);
    b.put<uint32_t>(0).put<uint64_t>(0);
    expect_offset_error(b.parse(), "nested deeper");
  }
}

// Truncating a real model anywhere must fail with an offset, never crash.
TEST(Gguf, TruncationAtEveryHeaderOffset) {
  const auto bytes = read_bytes(testing::data_dir() / "reference" / "synth-llama-256-q4_k.gguf");
  auto full = GgufFile::from_memory(bytes.data(), bytes.size());
  ASSERT_TRUE(full.ok()) << full.error().str();
  const size_t header_end = full->data_offset();
  std::vector<size_t> cuts;
  for (size_t n = 0; n <= header_end + 64; ++n) cuts.push_back(n);
  for (size_t n = header_end; n < bytes.size(); n += 997) cuts.push_back(n);
  cuts.push_back(bytes.size() - 1);
  for (size_t n : cuts) {
    auto f = GgufFile::from_memory(bytes.data(), n);
    ASSERT_FALSE(f.ok()) << "accepted a file truncated to " << n << " bytes";
    ASSERT_EQ(f.error().message.rfind("offset ", 0), 0u) << n << ": " << f.error().str();
    if (n >= header_end) {
      ASSERT_NE(f.error().message.find("exceeds file size " + std::to_string(n)), std::string::npos)
        << f.error().message;
    }
  }
}

// Corrupting header bytes either still parses into in-bounds tensors or fails with an offset.
TEST(Gguf, ByteFlipsInHeaderNeverEscapeBounds) {
  const auto original = read_bytes(testing::data_dir() / "reference" / "synth-llama-256-q8_0.gguf");
  auto full = GgufFile::from_memory(original.data(), original.size());
  ASSERT_TRUE(full.ok());
  const size_t header_end = full->data_offset();
  std::mt19937 rng(1234);
  std::vector<uint8_t> bytes = original;
  int failures = 0, accepted = 0;
  for (size_t pos = 0; pos < header_end; pos += 3) {
    const uint8_t saved = bytes[pos];
    for (uint8_t flip : {uint8_t{0xFF}, static_cast<uint8_t>(1u << (rng() % 8))}) {
      bytes[pos] = static_cast<uint8_t>(saved ^ flip);
      auto f = GgufFile::from_memory(bytes.data(), bytes.size());
      if (!f.ok()) {
        ++failures;
        ASSERT_EQ(f.error().message.rfind("offset ", 0), 0u) << pos << ": " << f.error().str();
        continue;
      }
      ++accepted;
      for (const TensorInfo& t : f->tensors()) {
        ASSERT_GE(t.data, bytes.data() + f->data_offset());
        ASSERT_LE(t.data + t.nbytes, bytes.data() + bytes.size());
      }
      (void)f->metadata_json().dump();
    }
    bytes[pos] = saved;
  }
  EXPECT_GT(failures, 100);
  EXPECT_GT(accepted, 100);  // flips inside strings and float values are harmless
}

}  // namespace
}  // namespace kakeya::engine
