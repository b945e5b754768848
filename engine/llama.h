#pragma once
// The Llama forward pass, written once over the backend interface (backend.h): one inference
// context (KV cache, scratch tensors) over a LlamaModel on a Backend. Which backend runs is the
// caller's choice (open_backend); this code never depends on it.
//
// Arithmetic (matches llama.cpp c392e50's build_llama / build_qwen2 on the CPU backend, F32 KV
// cache):
//   x = token_embd[t]; per layer: h = x + Wo·attn(rope(Wq·n + bq), rope(Wk·n + bk), Wv·n + bv) + bo
//   with n = rmsnorm(x)·attn_norm; x = h + Wdown·(silu(Wgate·m + bg) * (Wup·m + bu)) + bd with
//   m = rmsnorm(h)·ffn_norm; logits = Woutput·(rmsnorm(x)·output_norm) (Woutput = token_embd
//   when the file ties them). Biases are added only where the model has them (model.h: qwen2's
//   q/k/v biases, a llama file's optional ones).
//   rmsnorm(x) = x / sqrt(mean(x²) + eps) (sum of squares in double, like ggml);
//   RoPE: the model's RopeParams (engine/rope.h: normal pairs for llama, NEOX for qwen2, the
//   rope_freqs.weight factors of Llama-3.1/3.2, linear or YaRN scaling), the angle built by
//   repeated multiplication by base^(−2/n_dims), as ggml does;
//   attention: query head h reads KV head h / (n_head/n_head_kv) (GQA; MQA when n_head_kv = 1),
//   scores scaled by 1/sqrt(head_dim), causal by the slots' original positions (slot position <=
//   query position), and bounded KV heads by the policy's sink + window (kv_cache.h).
// How each op is computed (matmul paths, activation conversion, summation order) is the
// backend's: cpu/cpu_backend.h for the CPU. Within a forward pass the context only enqueues ops;
// logits (or their argmax) are read back once at the end.
//
// REQUIRES: external synchronization — a context is used by one thread at a time, and contexts
// sharing a backend one after another. Several contexts may share one LlamaModel and Backend; the
// model and the backend must outlive the context.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "bridge/result.h"
#include "engine/backend.h"
#include "engine/kv_cache.h"
#include "engine/model.h"

namespace kakeya::engine {

struct ContextOptions {
  size_t n_ctx = 0;      // maximum sequence length in tokens; 0 = the model's context_length
  size_t n_batch = 512;  // prefill chunk: tokens per forward pass (>= 1)
};

class LlamaContext {
 public:
  // A context for `model` on `backend`: uploads the model's weights to the backend unless a
  // context holds them already (Backend::weights). Errors: the upload's ("unsupported_type"
  // naming the tensor, "out_of_memory").
  static Result<std::unique_ptr<LlamaContext>> create(const LlamaModel& model, Backend& backend,
                                                      ContextOptions options = {});
  ~LlamaContext();
  LlamaContext(const LlamaContext&) = delete;
  LlamaContext& operator=(const LlamaContext&) = delete;

  // Appends `tokens` at positions n_past() .. n_past()+n-1 and runs the forward pass in chunks
  // of n_batch. Returns the logits predicting the token after the last one ([n_vocab]), or, when
  // all_logits, those after every token ([n_tokens][n_vocab], row i after tokens[0..i]).
  // Without all_logits the last layer runs its queries, attention, output projection and FFN for
  // the last token only (K and V for every token, into the cache), and a chunk before the last
  // runs them for none: as llama.cpp skips the last layer's FFN for rows it does not output
  // (inp_out_ids), one step further. That row's last-layer matmuls then take the one-token path.
  // Errors (nothing is appended on error): "empty_input"; "bad_token" (id outside [0, n_vocab),
  // message gives the index and id); "context_overflow" (n_past()+n > n_ctx); the backend's
  // "out_of_memory".
  Result<std::vector<float>> eval(std::span<const int32_t> tokens, bool all_logits = false);
  // As eval(), reading back only the argmax of each logits row (ties: the lowest id, as
  // sampling.h argmax): [1], or [n_tokens] when all_rows. For greedy decoding and greedy
  // speculative acceptance.
  Result<std::vector<int32_t>> eval_argmax(std::span<const int32_t> tokens, bool all_rows = false);
  // Greedy speculative verify: appends `block` = [last, d1..dk] like eval() and decides the
  // acceptance of the drafts d1..dk on the backend (Backend::accept_greedy), so only the outcome
  // is read back: [k+2] = {accepted count n, d1..dn, correction or bonus token, -1...}. A block
  // longer than n_batch (several forward passes) reads back its rows' argmax ids and applies
  // the same rule on the host (greedy_acceptance). Errors: as eval().
  Result<std::vector<int32_t>> eval_accept_greedy(std::span<const int32_t> block);

  // Forgets every token at position >= n_tokens (KV length reset, O(1)). Drops partial tokens.
  void truncate(size_t n_tokens) {
    drop_partial();
    kv_->truncate(n_tokens);
  }

  // Layer-skip drafting (self-speculation): runs `tokens` through the first n_layers layers only,
  // then output_norm and the output head, at positions n_past() + n_partial() ... Their K/V are
  // appended to layers [0, n_layers) WITHOUT committing: n_past() is unchanged and the tokens
  // count as "partial". Those layers' K/V for committed tokens are the target's own (shared
  // cache). Returns the logits after the last token ([n_vocab], or [n][n_vocab] when
  // all_logits). n_layers == the model's n_layer with no partial tokens is exactly eval().
  // The next eval() or truncate() drops partial tokens first (O(1) per layer).
  // Errors: as eval(), plus "bad_param" (n_layers outside [1, n_layer], or a partial run with a
  // different n_layers still pending).
  Result<std::vector<float>> eval_layers(std::span<const int32_t> tokens, size_t n_layers,
                                         bool all_logits = false);
  // Partial (uncommitted, layer-skip) tokens appended since the last commit.
  size_t n_partial() const { return partial_tokens_; }
  // Forgets the partial tokens of eval_layers() (truncates layers [0, partial_layers) to n_past()).
  void drop_partial();

  size_t n_past() const { return kv_->n_committed(); }
  size_t n_ctx() const { return options_.n_ctx; }
  int64_t n_vocab() const { return model_.hparams().n_vocab; }
  KvCache& kv() { return *kv_; }
  const KvCache& kv() const { return *kv_; }
  const LlamaModel& model() const { return model_; }
  Backend& backend() const { return backend_; }
  // The model's weights on the backend (shared with every context on the same model).
  const ModelWeights& weights() const { return *weights_; }
  const ContextOptions& options() const { return options_; }

 private:
  LlamaContext(const LlamaModel& model, Backend& backend, std::shared_ptr<const ModelWeights> weights,
               ContextOptions options);
  // What a forward pass reads back: nothing (a prefill chunk before the last), the logits of
  // the selected rows, their argmax ids, or the greedy acceptance of a verify block.
  struct Readback {
    bool all_rows = false;
    float* logits = nullptr;  // [rows][n_vocab]
    int32_t* ids = nullptr;   // [rows]
    // accept_greedy over every row (all_rows): drafts [rows-1], accept [rows+1].
    std::span<const int32_t> drafts;
    int32_t* accept = nullptr;
  };
  // One forward pass over n tokens at positions n_past() + n_partial() ...; n_layers < the
  // model's n_layer: a partial (layer-skip) pass, see eval_layers().
  Status forward(const int32_t* tokens, size_t n, size_t n_layers, const Readback& out);
  // eval(), eval_argmax() and eval_layers(): validation, then forward() in chunks of n_batch.
  Status eval_impl(std::span<const int32_t> tokens, size_t n_layers, bool all_rows, std::vector<float>* logits,
                   std::vector<int32_t>* ids);
  Status check_tokens(std::span<const int32_t> tokens, size_t room) const;
  // Scratch tensors for batches of up to n tokens (grown through the backend).
  Status reserve_scratch(size_t n);

  const LlamaModel& model_;
  Backend& backend_;
  std::shared_ptr<const ModelWeights> weights_;
  ContextOptions options_;
  std::unique_ptr<KvCache> kv_;
  struct Scratch;
  std::unique_ptr<Scratch> s_;
  size_t partial_tokens_ = 0;  // eval_layers() tokens beyond n_past() in layers [0, partial_layers_)
  size_t partial_layers_ = 0;
};

}  // namespace kakeya::engine
