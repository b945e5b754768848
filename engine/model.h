#pragma once
// A Llama-architecture GGUF model: hyperparameters and a zero-copy view of the weights.
//
// Source of truth: the GGUF metadata `llama.*` keys as written by llama.cpp's convert scripts
// (gguf-py constants), and llama.cpp's llm_load_hparams / llm_build_llama at b4748:
//   llama.context_length, .embedding_length, .block_count, .feed_forward_length,
//   .attention.head_count, .attention.head_count_kv (default head_count),
//   .attention.layer_norm_rms_epsilon, .rope.dimension_count (default head_dim),
//   .rope.freq_base (default 10000), .vocab_size (default: rows of token_embd.weight).
// Tensors: token_embd, blk.N.{attn_norm,attn_q,attn_k,attn_v,attn_output,ffn_norm,ffn_gate,
// ffn_up,ffn_down}, output_norm, output (absent → tied to token_embd).
// Weights stay in the memory-mapped file; a WeightMatrix points into the mapping. On request
// (ModelLoadOptions::pack_rows) Q4_0 and Q8_0 matmul weights are copied once, at load, into the
// row-interleaved layout of the packed kernels (quant.h, kPackRows); the mapping's pages of those
// tensors are then released (GgufFile::release_pages), so they are resident once.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "bridge/result.h"
#include "engine/ggml_types.h"
#include "engine/gguf.h"

namespace kakeya::engine {

struct LlamaHparams {
  std::string architecture;  // general.architecture ("llama")
  int64_t n_vocab = 0;
  int64_t n_ctx_train = 0;
  int64_t n_embd = 0;
  int64_t n_ff = 0;
  int64_t n_layer = 0;
  int64_t n_head = 0;
  int64_t n_head_kv = 0;
  int64_t head_dim = 0;     // n_embd / n_head
  int64_t rope_dim = 0;     // dimensions rotated per head (the rest pass through)
  float rope_freq_base = 10000.0f;
  float rms_eps = 1e-5f;
  int64_t n_gqa() const { return n_head / n_head_kv; }  // query heads per KV head
};

// A 2-D weight W of shape [n_out rows][n_in cols] (GGUF ne = {n_in, n_out}); y = W·x.
struct WeightMatrix {
  std::string name;
  GgmlType type = GgmlType::F32;
  const uint8_t* data = nullptr;  // rows of row_bytes, into the mapping
  int64_t n_in = 0;
  int64_t n_out = 0;
  size_t row_bytes = 0;
  // The same matrix in the packed layout (quant.h) owned by the LlamaModel, or nullptr. The
  // forward pass uses it whenever it is set; `data` stays valid (read back from the file).
  const uint8_t* packed = nullptr;
  const uint8_t* row(int64_t r) const { return data + static_cast<size_t>(r) * row_bytes; }
};

struct LlamaLayerWeights {
  std::vector<float> attn_norm;  // [n_embd], dequantized at load
  WeightMatrix wq, wk, wv, wo;   // [n_head*hd][n_embd], [n_kv*hd][n_embd] ×2, [n_embd][n_head*hd]
  std::vector<float> ffn_norm;   // [n_embd]
  WeightMatrix w_gate, w_up;     // [n_ff][n_embd]
  WeightMatrix w_down;           // [n_embd][n_ff]
};

struct LlamaWeights {
  WeightMatrix token_embd;  // [n_vocab][n_embd]: row t is the embedding of token t
  std::vector<LlamaLayerWeights> layers;
  std::vector<float> output_norm;  // [n_embd]
  WeightMatrix output;             // [n_vocab][n_embd] (token_embd when tied)
  bool output_tied = false;
};

// Whether Q4_0/Q8_0 weights are packed by default: when the active kernel set is a SIMD one (the
// portable packed kernels copy each row back first and are slower than the row-major ones).
bool default_pack_rows();
// pack_rows for a CLI/preset weight layout: "auto" → default_pack_rows(), "packed" → true,
// anything else ("row-major") → false.
inline bool pack_rows_for_layout(const std::string& layout) {
  return layout == "auto" ? default_pack_rows() : layout == "packed";
}

struct ModelLoadOptions {
  // Copy Q4_0/Q8_0 matmul weights (not token_embd's row lookups) into the packed layout. On the
  // 2-core VM measured (bench/README.md) one-token decode streams weights from memory as fast
  // packed as row-major, while blocks of tokens (prefill, speculative verify), which reuse the
  // weights from cache, run 1.5-3.7x faster packed on Q4_0.
  bool pack_rows = default_pack_rows();
};

class LlamaModel {
 public:
  // Opens and validates a GGUF Llama model.
  // Errors: GGUF read errors; "unsupported_architecture" (general.architecture is not "llama",
  // message names it); "missing_tensor"; "bad_shape" (a tensor's ne disagrees with the hparams,
  // message names the tensor, expected and found); "bad_hparams" (e.g. n_embd % n_head != 0,
  // odd rope_dim, n_head % n_head_kv != 0); "out_of_memory" (no room for a packed copy).
  static Result<LlamaModel> load(const std::string& path, ModelLoadOptions options = {});

  const LlamaHparams& hparams() const { return hparams_; }
  const LlamaWeights& weights() const { return weights_; }
  const GgufFile& gguf() const { return *gguf_; }
  const std::string& path() const { return path_; }
  // `kakeya.synthetic` metadata (true for random-weight files made by `kakeya-engine synth`).
  bool synthetic() const { return synthetic_; }
  // Matrices held in the packed layout, and their bytes (0 when none or pack_rows was off).
  size_t packed_matrices() const { return packed_.size(); }
  size_t packed_bytes() const { return packed_total_bytes_; }
  // Count of 2-D tensors per type name, e.g. {"q4_0": 155, "f32": 45}, plus 1-D tensors.
  std::vector<std::pair<std::string, int>> tensor_type_counts() const;

 private:
  LlamaModel() = default;
  std::unique_ptr<GgufFile> gguf_;  // heap-held: weight pointers stay valid when the model moves
  std::string path_;
  LlamaHparams hparams_;
  LlamaWeights weights_;
  bool synthetic_ = false;
  struct FreeDeleter {
    void operator()(uint8_t* p) const;
  };
  std::vector<std::unique_ptr<uint8_t, FreeDeleter>> packed_;  // 64-byte aligned packed copies
  size_t packed_total_bytes_ = 0;
};

}  // namespace kakeya::engine
