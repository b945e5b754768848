#pragma once
// A minimal GGUF v3 writer (for `kakeya-engine synth` and the quantized draft copy); the f32 ->
// storage-type row conversions it writes tensors with are engine/quantize.h.
//
// GGUF v3 layout (github.com/ggml-org/ggml docs/gguf.md), little-endian: "GGUF", u32 version 3,
// u64 n_tensors, u64 n_kv, the KV pairs {u64-length string key, u32 type, value}, the tensor
// infos {name, u32 n_dims, u64 ne[n_dims], u32 ggml type, u64 offset}, zero padding to
// general.alignment (32), then each tensor's bytes at its offset (each offset aligned to 32).
#include <cstdint>
#include <functional>
#include <string>
#include <variant>
#include <vector>

#include "bridge/result.h"
#include "engine/ggml_types.h"
#include "engine/quantize.h"

namespace kakeya::engine {

// One metadata value. Arrays hold strings, f32 or i32 elements.
using GgufValue = std::variant<std::string, uint32_t, int32_t, float, bool, uint64_t,
                               std::vector<std::string>, std::vector<float>, std::vector<int32_t>>;

class GgufWriter {
 public:
  // Fills `dst` (exactly nbytes) with the tensor's data; called once, in tensor order.
  using Producer = std::function<Status(uint8_t* dst, size_t nbytes)>;

  void add_kv(std::string key, GgufValue value);
  // ne in GGUF order (ne[0] contiguous). REQUIRES: ne[0] % ggml_block_size(type) == 0.
  void add_tensor(std::string name, GgmlType type, std::vector<int64_t> ne, Producer producer);
  // Writes the file (streaming: one tensor in memory at a time). Errors: "io", or a
  // producer's error (the partial file is removed).
  Status write(const std::string& path) const;

 private:
  struct Tensor {
    std::string name;
    GgmlType type;
    std::vector<int64_t> ne;
    Producer producer;
  };
  std::vector<std::pair<std::string, GgufValue>> kvs_;
  std::vector<Tensor> tensors_;
};

}  // namespace kakeya::engine
