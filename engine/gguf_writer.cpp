#include "engine/gguf_writer.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>

namespace kakeya::engine {
namespace {

constexpr uint64_t kAlignment = 32;

// ---- little-endian byte buffer ----
struct Bytes {
  std::vector<uint8_t> b;
  template <typename T>
  void put(T v) {
    uint8_t tmp[sizeof(T)];
    std::memcpy(tmp, &v, sizeof(T));  // host is little-endian (x86-64 / AArch64)
    b.insert(b.end(), tmp, tmp + sizeof(T));
  }
  void str(const std::string& s) {
    put<uint64_t>(s.size());
    b.insert(b.end(), s.begin(), s.end());
  }
};

void put_value(Bytes& out, const GgufValue& v) {
  enum : uint32_t { U32 = 4, I32 = 5, F32 = 6, BOOL = 7, STRING = 8, ARRAY = 9, U64 = 10 };
  std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::string>) {
          out.put<uint32_t>(STRING);
          out.str(x);
        } else if constexpr (std::is_same_v<T, uint32_t>) {
          out.put<uint32_t>(U32);
          out.put<uint32_t>(x);
        } else if constexpr (std::is_same_v<T, int32_t>) {
          out.put<uint32_t>(I32);
          out.put<int32_t>(x);
        } else if constexpr (std::is_same_v<T, float>) {
          out.put<uint32_t>(F32);
          out.put<float>(x);
        } else if constexpr (std::is_same_v<T, bool>) {
          out.put<uint32_t>(BOOL);
          out.put<uint8_t>(x ? 1 : 0);
        } else if constexpr (std::is_same_v<T, uint64_t>) {
          out.put<uint32_t>(U64);
          out.put<uint64_t>(x);
        } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
          out.put<uint32_t>(ARRAY);
          out.put<uint32_t>(STRING);
          out.put<uint64_t>(x.size());
          for (const auto& s : x) out.str(s);
        } else if constexpr (std::is_same_v<T, std::vector<float>>) {
          out.put<uint32_t>(ARRAY);
          out.put<uint32_t>(F32);
          out.put<uint64_t>(x.size());
          for (float f : x) out.put<float>(f);
        } else {
          static_assert(std::is_same_v<T, std::vector<int32_t>>);
          out.put<uint32_t>(ARRAY);
          out.put<uint32_t>(I32);
          out.put<uint64_t>(x.size());
          for (int32_t i : x) out.put<int32_t>(i);
        }
      },
      v);
}

uint64_t align_up(uint64_t x) { return (x + kAlignment - 1) / kAlignment * kAlignment; }

size_t tensor_bytes(GgmlType type, const std::vector<int64_t>& ne) {
  size_t rows = 1;
  for (size_t i = 1; i < ne.size(); ++i) rows *= static_cast<size_t>(ne[i]);
  return ggml_row_bytes(type, ne[0]) * rows;
}

}  // namespace

// ---- writer ----

void GgufWriter::add_kv(std::string key, GgufValue value) {
  kvs_.emplace_back(std::move(key), std::move(value));
}

void GgufWriter::add_tensor(std::string name, GgmlType type, std::vector<int64_t> ne,
                            Producer producer) {
  tensors_.push_back(Tensor{std::move(name), type, std::move(ne), std::move(producer)});
}

Status GgufWriter::write(const std::string& path) const {
  Bytes h;
  h.put<uint32_t>(0x46554747u);  // "GGUF"
  h.put<uint32_t>(3);
  h.put<uint64_t>(tensors_.size());
  h.put<uint64_t>(kvs_.size() + 1);
  h.str("general.alignment");
  put_value(h, GgufValue{static_cast<uint32_t>(kAlignment)});
  for (const auto& [key, value] : kvs_) {
    h.str(key);
    put_value(h, value);
  }
  uint64_t offset = 0;
  for (const Tensor& t : tensors_) {
    h.str(t.name);
    h.put<uint32_t>(static_cast<uint32_t>(t.ne.size()));
    for (int64_t d : t.ne) h.put<uint64_t>(static_cast<uint64_t>(d));
    h.put<uint32_t>(static_cast<uint32_t>(t.type));
    h.put<uint64_t>(offset);
    offset = align_up(offset + tensor_bytes(t.type, t.ne));
  }
  h.b.resize(align_up(h.b.size()), 0);

  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "wb"), &std::fclose);
  if (!f) return make_error("io", "cannot create " + path + ": " + std::strerror(errno));
  auto fail = [&](Error e) -> Status {
    f.reset();
    std::remove(path.c_str());
    return e;
  };
  if (std::fwrite(h.b.data(), 1, h.b.size(), f.get()) != h.b.size())
    return fail(make_error("io", "write failed: " + path));
  std::vector<uint8_t> buf;
  for (const Tensor& t : tensors_) {
    const size_t nbytes = tensor_bytes(t.type, t.ne);
    buf.assign(align_up(nbytes), 0);
    Status st = t.producer(buf.data(), nbytes);
    if (!st.ok()) return fail(std::move(st).error());
    if (std::fwrite(buf.data(), 1, buf.size(), f.get()) != buf.size())
      return fail(make_error("io", "write failed: " + path + " (tensor " + t.name + ")"));
  }
  if (std::fclose(f.release()) != 0) {
    std::remove(path.c_str());
    return make_error("io", "close failed: " + path);
  }
  return ok_status();
}

}  // namespace kakeya::engine
