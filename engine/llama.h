#pragma once
// The Llama forward pass on CPU: one inference context (KV cache, scratch, threads) over a
// LlamaModel.
//
// Arithmetic (matches llama.cpp b4748's llm_build_llama on the CPU backend, F32 KV cache):
//   x = token_embd[t]; per layer: h = x + Wo·attn(rope(Wq·n), rope(Wk·n), Wv·n) with
//   n = rmsnorm(x)·attn_norm; x = h + Wdown·(silu(Wgate·m) * Wup·m) with m = rmsnorm(h)·ffn_norm;
//   logits = Woutput·(rmsnorm(x)·output_norm).
//   rmsnorm(x) = x / sqrt(mean(x²) + eps) (sum of squares in double, like ggml);
//   RoPE GGML mode 0: pairs (2i, 2i+1) of each head rotated by pos·base^(−2i/rope_dim) (the angle
//   is built by repeated multiplication by base^(−2/rope_dim), as ggml does);
//   attention: query head h reads KV head h / (n_head/n_head_kv), scores scaled by 1/sqrt(head_dim),
//   causal by the slots' original positions (slot position <= query position).
//
// Matmul paths:
//   * one token (decode): quantize_activations + matvec, multithreaded over rows — activations are
//     converted exactly like ggml-cpu (Q8_0/Q8_K/F16/BF16), so logits match llama.cpp's to ~1e-6
//     (up to ~1e-3 on the fragile synthetic references).
//   * several tokens, MatmulMode::kAuto (default): kSgemm for batches of at least
//     kMinSgemmTokens (32) tokens, kQuantizedActivations below — reading the weights once and
//     reusing them from cache beats dequantizing the whole model for a short prompt (ggml's BLAS
//     backend likewise takes only batches of >= 32). Packed weights (model.h) always take the
//     quantized path under kAuto: their kernels beat dequantize + sgemm at every batch size.
//   * several tokens (prefill/verify), MatmulMode::kSgemm: weights dequantized to f32
//     in row tiles (per-context scratch; F32 weights used in place) and multiplied with OpenBLAS
//     cblas_sgemm. Activations are NOT quantized, so for quantized weights the logits differ from
//     the decode path by the activation-quantization error (~2e-2 on the synthetic references).
//   * several tokens, MatmulMode::kQuantizedActivations: each token goes through the decode-path
//     kernels (quantized activations), so a batch gives the same logits as token-by-token decode
//     up to f32 summation order. Use it where batch and decode must agree (e.g. speculative verify
//     on quantized models).
//
// REQUIRES: external synchronization — a context is used by one thread at a time. Several
// contexts may share one LlamaModel.
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <span>
#include <vector>

#include "bridge/result.h"
#include "engine/kv_cache.h"
#include "engine/model.h"
#include "engine/cpu/thread_pool.h"

namespace kakeya::engine {

enum class MatmulMode { kAuto, kSgemm, kQuantizedActivations };
inline constexpr size_t kMinSgemmTokens = 32;  // kAuto's threshold

struct ContextOptions {
  size_t n_ctx = 0;      // maximum sequence length in tokens; 0 = the model's context_length
  int n_threads = 1;     // threads for the pool and for OpenBLAS (>= 1)
  size_t n_batch = 512;  // prefill chunk: tokens per forward pass (>= 1)
  MatmulMode batched_matmul = MatmulMode::kAuto;
};

class LlamaContext {
 public:
  // The context keeps a reference to `model`: the model must outlive it.
  // Sets OpenBLAS to one thread (process-wide): the context's pool of options.n_threads splits
  // every sgemm itself.
  LlamaContext(const LlamaModel& model, ContextOptions options);
  ~LlamaContext();
  LlamaContext(const LlamaContext&) = delete;
  LlamaContext& operator=(const LlamaContext&) = delete;

  // Appends `tokens` at positions n_past() .. n_past()+n-1 and runs the forward pass in chunks
  // of n_batch. Returns the logits predicting the token after the last one ([n_vocab]), or, when
  // all_logits, those after every token ([n_tokens][n_vocab], row i after tokens[0..i]).
  // Errors (nothing is appended on error): "empty_input"; "bad_token" (id outside [0, n_vocab),
  // message gives the index and id); "context_overflow" (n_past()+n > n_ctx).
  Result<std::vector<float>> eval(std::span<const int32_t> tokens, bool all_logits = false);

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
  // Changes the matmul mode of later batched evals (e.g. prefill with kSgemm, then verify
  // speculative blocks with kQuantizedActivations so they agree with one-token decode).
  void set_batched_matmul(MatmulMode mode) { options_.batched_matmul = mode; }
  // Whether a batch of n tokens goes through dequantize + sgemm (and batched attention).
  bool use_sgemm(size_t n) const {
    if (n <= 1 || options_.batched_matmul == MatmulMode::kQuantizedActivations) return false;
    return options_.batched_matmul == MatmulMode::kSgemm || n >= kMinSgemmTokens;
  }
  size_t n_past() const { return kv_->n_committed(); }
  size_t n_ctx() const { return options_.n_ctx; }
  int64_t n_vocab() const { return model_.hparams().n_vocab; }
  KvCache& kv() { return *kv_; }
  const KvCache& kv() const { return *kv_; }
  const LlamaModel& model() const { return model_; }
  const ContextOptions& options() const { return options_; }
  ThreadPool& pool() { return *pool_; }

 private:
  struct Scratch;
  // One forward pass over n tokens at positions n_past()..; writes logits of the selected rows.
  // n_layers < the model's n_layer: a partial (layer-skip) pass, see eval_layers().
  void forward(const int32_t* tokens, size_t n, bool all_logits, float* logits, size_t n_layers);
  // eval() and eval_layers(): validation, then forward() in chunks of n_batch.
  Result<std::vector<float>> eval_impl(std::span<const int32_t> tokens, bool all_logits,
                                       size_t n_layers);
  // One output of a fused matmul: y[t][w->n_out] = W·x[t].
  struct MatmulOut {
    const WeightMatrix* w;
    float* y;
  };
  // y[t][n_out] = W·x[t] for t in [0, n), for every output (all share the input x [n][n_in]).
  // Outputs of the same weight type share one activation conversion and one parallel region.
  void matmul(std::initializer_list<MatmulOut> outs, const float* x, size_t n);
  void matmul_sgemm(const WeightMatrix& w, const float* x, size_t n, float* y);
  bool sgemm_matmul(const WeightMatrix& w, size_t n) const;  // this matrix's path for n tokens
  void matmul_quantized(std::span<const MatmulOut> outs, const float* x, size_t n);
  void attention(size_t il, const float* q, size_t n, size_t pos0, float* out);
  void attention_batched(size_t il, const float* q, size_t n, size_t pos0, float* out);

  const LlamaModel& model_;
  ContextOptions options_;
  std::unique_ptr<ThreadPool> pool_;
  std::unique_ptr<KvCache> kv_;
  std::unique_ptr<Scratch> s_;
  size_t partial_tokens_ = 0;  // eval_layers() tokens beyond n_past() in layers [0, partial_layers_)
  size_t partial_layers_ = 0;
};

}  // namespace kakeya::engine
