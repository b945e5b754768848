#pragma once
// GGUF (v3, also v2) reader over a read-only memory mapping.
//
// Format: github.com/ggml-org/ggml docs/gguf.md. Little-endian header
//   "GGUF" u32 version, u64 n_tensors, u64 n_kv, n_kv × {string key, u32 type, value},
//   n_tensors × {string name, u32 n_dims, u64 ne[n_dims], u32 ggml_type, u64 offset},
//   padding to general.alignment (default 32), tensor data.
// Every length, count and offset is bounds-checked against the file: malformed input returns
// an Error (code "gguf_format" / "gguf_truncated" / "gguf_version" / "unsupported_type")
// whose message gives the byte offset, the field and expected vs found. Counts are capped by the
// bytes that remain, so a hostile header cannot trigger huge allocations.
// Metadata values are validated once at open and decoded on demand from the mapping.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "bridge/result.h"
#include "engine/ggml_types.h"

namespace kakeya::engine {

// GGUF metadata value types (gguf_type).
enum class GgufValueType : uint32_t {
  U8 = 0, I8 = 1, U16 = 2, I16 = 3, U32 = 4, I32 = 5, F32 = 6, BOOL = 7,
  STRING = 8, ARRAY = 9, U64 = 10, I64 = 11, F64 = 12,
};
const char* gguf_value_type_name(GgufValueType type);  // "u8", ..., "array"

struct TensorInfo {
  std::string name;
  GgmlType type = GgmlType::F32;
  std::vector<int64_t> ne;     // GGUF dimension order: ne[0] is contiguous (row length)
  uint64_t offset = 0;         // relative to GgufFile::data_offset()
  const uint8_t* data = nullptr;  // into the mapping; valid while the GgufFile lives
  size_t nbytes = 0;           // ggml_row_bytes(type, ne[0]) * rows()

  int64_t nelements() const;   // product of ne
  int64_t rows() const;        // nelements() / ne[0] (0 when ne[0] == 0)
  size_t row_bytes() const { return ggml_row_bytes(type, ne.empty() ? 0 : ne[0]); }
};

class GgufFile {
 public:
  // Maps `path` read-only. Errors: "io" (cannot open/map) or a format error.
  static Result<GgufFile> open(const std::string& path);
  // Parses caller-owned memory without copying. REQUIRES: data outlives the GgufFile.
  static Result<GgufFile> from_memory(const uint8_t* data, size_t size);

  GgufFile(GgufFile&&) noexcept;
  GgufFile& operator=(GgufFile&&) noexcept;
  GgufFile(const GgufFile&) = delete;
  GgufFile& operator=(const GgufFile&) = delete;
  ~GgufFile();

  uint32_t version() const;
  size_t file_size() const;
  uint64_t alignment() const;    // general.alignment, default 32
  uint64_t data_offset() const;  // start of the tensor data section (aligned)
  const std::string& path() const;  // "" for from_memory

  // Metadata. Errors: "not_found" (no such key), "type_mismatch" (value of another type,
  // message names the key, expected and found types), "out_of_range" (u64 > INT64_MAX).
  bool has(std::string_view key) const;
  GgufValueType value_type(std::string_view key) const;  // REQUIRES: has(key)
  Result<std::string> get_string(std::string_view key) const;
  Result<int64_t> get_int(std::string_view key) const;     // u8..i64 (not bool, not float)
  Result<double> get_float(std::string_view key) const;    // f32/f64, also any integer type
  Result<bool> get_bool(std::string_view key) const;
  Result<std::vector<std::string>> get_string_array(std::string_view key) const;
  Result<std::vector<double>> get_float_array(std::string_view key) const;  // float or int elements
  Result<std::vector<int64_t>> get_int_array(std::string_view key) const;   // integer elements
  // Element count and element type of an array value. Errors as above.
  Result<uint64_t> get_array_size(std::string_view key) const;
  Result<GgufValueType> get_array_type(std::string_view key) const;
  std::vector<std::string> keys() const;  // in file order

  // Every key -> value. Arrays longer than max_array become
  // {"type": "array<elem>", "count": N, "head": [first max_array values]}.
  nlohmann::json metadata_json(size_t max_array = 16) const;

  const std::vector<TensorInfo>& tensors() const;  // in file order
  const TensorInfo* find_tensor(std::string_view name) const;  // nullptr when absent

  // sha256 of the whole file as lowercase hex; computed once on first call (OpenSSL EVP),
  // thread-safe. An opened file is read with pread(2), so hashing does not make the mapping
  // resident. Empty string when reading fails.
  std::string sha256() const;

  // Drops this process's resident pages of [p, p + n) (the whole pages inside it) from the
  // mapping (madvise MADV_DONTNEED on a read-only private file mapping: the data stay valid and
  // are read back from the file on the next access). For callers that keep their own copy of a
  // tensor, so it is not resident twice. No-op for from_memory files or ranges outside the map.
  void release_pages(const uint8_t* p, size_t n) const;

 private:
  struct Impl;
  explicit GgufFile(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace kakeya::engine
