// libFuzzer target: GgufFile::from_memory on arbitrary bytes, then every accessor and, for each
// tensor, the kernels on its first row. Any crash, sanitizer report or huge allocation is a bug:
// the reader must turn every malformed input into an Error.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "engine/gguf.h"
#include "engine/cpu/quant.h"

using kakeya::engine::ActivationBuffer;
using kakeya::engine::GgufFile;
using kakeya::engine::GgufValueType;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto f = GgufFile::from_memory(data, size);
  if (!f.ok()) {
    // Errors must carry a message.
    if (f.error().message.empty()) __builtin_trap();
    return 0;
  }
  for (const std::string& key : f->keys()) {
    (void)f->get_string(key);
    (void)f->get_int(key);
    (void)f->get_float(key);
    (void)f->get_bool(key);
    if (f->value_type(key) == GgufValueType::ARRAY) {
      (void)f->get_string_array(key);
      (void)f->get_float_array(key);
      (void)f->get_int_array(key);
    }
  }
  (void)f->metadata_json(4).dump();

  std::vector<float> row, x;
  ActivationBuffer act;
  for (const auto& t : f->tensors()) {
    if (f->find_tensor(t.name) == nullptr) __builtin_trap();
    if (t.data < data || t.data + t.nbytes > data + size) __builtin_trap();
    if (t.rows() == 0 || t.ne[0] == 0 || t.ne[0] > 4096) continue;
    const int64_t n = t.ne[0];
    row.assign(static_cast<size_t>(n), 0.0f);
    kakeya::engine::dequantize_row(t.type, t.data, row.data(), n);
    x.assign(static_cast<size_t>(n), 0.5f);
    kakeya::engine::quantize_activations(t.type, x.data(), n, act);
    float y = 0.0f;
    kakeya::engine::matvec(t.type, t.data, n, 0, 1, act, &y);
  }
  return 0;
}
