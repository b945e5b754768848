#pragma once
// Deterministic random-weight Llama GGUF files (`kakeya-engine synth`), written with
// engine/gguf_writer.h.
#include <cstdint>
#include <optional>
#include <string>

#include "bridge/result.h"
#include "engine/ggml_types.h"
#include "engine/presets/synth_mix.h"

namespace kakeya::engine {

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
  GgmlType type = GgmlType::F32;  // every 2-D tensor (unless `mix`); norm vectors stay F32
  // A llama.cpp file type whose per-tensor rules choose each 2-D tensor's type instead
  // (engine/presets/synth_mix.h: Q4_K_M, Q5_K_M, Q3_K_M, Q4_K_S, ...).
  std::optional<LlamaFileType> mix;
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
// is byte-identical for any thread count; quantized with llama-quantize's own arithmetic
// (engine/quantize.h). Metadata: llama.* hparams, rope.freq_base 10000, rms eps 1e-5,
// general.file_type (the mix, or llama_file_type_of_pure(type)), kakeya.synthetic = true,
// kakeya.synth.{seed,shape,vocab}.
// Errors: "bad_shape" (non-positive sizes, n_embd % n_head, n_head % n_head_kv, row lengths not a
// multiple of the type's block size, or for a mix of 32, n_vocab < 259 without a matching vocab
// source), "unsupported_type" (an activation-only type), "io", GGUF errors from the vocab source.
Status write_synth_model(const SynthOptions& options, const std::string& path);

}  // namespace kakeya::engine
