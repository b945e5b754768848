#pragma once
// A Llama-family GGUF model: hyperparameters and a zero-copy view of the weights.
//
// Source of truth: the GGUF metadata `<arch>.*` keys as written by llama.cpp's convert scripts
// (gguf-py constants), and llama.cpp c392e50's llm_load_hparams / llm_load_tensors /
// llama_init_from_model (cparams) / build_llama and build_qwen2:
//   <arch>.context_length, .embedding_length, .block_count, .feed_forward_length,
//   .attention.head_count, .attention.head_count_kv (default head_count),
//   .attention.key_length / .value_length (the head size; default embedding_length / head_count;
//   both equal, as llama.cpp requires), .attention.layer_norm_rms_epsilon,
//   .rope.dimension_count (default head size; must equal it, as llama.cpp requires),
//   .rope.freq_base (default 10000), .rope.scaling.{type, factor, attn_factor,
//   original_context_length} (and the older .rope.scale_linear), .vocab_size (default: rows of
//   token_embd.weight); .expert_count > 0 (mixture of experts) is refused.
// Tensors: token_embd, blk.N.{attn_norm,attn_q,attn_k,attn_v,attn_output,ffn_norm,ffn_gate,
// ffn_up,ffn_down}.weight, output_norm, output (absent → tied to token_embd), and what the
// architecture adds (ArchSpec in model.cpp, the table of what each one changes):
//   llama   RoPE normal pairs; rope_freqs.weight (Llama-3.1/3.2 frequency factors, [head/2])
//           optional; the biases attn_q/k/v/output.bias and ffn_gate/up/down.bias optional
//           (llama.cpp's TENSOR_NOT_REQUIRED); Mistral and Llama-3.x files are `llama` files;
//   qwen2   RoPE NEOX pairs; attn_q/k/v.bias required; no frequency factors.
// Any other general.architecture is refused by name, and so is a rope.scaling.type other than
// none, linear or yarn (llama.cpp also knows longrope, which neither architecture uses).
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
#include "engine/rope.h"

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
  int64_t head_dim = 0;     // attention.key_length (default n_embd / n_head)
  RopeParams rope;          // the RoPE variant (engine/rope.h); rope.n_dims == head_dim
  float rms_eps = 1e-5f;
  int64_t n_gqa() const { return n_head / n_head_kv; }  // query heads per KV head
};

// A 2-D weight W of shape [n_out rows][n_in cols] (GGUF ne = {n_in, n_out}); y = W·x. A vector
// (norm weights, biases, frequency factors) is a matrix of one row. An optional tensor the file
// lacks is a WeightMatrix with data == nullptr (present() false).
struct WeightMatrix {
  std::string name;
  GgmlType type = GgmlType::F32;
  const uint8_t* data = nullptr;  // rows of row_bytes, into the mapping
  int64_t n_in = 0;
  int64_t n_out = 0;
  size_t row_bytes = 0;
  const uint8_t* row(int64_t r) const { return data + static_cast<size_t>(r) * row_bytes; }
  bool present() const { return data != nullptr; }
};

struct LlamaLayerWeights {
  WeightMatrix attn_norm;       // [1][n_embd]
  WeightMatrix wq, wk, wv, wo;  // [n_head*hd][n_embd], [n_kv*hd][n_embd] ×2, [n_embd][n_head*hd]
  WeightMatrix ffn_norm;        // [1][n_embd]
  WeightMatrix w_gate, w_up;    // [n_ff][n_embd]
  WeightMatrix w_down;          // [n_embd][n_ff]
  // Biases [1][rows of their matrix], each optional (present() false when the file has none).
  WeightMatrix bq, bk, bv, bo, b_gate, b_up, b_down;
};

struct LlamaWeights {
  WeightMatrix token_embd;  // [n_vocab][n_embd]: row t is the embedding of token t
  std::vector<LlamaLayerWeights> layers;
  WeightMatrix output_norm;  // [1][n_embd]
  WeightMatrix output;       // [n_vocab][n_embd] (token_embd when tied)
  bool output_tied = false;
  WeightMatrix rope_freqs;   // [1][head_dim/2] frequency factors (rope.h), shared by every layer; optional
};

// The general.architecture values LlamaModel::load accepts: {"llama", "qwen2"}.
std::vector<std::string> supported_architectures();

class LlamaModel {
 public:
  // Opens and validates a GGUF model of an architecture the engine runs (llama, qwen2).
  // Errors: GGUF read errors; "unsupported_architecture" (general.architecture is none of them,
  // or a mixture-of-experts file; the message names it and lists the supported ones);
  // "unsupported_architecture" also for a rope.scaling.type other than none, linear or yarn
  // (naming it);
  // "missing_tensor"; "bad_shape" (a tensor's ne disagrees with the hparams, message names the
  // tensor, expected and found); "bad_hparams" (e.g. n_embd % n_head != 0 without a key_length,
  // key_length != value_length, rope.dimension_count != the head size, n_head % n_head_kv != 0,
  // a negative rope.scaling.factor); "bad_shape" also for a row (or norm vector) that is not a
  // whole number of its type's blocks; "unsupported_type" (rope_freqs.weight not F32).
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
