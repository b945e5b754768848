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
// The model is a plain, validated view of the file: every WeightMatrix points into the memory
// mapping. A backend uploads the weights it runs (Backend::weights in backend.h: the CPU backend
// reads most of them in place and may copy Q4_0/Q8_0 matmul weights into its packed layout).
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

// A 2-D weight W of shape [n_out rows][n_in cols] (GGUF ne = {n_in, n_out}); y = W·x. A vector
// (norm weights) is a matrix of one row.
struct WeightMatrix {
  std::string name;
  GgmlType type = GgmlType::F32;
  const uint8_t* data = nullptr;  // rows of row_bytes, into the mapping
  int64_t n_in = 0;
  int64_t n_out = 0;
  size_t row_bytes = 0;
  const uint8_t* row(int64_t r) const { return data + static_cast<size_t>(r) * row_bytes; }
};

struct LlamaLayerWeights {
  WeightMatrix attn_norm;       // [1][n_embd]
  WeightMatrix wq, wk, wv, wo;  // [n_head*hd][n_embd], [n_kv*hd][n_embd] ×2, [n_embd][n_head*hd]
  WeightMatrix ffn_norm;        // [1][n_embd]
  WeightMatrix w_gate, w_up;    // [n_ff][n_embd]
  WeightMatrix w_down;          // [n_embd][n_ff]
};

struct LlamaWeights {
  WeightMatrix token_embd;  // [n_vocab][n_embd]: row t is the embedding of token t
  std::vector<LlamaLayerWeights> layers;
  WeightMatrix output_norm;  // [1][n_embd]
  WeightMatrix output;       // [n_vocab][n_embd] (token_embd when tied)
  bool output_tied = false;
};

class LlamaModel {
 public:
  // Opens and validates a GGUF Llama model.
  // Errors: GGUF read errors; "unsupported_architecture" (general.architecture is not "llama",
  // message names it); "missing_tensor"; "bad_shape" (a tensor's ne disagrees with the hparams,
  // message names the tensor, expected and found); "bad_hparams" (e.g. n_embd % n_head != 0,
  // odd rope_dim, n_head % n_head_kv != 0); "bad_shape" also for a row (or norm vector) that is
  // not a whole number of its type's blocks.
  static Result<LlamaModel> load(const std::string& path);

  const LlamaHparams& hparams() const { return hparams_; }
  const LlamaWeights& weights() const { return weights_; }
  const GgufFile& gguf() const { return *gguf_; }
  const std::string& path() const { return path_; }
  // `kakeya.synthetic` metadata (true for random-weight files made by `kakeya-engine synth`).
  bool synthetic() const { return synthetic_; }
  // Unique per load, kept when the model is moved: the key of a backend's weight uploads.
  uint64_t id() const { return id_; }
  // Count of 2-D tensors per type name, e.g. {"q4_0": 155, "f32": 45}, plus 1-D tensors.
  std::vector<std::pair<std::string, int>> tensor_type_counts() const;

 private:
  LlamaModel() = default;
  std::unique_ptr<GgufFile> gguf_;  // heap-held: weight pointers stay valid when the model moves
  std::string path_;
  LlamaHparams hparams_;
  LlamaWeights weights_;
  bool synthetic_ = false;
  uint64_t id_ = 0;
};

}  // namespace kakeya::engine
