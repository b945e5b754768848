#pragma once
// Deterministic random-weight Llama GGUF files (`kakeya-engine synth`), and the minimal GGUF v3
// writer they use.
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

// Reference quantizers (ggml quantize_row_q8_0_ref / quantize_row_q4_0_ref semantics).
// REQUIRES: n % 32 == 0; dst holds ggml_row_bytes(type, n) bytes.
void quantize_row_q8_0_ref(const float* x, uint8_t* dst, int64_t n);
void quantize_row_q4_0_ref(const float* x, uint8_t* dst, int64_t n);
// Converts one f32 row to `type` (F32, F16, BF16, Q8_0, Q4_0). Errors: "unsupported_type".
Status convert_row(GgmlType type, const float* x, uint8_t* dst, int64_t n);

struct SynthShape {
  std::string name = "custom";  // "tinyllama-1.1b", "llama-7b" or "custom"
  int64_t n_embd = 256;
  int64_t n_ff = 512;
  int64_t n_layer = 2;
  int64_t n_head = 4;
  int64_t n_head_kv = 2;
  int64_t n_vocab = 512;
  int64_t n_ctx = 512;
};

// Named shapes: tinyllama-1.1b (2048/5632/22 layers/32 heads/4 KV heads/32000/2048) and
// llama-7b (4096/11008/32/32/32/32000/4096). Errors: "bad_shape" for an unknown name.
Result<SynthShape> synth_shape(const std::string& name);

struct SynthOptions {
  SynthShape shape;
  GgmlType type = GgmlType::F32;  // every 2-D tensor; norm vectors stay F32
  uint64_t seed = 0;
  // GGUF whose tokenizer.ggml.{tokens,scores,token_type} are copied when shape.n_vocab equals its
  // vocabulary size (e.g. models/stories260K-f32.gguf for 512). Empty or a different size: a
  // byte-level vocabulary (<unk>, <s>, </s>, <0x00>..<0xFF>, "▁", then "<synth-N>"
  // fillers).
  std::string vocab_source;
  int n_threads = 1;
};

// Writes a deterministic random Llama GGUF: weights N(0, 0.02²), norm weights 1 + 0.1·N(0, 1),
// drawn per tensor row from a counter-based generator keyed on (seed, tensor, row), so the file
// is byte-identical for any thread count. Metadata: llama.* hparams, rope.freq_base 10000,
// rms eps 1e-5, kakeya.synthetic = true, kakeya.synth.{seed,shape}.
// Errors: "bad_shape" (non-positive sizes, n_embd % n_head, n_head % n_head_kv, row lengths not a
// multiple of the type's block size, n_vocab < 259 without a matching vocab source),
// "unsupported_type", "io", GGUF errors from the vocab source.
Status write_synth_model(const SynthOptions& options, const std::string& path);

}  // namespace kakeya::engine
