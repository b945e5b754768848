#include "engine/gguf.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <mutex>

#include <openssl/evp.h>

namespace kakeya::engine {

static_assert(std::endian::native == std::endian::little, "the GGUF reader assumes a little-endian host");

namespace {

constexpr int kMaxArrayDepth = 4;     // nested arrays deeper than this are rejected
constexpr uint32_t kMaxDims = 4;      // GGML_MAX_DIMS
constexpr uint64_t kDefaultAlignment = 32;

Error format_error(size_t offset, const std::string& what) {
  return make_error("gguf_format", "offset " + std::to_string(offset) + ": " + what);
}

size_t scalar_size(GgufValueType t) {
  switch (t) {
    case GgufValueType::U8:
    case GgufValueType::I8:
    case GgufValueType::BOOL: return 1;
    case GgufValueType::U16:
    case GgufValueType::I16: return 2;
    case GgufValueType::U32:
    case GgufValueType::I32:
    case GgufValueType::F32: return 4;
    case GgufValueType::U64:
    case GgufValueType::I64:
    case GgufValueType::F64: return 8;
    case GgufValueType::STRING:
    case GgufValueType::ARRAY: return 0;
  }
  return 0;
}

bool is_int_type(GgufValueType t) {
  switch (t) {
    case GgufValueType::U8:
    case GgufValueType::I8:
    case GgufValueType::U16:
    case GgufValueType::I16:
    case GgufValueType::U32:
    case GgufValueType::I32:
    case GgufValueType::U64:
    case GgufValueType::I64: return true;
    default: return false;
  }
}
bool is_float_type(GgufValueType t) { return t == GgufValueType::F32 || t == GgufValueType::F64; }

// Bounds-checked little-endian cursor over the file bytes.
class Reader {
 public:
  Reader(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  size_t pos() const { return pos_; }
  size_t remaining() const { return size_ - pos_; }

  Status need(size_t n, std::string_view field) const {
    if (n <= remaining()) return ok_status();
    return make_error("gguf_truncated", "offset " + std::to_string(pos_) + ": " + std::string(field) +
                                            ": expected " + std::to_string(n) + " bytes, only " +
                                            std::to_string(remaining()) + " remain (file size " +
                                            std::to_string(size_) + ")");
  }

  template <typename T>
  Result<T> read(std::string_view field) {
    KAKEYA_TRY(need(sizeof(T), field));
    T v;
    std::memcpy(&v, data_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }

  Result<std::string_view> read_string(std::string_view field) {
    const size_t at = pos_;
    KAKEYA_ASSIGN_OR_RETURN(uint64_t len, read<uint64_t>(field));
    if (len > remaining()) {
      pos_ = at;
      return make_error("gguf_truncated", "offset " + std::to_string(at) + ": " + std::string(field) +
                                              ": string length " + std::to_string(len) + " exceeds the " +
                                              std::to_string(remaining()) + " bytes left (file size " +
                                              std::to_string(size_) + ")");
    }
    std::string_view s(reinterpret_cast<const char*>(data_ + pos_), static_cast<size_t>(len));
    pos_ += static_cast<size_t>(len);
    return s;
  }

  Status skip(size_t n, std::string_view field) {
    KAKEYA_TRY(need(n, field));
    pos_ += n;
    return ok_status();
  }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

Result<GgufValueType> value_type_from_u32(uint32_t raw, size_t at, std::string_view field) {
  if (raw > static_cast<uint32_t>(GgufValueType::F64))
    return format_error(at, std::string(field) + ": expected a value type 0..12, found " + std::to_string(raw));
  return static_cast<GgufValueType>(raw);
}

// Walks (validates) one value of type t at the reader's position.
Status skip_value(Reader& r, GgufValueType t, int depth, std::string_view field) {
  if (t == GgufValueType::STRING) {
    auto s = r.read_string(field);
    if (!s.ok()) return std::move(s).error();
    return ok_status();
  }
  if (t != GgufValueType::ARRAY) return r.skip(scalar_size(t), field);
  if (depth >= kMaxArrayDepth)
    return format_error(r.pos(), std::string(field) + ": arrays nested deeper than " +
                                     std::to_string(kMaxArrayDepth) + " levels");
  const size_t at = r.pos();
  KAKEYA_ASSIGN_OR_RETURN(uint32_t raw, r.read<uint32_t>(field));
  KAKEYA_ASSIGN_OR_RETURN(GgufValueType et, value_type_from_u32(raw, at, field));
  const size_t count_at = r.pos();
  KAKEYA_ASSIGN_OR_RETURN(uint64_t count, r.read<uint64_t>(field));
  const size_t min_elem = et == GgufValueType::STRING ? 8 : et == GgufValueType::ARRAY ? 12 : scalar_size(et);
  if (count > r.remaining() / min_elem)
    return make_error("gguf_truncated", "offset " + std::to_string(count_at) + ": " + std::string(field) +
                                            ": array of " + std::to_string(count) + " " +
                                            gguf_value_type_name(et) + " needs at least " +
                                            (count > r.remaining() ? std::string("more") : std::to_string(count * min_elem)) +
                                            " bytes, only " + std::to_string(r.remaining()) + " remain");
  if (et != GgufValueType::STRING && et != GgufValueType::ARRAY) return r.skip(count * min_elem, field);
  for (uint64_t i = 0; i < count; ++i) KAKEYA_TRY(skip_value(r, et, depth + 1, field));
  return ok_status();
}

// Reads a scalar integer-typed value at p.
int64_t load_int(const uint8_t* p, GgufValueType t, bool* overflow) {
  *overflow = false;
  switch (t) {
    case GgufValueType::U8: return *p;
    case GgufValueType::I8: return static_cast<int8_t>(*p);
    case GgufValueType::U16: { uint16_t v; std::memcpy(&v, p, 2); return v; }
    case GgufValueType::I16: { int16_t v; std::memcpy(&v, p, 2); return v; }
    case GgufValueType::U32: { uint32_t v; std::memcpy(&v, p, 4); return v; }
    case GgufValueType::I32: { int32_t v; std::memcpy(&v, p, 4); return v; }
    case GgufValueType::I64: { int64_t v; std::memcpy(&v, p, 8); return v; }
    case GgufValueType::U64: {
      uint64_t v;
      std::memcpy(&v, p, 8);
      if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) *overflow = true;
      return static_cast<int64_t>(v);
    }
    default: return 0;
  }
}

double load_float(const uint8_t* p, GgufValueType t) {
  if (t == GgufValueType::F32) { float v; std::memcpy(&v, p, 4); return v; }
  if (t == GgufValueType::F64) { double v; std::memcpy(&v, p, 8); return v; }
  if (t == GgufValueType::U64) { uint64_t v; std::memcpy(&v, p, 8); return static_cast<double>(v); }
  bool overflow = false;
  return static_cast<double>(load_int(p, t, &overflow));
}

// Replaces invalid UTF-8 sequences by U+FFFD so JSON serialisation cannot fail.
std::string sanitize_utf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    bool valid = len > 0 && i + len <= s.size();
    for (size_t k = 1; valid && k < len; ++k) valid = (static_cast<unsigned char>(s[i + k]) & 0xC0) == 0x80;
    if (valid && len > 1) {
      uint32_t cp = c & (0xFF >> (len + 1));
      for (size_t k = 1; k < len; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
      const uint32_t min_cp = len == 2 ? 0x80 : len == 3 ? 0x800 : 0x10000;
      valid = cp >= min_cp && cp <= 0x10FFFF && (cp < 0xD800 || cp > 0xDFFF);
    }
    if (valid) {
      out.append(s.substr(i, len));
      i += len;
    } else {
      out += "\xEF\xBF\xBD";
      ++i;
    }
  }
  return out;
}

struct KvEntry {
  std::string key;
  GgufValueType type;
  size_t value_offset;  // payload (for arrays: first element)
  GgufValueType elem_type = GgufValueType::U8;  // arrays only
  uint64_t count = 0;                           // arrays only
};

}  // namespace

const char* gguf_value_type_name(GgufValueType type) {
  switch (type) {
    case GgufValueType::U8: return "u8";
    case GgufValueType::I8: return "i8";
    case GgufValueType::U16: return "u16";
    case GgufValueType::I16: return "i16";
    case GgufValueType::U32: return "u32";
    case GgufValueType::I32: return "i32";
    case GgufValueType::F32: return "f32";
    case GgufValueType::BOOL: return "bool";
    case GgufValueType::STRING: return "string";
    case GgufValueType::ARRAY: return "array";
    case GgufValueType::U64: return "u64";
    case GgufValueType::I64: return "i64";
    case GgufValueType::F64: return "f64";
  }
  return "unknown";
}

int64_t TensorInfo::nelements() const {
  int64_t n = 1;
  for (int64_t d : ne) n *= d;
  return n;
}

int64_t TensorInfo::rows() const {
  if (ne.empty() || ne[0] == 0) return 0;
  return nelements() / ne[0];
}

struct GgufFile::Impl {
  const uint8_t* data = nullptr;
  size_t size = 0;
  void* mapping = nullptr;  // owned mmap (nullptr for from_memory or empty files)
  size_t mapping_size = 0;
  int fd = -1;              // the opened file (kept for sha256, which reads it without the mapping)
  std::string path;
  uint32_t version = 0;
  uint64_t alignment = kDefaultAlignment;
  uint64_t data_offset = 0;
  std::vector<KvEntry> kv;
  std::map<std::string, size_t, std::less<>> kv_index;
  std::vector<TensorInfo> tensors;
  std::map<std::string, size_t, std::less<>> tensor_index;
  mutable std::once_flag sha_once;
  mutable std::string sha;

  ~Impl() {
    if (mapping != nullptr) munmap(mapping, mapping_size);
    if (fd >= 0) ::close(fd);
  }

  Status parse();
  Status parse_kv(Reader& r, uint64_t n_kv);
  Status parse_tensors(Reader& r, uint64_t n_tensors);

  const KvEntry* find(std::string_view key) const {
    auto it = kv_index.find(key);
    return it == kv_index.end() ? nullptr : &kv[it->second];
  }
  Result<const KvEntry*> lookup(std::string_view key) const {
    const KvEntry* e = find(key);
    if (e == nullptr) return make_error("not_found", "GGUF key '" + std::string(key) + "' not found");
    return e;
  }
  nlohmann::json value_json(GgufValueType t, Reader& r, size_t max_array) const;
};

Status GgufFile::Impl::parse() {
  Reader r(data, size);
  KAKEYA_TRY(r.need(4, "magic"));
  if (std::memcmp(data, "GGUF", 4) != 0) {
    std::string found;
    for (int i = 0; i < 4; ++i) {
      const auto c = static_cast<unsigned char>(data[i]);
      static const char* kHex = "0123456789abcdef";
      found += (c >= 0x20 && c < 0x7F) ? std::string(1, static_cast<char>(c))
                                       : std::string("\\x") + kHex[c >> 4] + kHex[c & 15];
    }
    return make_error("gguf_format", "offset 0: magic: expected \"GGUF\", found \"" + found + "\"");
  }
  KAKEYA_TRY(r.skip(4, "magic"));
  KAKEYA_ASSIGN_OR_RETURN(version, r.read<uint32_t>("version"));
  if (version == 1)
    return make_error("gguf_version", "offset 4: version: GGUF v1 is not supported (expected 2 or 3, found 1); "
                                      "re-convert the model with a current llama.cpp");
  if (version < 2 || version > 3) {
    std::string hint = (version & 0xFFFF) == 0 ? " (big-endian GGUF is not supported)" : "";
    return make_error("gguf_version",
                      "offset 4: version: expected 2 or 3, found " + std::to_string(version) + hint);
  }
  KAKEYA_ASSIGN_OR_RETURN(uint64_t n_tensors, r.read<uint64_t>("tensor count"));
  KAKEYA_ASSIGN_OR_RETURN(uint64_t n_kv, r.read<uint64_t>("metadata key/value count"));
  KAKEYA_TRY(parse_kv(r, n_kv));
  KAKEYA_TRY(parse_tensors(r, n_tensors));
  return ok_status();
}

Status GgufFile::Impl::parse_kv(Reader& r, uint64_t n_kv) {
  constexpr size_t kMinKv = 8 + 4 + 1;
  if (n_kv > r.remaining() / kMinKv)
    return make_error("gguf_truncated", "offset 16: metadata key/value count " + std::to_string(n_kv) +
                                            " needs at least " + std::to_string(kMinKv) + " bytes each, only " +
                                            std::to_string(r.remaining()) + " bytes remain");
  kv.reserve(static_cast<size_t>(n_kv));
  for (uint64_t i = 0; i < n_kv; ++i) {
    const size_t key_at = r.pos();
    const std::string field = "metadata key #" + std::to_string(i);
    KAKEYA_ASSIGN_OR_RETURN(std::string_view key, r.read_string(field));
    std::string key_field = "metadata '" + sanitize_utf8(key) + "'";
    const size_t type_at = r.pos();
    KAKEYA_ASSIGN_OR_RETURN(uint32_t raw, r.read<uint32_t>(key_field + " type"));
    KAKEYA_ASSIGN_OR_RETURN(GgufValueType t, value_type_from_u32(raw, type_at, key_field + " type"));
    KvEntry e{std::string(key), t, r.pos()};
    if (t == GgufValueType::ARRAY) {
      // Record element type and count, then validate the whole array.
      Reader peek = r;
      KAKEYA_ASSIGN_OR_RETURN(uint32_t et_raw, peek.read<uint32_t>(key_field + " array type"));
      KAKEYA_ASSIGN_OR_RETURN(e.elem_type, value_type_from_u32(et_raw, r.pos(), key_field + " array type"));
      KAKEYA_ASSIGN_OR_RETURN(e.count, peek.read<uint64_t>(key_field + " array count"));
      e.value_offset = peek.pos();
    }
    KAKEYA_TRY(skip_value(r, t, 0, key_field + " value"));
    if (kv_index.count(e.key) != 0)
      return format_error(key_at, "duplicate metadata key '" + sanitize_utf8(key) + "'");
    kv_index.emplace(e.key, kv.size());
    kv.push_back(std::move(e));
  }
  if (const KvEntry* a = find("general.alignment")) {
    if (a->type != GgufValueType::U32)
      return format_error(a->value_offset, std::string("metadata 'general.alignment': expected type u32, found ") +
                                               gguf_value_type_name(a->type));
    uint32_t v;
    std::memcpy(&v, data + a->value_offset, 4);
    if (v == 0 || (v & (v - 1)) != 0)
      return format_error(a->value_offset, "metadata 'general.alignment': expected a power of two, found " +
                                               std::to_string(v));
    alignment = v;
  }
  return ok_status();
}

Status GgufFile::Impl::parse_tensors(Reader& r, uint64_t n_tensors) {
  constexpr size_t kMinTensor = 8 + 4 + 8 + 4 + 8;
  if (n_tensors > r.remaining() / kMinTensor)
    return make_error("gguf_truncated", "offset 8: tensor count " + std::to_string(n_tensors) +
                                            " needs at least " + std::to_string(kMinTensor) +
                                            " bytes each, only " + std::to_string(r.remaining()) +
                                            " bytes remain after the metadata");
  tensors.reserve(static_cast<size_t>(n_tensors));
  std::vector<size_t> info_offsets;
  info_offsets.reserve(static_cast<size_t>(n_tensors));
  for (uint64_t i = 0; i < n_tensors; ++i) {
    const size_t info_at = r.pos();
    KAKEYA_ASSIGN_OR_RETURN(std::string_view name, r.read_string("tensor #" + std::to_string(i) + " name"));
    TensorInfo t;
    t.name = std::string(name);
    const std::string field = "tensor '" + sanitize_utf8(name) + "'";
    const size_t dims_at = r.pos();
    KAKEYA_ASSIGN_OR_RETURN(uint32_t n_dims, r.read<uint32_t>(field + " n_dims"));
    if (n_dims == 0 || n_dims > kMaxDims)
      return format_error(dims_at, field + " n_dims: expected 1.." + std::to_string(kMaxDims) + ", found " +
                                       std::to_string(n_dims));
    int64_t nel = 1;
    for (uint32_t d = 0; d < n_dims; ++d) {
      const size_t ne_at = r.pos();
      KAKEYA_ASSIGN_OR_RETURN(uint64_t ne, r.read<uint64_t>(field + " ne[" + std::to_string(d) + "]"));
      if (ne > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) ||
          (ne != 0 && nel > std::numeric_limits<int64_t>::max() / static_cast<int64_t>(ne)))
        return format_error(ne_at, field + " ne[" + std::to_string(d) + "] = " + std::to_string(ne) +
                                       ": element count overflows int64");
      nel *= static_cast<int64_t>(ne);
      t.ne.push_back(static_cast<int64_t>(ne));
    }
    const size_t type_at = r.pos();
    KAKEYA_ASSIGN_OR_RETURN(uint32_t type_id, r.read<uint32_t>(field + " type"));
    auto type = ggml_type_from_id(type_id);  // storage types only (not the activation-only Q8_1/Q8_K)
    if (!type.ok())
      return make_error("unsupported_type",
                        "offset " + std::to_string(type_at) + ": " + field + " type: " + type.error().message);
    t.type = type.value();
    KAKEYA_ASSIGN_OR_RETURN(t.offset, r.read<uint64_t>(field + " offset"));
    const int64_t bs = ggml_block_size(t.type);
    if (t.ne[0] % bs != 0)
      return format_error(dims_at, field + " ne[0]: expected a multiple of the " + ggml_type_name(t.type) +
                                       " block size " + std::to_string(bs) + ", found " + std::to_string(t.ne[0]));
    const uint64_t row = ggml_row_bytes(t.type, t.ne[0]);
    const uint64_t rows = static_cast<uint64_t>(t.rows());
    if (rows != 0 && row > std::numeric_limits<uint64_t>::max() / rows)
      return format_error(dims_at, field + ": byte size overflows");
    t.nbytes = static_cast<size_t>(row * rows);
    if (tensor_index.count(t.name) != 0) return format_error(info_at, "duplicate tensor name " + field.substr(7));
    tensor_index.emplace(t.name, tensors.size());
    tensors.push_back(std::move(t));
    info_offsets.push_back(type_at + 4);
  }
  const uint64_t end_of_infos = r.pos();
  data_offset = (end_of_infos + alignment - 1) / alignment * alignment;
  for (size_t i = 0; i < tensors.size(); ++i) {
    TensorInfo& t = tensors[i];
    if (t.offset % alignment != 0)
      return format_error(info_offsets[i], "tensor '" + sanitize_utf8(t.name) + "' offset " +
                                               std::to_string(t.offset) + " is not a multiple of the alignment " +
                                               std::to_string(alignment));
    const uint64_t begin = data_offset + t.offset;
    if (t.offset > size || begin > size || t.nbytes > size - begin)
      return make_error("gguf_truncated",
                        "offset " + std::to_string(info_offsets[i]) + ": tensor '" + sanitize_utf8(t.name) +
                            "' data [" + std::to_string(begin) + ", " +
                            (t.offset > size || begin > size ? std::string("...")
                                                             : std::to_string(begin + t.nbytes)) +
                            ") exceeds file size " + std::to_string(size) + " (" + std::to_string(t.nbytes) +
                            " bytes of " + ggml_type_name(t.type) + ")");
    t.data = data + begin;
  }
  return ok_status();
}

nlohmann::json GgufFile::Impl::value_json(GgufValueType t, Reader& r, size_t max_array) const {
  // The structure was validated at open: reads cannot fail here.
  const uint8_t* p = data + r.pos();
  switch (t) {
    case GgufValueType::STRING: return sanitize_utf8(r.read_string("").value());
    case GgufValueType::BOOL: (void)r.skip(1, ""); return *p != 0;
    case GgufValueType::F32:
    case GgufValueType::F64: {
      (void)r.skip(scalar_size(t), "");
      const double v = load_float(p, t);
      if (std::isfinite(v)) return v;
      return std::isnan(v) ? "nan" : (v > 0 ? "inf" : "-inf");
    }
    case GgufValueType::U64: {
      (void)r.skip(8, "");
      uint64_t v;
      std::memcpy(&v, p, 8);
      return v;
    }
    case GgufValueType::ARRAY: {
      const auto et = static_cast<GgufValueType>(r.read<uint32_t>("").value());
      const uint64_t count = r.read<uint64_t>("").value();
      nlohmann::json head = nlohmann::json::array();
      for (uint64_t i = 0; i < count; ++i) {
        if (i < max_array) {
          head.push_back(value_json(et, r, max_array));
        } else if (et == GgufValueType::STRING || et == GgufValueType::ARRAY) {
          (void)skip_value(r, et, 0, "");
        } else {
          (void)r.skip(static_cast<size_t>(count - i) * scalar_size(et), "");
          break;
        }
      }
      if (count <= max_array) return head;
      return nlohmann::json{{"type", std::string("array<") + gguf_value_type_name(et) + ">"},
                            {"count", count},
                            {"head", std::move(head)}};
    }
    default: {
      (void)r.skip(scalar_size(t), "");
      bool overflow = false;
      return load_int(p, t, &overflow);
    }
  }
}

GgufFile::GgufFile(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
GgufFile::GgufFile(GgufFile&&) noexcept = default;
GgufFile& GgufFile::operator=(GgufFile&&) noexcept = default;
GgufFile::~GgufFile() = default;

Result<GgufFile> GgufFile::open(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return make_error("io", "cannot open GGUF file '" + path + "': " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    return make_error("io", "cannot stat '" + path + "': " + std::strerror(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return make_error("io", "'" + path + "' is not a regular file");
  }
  auto impl = std::make_unique<Impl>();
  impl->path = path;
  impl->size = static_cast<size_t>(st.st_size);
  static const uint8_t kEmpty[1] = {0};
  impl->data = kEmpty;
  if (impl->size > 0) {
    void* m = ::mmap(nullptr, impl->size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (m == MAP_FAILED) {
      const int err = errno;
      ::close(fd);
      return make_error("io", "cannot mmap '" + path + "' (" + std::to_string(impl->size) +
                                  " bytes): " + std::strerror(err));
    }
    impl->mapping = m;
    impl->mapping_size = impl->size;
    impl->data = static_cast<const uint8_t*>(m);
  }
  impl->fd = fd;
  Status s = impl->parse();
  if (!s.ok()) {
    Error e = std::move(s).error();
    e.message = path + ": " + e.message;
    return e;
  }
  return GgufFile(std::move(impl));
}

Result<GgufFile> GgufFile::from_memory(const uint8_t* data, size_t size) {
  static const uint8_t kEmpty[1] = {0};
  auto impl = std::make_unique<Impl>();
  impl->data = data != nullptr ? data : kEmpty;
  impl->size = data != nullptr ? size : 0;
  KAKEYA_TRY(impl->parse());
  return GgufFile(std::move(impl));
}

uint32_t GgufFile::version() const { return impl_->version; }
size_t GgufFile::file_size() const { return impl_->size; }
uint64_t GgufFile::alignment() const { return impl_->alignment; }
uint64_t GgufFile::data_offset() const { return impl_->data_offset; }
const std::string& GgufFile::path() const { return impl_->path; }

bool GgufFile::has(std::string_view key) const { return impl_->find(key) != nullptr; }

GgufValueType GgufFile::value_type(std::string_view key) const { return impl_->find(key)->type; }

std::vector<std::string> GgufFile::keys() const {
  std::vector<std::string> out;
  out.reserve(impl_->kv.size());
  for (const KvEntry& e : impl_->kv) out.push_back(e.key);
  return out;
}

namespace {
Error mismatch(const KvEntry& e, const char* expected) {
  std::string found = gguf_value_type_name(e.type);
  if (e.type == GgufValueType::ARRAY) found = std::string("array<") + gguf_value_type_name(e.elem_type) + ">";
  return make_error("type_mismatch", "GGUF key '" + e.key + "': expected " + expected + ", found " + found);
}
}  // namespace

Result<std::string> GgufFile::get_string(std::string_view key) const {
  KAKEYA_ASSIGN_OR_RETURN(const KvEntry* e, impl_->lookup(key));
  if (e->type != GgufValueType::STRING) return mismatch(*e, "string");
  Reader r(impl_->data, impl_->size);
  (void)r.skip(e->value_offset, "");
  return std::string(r.read_string("").value());
}

Result<int64_t> GgufFile::get_int(std::string_view key) const {
  KAKEYA_ASSIGN_OR_RETURN(const KvEntry* e, impl_->lookup(key));
  if (!is_int_type(e->type)) return mismatch(*e, "an integer");
  bool overflow = false;
  const int64_t v = load_int(impl_->data + e->value_offset, e->type, &overflow);
  if (overflow)
    return make_error("out_of_range", "GGUF key '" + e->key + "': u64 value exceeds the int64 range");
  return v;
}

Result<double> GgufFile::get_float(std::string_view key) const {
  KAKEYA_ASSIGN_OR_RETURN(const KvEntry* e, impl_->lookup(key));
  if (!is_int_type(e->type) && !is_float_type(e->type)) return mismatch(*e, "a number");
  return load_float(impl_->data + e->value_offset, e->type);
}

Result<bool> GgufFile::get_bool(std::string_view key) const {
  KAKEYA_ASSIGN_OR_RETURN(const KvEntry* e, impl_->lookup(key));
  if (e->type != GgufValueType::BOOL) return mismatch(*e, "bool");
  return impl_->data[e->value_offset] != 0;
}

Result<uint64_t> GgufFile::get_array_size(std::string_view key) const {
  KAKEYA_ASSIGN_OR_RETURN(const KvEntry* e, impl_->lookup(key));
  if (e->type != GgufValueType::ARRAY) return mismatch(*e, "an array");
  return e->count;
}

Result<GgufValueType> GgufFile::get_array_type(std::string_view key) const {
  KAKEYA_ASSIGN_OR_RETURN(const KvEntry* e, impl_->lookup(key));
  if (e->type != GgufValueType::ARRAY) return mismatch(*e, "an array");
  return e->elem_type;
}

Result<std::vector<std::string>> GgufFile::get_string_array(std::string_view key) const {
  KAKEYA_ASSIGN_OR_RETURN(const KvEntry* e, impl_->lookup(key));
  if (e->type != GgufValueType::ARRAY || e->elem_type != GgufValueType::STRING)
    return mismatch(*e, "array<string>");
  Reader r(impl_->data, impl_->size);
  (void)r.skip(e->value_offset, "");
  std::vector<std::string> out;
  out.reserve(static_cast<size_t>(e->count));
  for (uint64_t i = 0; i < e->count; ++i) out.emplace_back(r.read_string("").value());
  return out;
}

Result<std::vector<double>> GgufFile::get_float_array(std::string_view key) const {
  KAKEYA_ASSIGN_OR_RETURN(const KvEntry* e, impl_->lookup(key));
  if (e->type != GgufValueType::ARRAY || (!is_int_type(e->elem_type) && !is_float_type(e->elem_type)))
    return mismatch(*e, "array of numbers");
  const size_t es = scalar_size(e->elem_type);
  std::vector<double> out(static_cast<size_t>(e->count));
  for (size_t i = 0; i < out.size(); ++i) out[i] = load_float(impl_->data + e->value_offset + i * es, e->elem_type);
  return out;
}

Result<std::vector<int64_t>> GgufFile::get_int_array(std::string_view key) const {
  KAKEYA_ASSIGN_OR_RETURN(const KvEntry* e, impl_->lookup(key));
  if (e->type != GgufValueType::ARRAY || !is_int_type(e->elem_type)) return mismatch(*e, "array of integers");
  const size_t es = scalar_size(e->elem_type);
  std::vector<int64_t> out(static_cast<size_t>(e->count));
  for (size_t i = 0; i < out.size(); ++i) {
    bool overflow = false;
    out[i] = load_int(impl_->data + e->value_offset + i * es, e->elem_type, &overflow);
    if (overflow)
      return make_error("out_of_range", "GGUF key '" + e->key + "' element " + std::to_string(i) +
                                            ": u64 value exceeds the int64 range");
  }
  return out;
}

nlohmann::json GgufFile::metadata_json(size_t max_array) const {
  nlohmann::json out = nlohmann::json::object();
  for (const KvEntry& e : impl_->kv) {
    Reader r(impl_->data, impl_->size);
    if (e.type == GgufValueType::ARRAY) {
      (void)r.skip(e.value_offset - 12, "");  // element type + count precede the elements
    } else {
      (void)r.skip(e.value_offset, "");
    }
    out[sanitize_utf8(e.key)] = impl_->value_json(e.type, r, max_array);
  }
  return out;
}

const std::vector<TensorInfo>& GgufFile::tensors() const { return impl_->tensors; }

const TensorInfo* GgufFile::find_tensor(std::string_view name) const {
  auto it = impl_->tensor_index.find(name);
  return it == impl_->tensor_index.end() ? nullptr : &impl_->tensors[it->second];
}

std::string GgufFile::sha256() const {
  std::call_once(impl_->sha_once, [this] {
    // An opened file is hashed through read(2), not the mapping: hashing must not make the
    // whole file resident in this process (LlamaModel releases the pages of repacked weights).
    EVP_MD_CTX* ctx = EVP_MD_CTX_new();
    if (ctx == nullptr || EVP_DigestInit_ex(ctx, EVP_sha256(), nullptr) != 1) {
      EVP_MD_CTX_free(ctx);
      return;
    }
    bool ok = true;
    if (impl_->fd >= 0) {
      std::vector<unsigned char> buf(1 << 20);
      for (size_t off = 0; ok && off < impl_->size;) {
        const ssize_t got = ::pread(impl_->fd, buf.data(), std::min(buf.size(), impl_->size - off),
                                    static_cast<off_t>(off));
        if (got < 0 && errno == EINTR) continue;
        ok = got > 0 && EVP_DigestUpdate(ctx, buf.data(), static_cast<size_t>(got)) == 1;
        off += got > 0 ? static_cast<size_t>(got) : 0;
      }
    } else {
      ok = EVP_DigestUpdate(ctx, impl_->data, impl_->size) == 1;
    }
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    ok = ok && EVP_DigestFinal_ex(ctx, md, &len) == 1;
    EVP_MD_CTX_free(ctx);
    if (!ok) return;
    static const char* kHex = "0123456789abcdef";
    std::string hex;
    hex.reserve(2 * len);
    for (unsigned int i = 0; i < len; ++i) {
      hex += kHex[md[i] >> 4];
      hex += kHex[md[i] & 15];
    }
    impl_->sha = std::move(hex);
  });
  return impl_->sha;
}

void GgufFile::release_pages(const uint8_t* p, size_t n) const {
  if (impl_->mapping == nullptr || n == 0) return;
  const auto* map = static_cast<const uint8_t*>(impl_->mapping);
  if (p < map || p + n > map + impl_->mapping_size) return;
  const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const uintptr_t a = (reinterpret_cast<uintptr_t>(p) + page - 1) & ~(page - 1);
  const uintptr_t b = (reinterpret_cast<uintptr_t>(p) + n) & ~(page - 1);
  if (a < b) ::madvise(reinterpret_cast<void*>(a), b - a, MADV_DONTNEED);
}

}  // namespace kakeya::engine
