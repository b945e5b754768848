#pragma once
// Draft sources for speculative decoding: something cheap that proposes the next k tokens, which
// the target then verifies in one batched forward pass (speculative.h).
//
// Kinds (DESIGN.md §4):
//   gguf:PATH   a separate draft model sharing the target's vocabulary (checked at load: same size
//               and every token string equal);
//   layers:K    the target's own first K layers + its output head (layer skipping /
//               self-speculation); runs inside the target's LlamaContext and shares its KV cache
//               for those layers (LlamaContext::eval_layers), so it needs no prefill of its own;
//   quant:TYPE  a Q4_0 or Q8_0 copy of the target, built by quantizing the target's weights with
//               quantize_row_{q4_0,q8_0}_ref (rows whose length is not a multiple of 32, and the
//               norm vectors, stay as they are);
//   lookup:N    prompt lookup decoding: the continuation of the most recent earlier occurrence of
//               the context's last n-gram (n = N down to 1).
//
// Protocol, per generated sequence: begin(prompt) once after the target's prefill; then per block
// propose(context, k) where context = prompt + every committed token (the target's KV holds all
// but the last one); then commit(n_committed) once the target has accepted a prefix, so the draft
// can trim rejected K/V (O(1) truncate). A draft's own K/V state is kept consistent by matching
// its evaluated tokens against the context (longest common prefix), so a missed notification
// costs re-evaluation, never a wrong proposal.
//
// REQUIRES: external synchronization (one decoding loop at a time per draft source).
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "bridge/result.h"
#include "engine/llama.h"
#include "engine/model.h"
#include "engine/sampling.h"

namespace kakeya::engine {

// One proposed block.
struct DraftBlock {
  std::vector<int32_t> tokens;  // [k'] with k' <= k (may be empty: nothing to propose)
  // For sampling (temperature > 0): q[i] is the distribution tokens[i] was drawn from
  // ([n_vocab], sums to 1). Empty for greedy proposals. An empty row q[i] (a deterministic
  // draft such as lookup, used with sampling) means one-hot on tokens[i].
  std::vector<std::vector<float>> q;
};

class DraftSource {
 public:
  virtual ~DraftSource() = default;
  // "gguf", "layers", "quant" or "lookup".
  virtual std::string kind() const = 0;
  // The spec string it was made from, e.g. "layers:1" (for reports).
  virtual std::string spec() const = 0;
  // Starts a new sequence after the target prefilled `prompt`. Errors from the draft's prefill.
  virtual Status begin(std::span<const int32_t> prompt) = 0;
  // Up to k tokens continuing `context`. `sampling` null or greedy → argmax proposals and empty
  // q; otherwise tokens are drawn with `sampler` from sampling_probabilities(draft logits,
  // sampler->params()) and q holds those distributions.
  virtual Result<DraftBlock> propose(std::span<const int32_t> context, int k, Sampler* sampler) = 0;
  // The first n_committed tokens of the last context (+ its proposal) are now committed; K/V
  // beyond them is stale and may be trimmed.
  virtual void commit(size_t n_committed) = 0;
  // Bytes of KV the draft holds beyond the target's (0 for layer-skip and lookup).
  virtual size_t resident_kv_bytes() const { return 0; }
};

// A draft model ("gguf", "quant") runs in its own context, on `backend`: the target context's
// backend when null. A separate backend lets the target's options (e.g. the CPU's batched matmul
// mode chosen for verify blocks) differ from the draft's.
struct DraftOptions {
  Backend* backend = nullptr;
  size_t n_ctx = 0;  // context for a draft model; 0 = the target context's n_ctx
  // Directory for the temporary quantized copy (the file is unlinked right after it is mapped).
  std::string temp_dir = "/tmp";
};

// Errors "vocab_mismatch" unless both vocabularies have the same size and every token string is
// equal; the message names the first differing id and both strings (or both sizes).
Status check_same_vocab(const GgufFile& target, const GgufFile& draft);

// Parses "gguf:PATH", "layers:K", "quant:q4_0|q8_0", "lookup:N" and builds the source over
// `target` (the LlamaContext the target decodes in; it must outlive the source).
// Errors: "bad_param" (unknown kind, K outside [1, n_layer - 1], N outside [1, 16], quant type
// not q4_0/q8_0), model load errors, "vocab_mismatch", "io".
Result<std::unique_ptr<DraftSource>> make_draft_source(const std::string& spec, LlamaContext& target,
                                                       const DraftOptions& options);

// Writes a copy of `model`'s GGUF with every 2-D weight whose row length is a multiple of 32
// converted to `type` (Q4_0 or Q8_0) by the reference quantizers (requantize.h, pure); metadata
// copied, general.file_type set, plus kakeya.draft.quantized_from = the source sha256.
// Errors: "unsupported_type", "io".
Status write_quantized_copy(const LlamaModel& model, GgmlType type, const std::string& path);

// Prompt lookup (Saxena 2023, "prompt lookup decoding"; llama.cpp's `lookup` example): for
// n = max_ngram down to 1, the most recent earlier occurrence of context's last n tokens; returns
// up to k tokens that followed it (empty when nothing matches).
std::vector<int32_t> lookup_ngram(std::span<const int32_t> context, int max_ngram, int k);

}  // namespace kakeya::engine
