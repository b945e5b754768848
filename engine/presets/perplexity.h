#pragma once
// perplexity: the figure llama.cpp's `llama-perplexity -m M -f TEXT -c N` prints
// (examples/perplexity/perplexity.cpp at c392e50, perplexity() without --ppl-stride), computed the
// same way so that numbers are comparable across engines.
//
// The rule (plan_perplexity):
//   * The whole text (read_text_file) is tokenized once, as llama.cpp does it: add_special (BOS when the
//     vocabulary adds one), special tokens not parsed. It must give N >= 2·n_ctx tokens.
//   * n_chunk = N / n_ctx chunks (floor; at most `chunks` when that is > 0) of n_ctx consecutive
//     tokens; the tail that does not fill a chunk is not used.
//   * Each chunk is evaluated alone, from an empty KV cache, at positions 0 .. n_ctx − 1, with its
//     first token replaced by BOS when the vocabulary adds one (the original token is what is
//     predicted, never that position).
//   * Only the second half is scored: the logits at positions first = n_ctx/2 .. n_ctx − 2 against
//     the token after each, n_ctx − 1 − first tokens per chunk.
//   * nll(token) = log Σ exp(l − max) − (l[token] − max) (exp in float, the sum in double);
//     PPL = exp(Σ nll / count); ± PPL·sqrt((mean(nll²) − mean(nll)²) / (count − 1)), which is what
//     llama-perplexity prints as "Final estimate: PPL = X +/- Y". The running estimate after
//     chunk i is its "[i]value".
// The first half of each chunk is evaluated without reading logits back, and the chunk's last
// token is never evaluated (nothing scores its logits).
//
// Report (kind "perplexity"): config {file, text_bytes, n_ctx, n_batch, chunks, add_bos}, model,
// engine, env, synthetic, method (the rule above in one line), tokens (N), n_chunk,
// scored_per_chunk, chunks[] {chunk (1-based), nll_mean, ppl, ppl_running, seconds},
// aggregates {ppl, ppl_stderr, nll_mean, scored_tokens}, timings {eval_s, eval_tokens, tokens_per_s}.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include <nlohmann/json.hpp>

#include "bridge/result.h"
#include "engine/backend.h"
#include "engine/model.h"
#include "engine/presets/report.h"
#include "engine/tokenizer.h"

namespace kakeya::engine {

struct PerplexityConfig {
  std::string file;     // recorded in the report (the text is passed to run_perplexity)
  size_t n_ctx = 512;   // tokens per chunk (llama-perplexity's -c)
  size_t n_batch = 512;
  int chunks = 0;       // > 0: at most this many chunks (llama-perplexity's --chunks); 0 = all
  std::string backend = "cpu";  // as requested (--backend): reports compare it with what ran
};

// How a text of n_tokens is scored (the rule in the header comment).
struct PerplexityPlan {
  size_t n_chunk = 0;           // chunks evaluated
  size_t first = 0;             // first scored position in a chunk (n_ctx / 2)
  size_t scored_per_chunk = 0;  // n_ctx − 1 − first
};
// Errors: "bad_param" (n_ctx < 3: nothing would be scored; chunks < 0), "out_of_range" (fewer
// than 2·n_ctx tokens, naming both numbers, as llama-perplexity refuses).
Result<PerplexityPlan> plan_perplexity(size_t n_tokens, size_t n_ctx, int chunks);

// The text of a file as llama.cpp's `-f` reads it: its bytes, one trailing '\n' dropped.
// Errors: "io" naming the file.
Result<std::string> read_text_file(const std::string& path);

// −log softmax(logits)[token], as llama-perplexity's log_softmax computes it.
double token_nll(std::span<const float> logits, int32_t token);

// Runs the evaluation of `text` on `backend`. `progress` gets one line per chunk (running PPL and
// the time left). Errors: plan_perplexity's; "bad_param" (a vocabulary that adds EOS, which
// llama-perplexity refuses too); context errors.
Result<nlohmann::json> run_perplexity(const LlamaModel& model, const Tokenizer& tok, Backend& backend,
                                      const std::string& text, const PerplexityConfig& config,
                                      const Progress& progress = {});

}  // namespace kakeya::engine
