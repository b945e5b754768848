#include "engine/presets/perplexity.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <memory>
#include <vector>

#include "engine/llama.h"
#include "engine/sampling.h"

namespace kakeya::engine {

Result<PerplexityPlan> plan_perplexity(size_t n_tokens, size_t n_ctx, int chunks) {
  if (n_ctx < 3) {
    return make_error("bad_param", "perplexity: n_ctx " + std::to_string(n_ctx) +
                                       " leaves no token to score (at least 3)");
  }
  if (chunks < 0) return make_error("bad_param", "perplexity: chunks " + std::to_string(chunks) + " is negative");
  if (n_tokens < 2 * n_ctx) {
    return make_error("out_of_range", "perplexity: the text tokenizes to " + std::to_string(n_tokens) +
                                            " tokens; a context of " + std::to_string(n_ctx) + " needs at least " +
                                            std::to_string(2 * n_ctx));
  }
  PerplexityPlan p;
  p.n_chunk = n_tokens / n_ctx;
  if (chunks > 0) p.n_chunk = std::min(p.n_chunk, static_cast<size_t>(chunks));
  p.first = n_ctx / 2;
  p.scored_per_chunk = n_ctx - 1 - p.first;
  return p;
}

Result<std::string> read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error("io", "cannot open " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return make_error("io", "cannot read " + path);
  std::string text = ss.str();
  if (!text.empty() && text.back() == '\n') text.pop_back();
  return text;
}

double token_nll(std::span<const float> logits, int32_t token) {
  return log_sum_exp(logits) - logits[static_cast<size_t>(token)];
}

Result<nlohmann::json> run_perplexity(const LlamaModel& model, const Tokenizer& tok, Backend& backend,
                                      const std::string& text, const PerplexityConfig& c, const Progress& progress) {
  if (tok.add_eos()) {
    return make_error("bad_param", "perplexity: the vocabulary adds EOS to every text (llama-perplexity refuses "
                                   "such models too)");
  }
  const std::vector<int32_t> tokens = tok.tokenize(text, /*add_special=*/true, /*parse_special=*/false);
  KAKEYA_ASSIGN_OR_RETURN(const PerplexityPlan plan, plan_perplexity(tokens.size(), c.n_ctx, c.chunks));
  KAKEYA_ASSIGN_OR_RETURN(std::unique_ptr<LlamaContext> context,
                          LlamaContext::create(model, backend, ContextOptions{c.n_ctx, c.n_batch}));
  LlamaContext& ctx = *context;
  const bool add_bos = tok.add_bos() && tok.bos() >= 0;
  const size_t n_vocab = static_cast<size_t>(model.hparams().n_vocab);
  if (c.n_ctx > static_cast<size_t>(model.hparams().n_ctx_train)) {
    report_progress(progress, "warning: n_ctx " + std::to_string(c.n_ctx) + " exceeds the model's context length " +
                                  std::to_string(model.hparams().n_ctx_train));
  }
  report_progress(progress, std::to_string(tokens.size()) + " tokens, " + std::to_string(plan.n_chunk) +
                                " chunks of " + std::to_string(c.n_ctx) + ", " +
                                std::to_string(plan.scored_per_chunk) + " scored per chunk, " +
                                std::to_string(backend.info().threads) + " threads");

  double nll = 0, nll2 = 0;
  size_t count = 0, eval_tokens = 0;
  double eval_s = 0;
  nlohmann::json rows = nlohmann::json::array();
  std::vector<int32_t> chunk;
  for (size_t i = 0; i < plan.n_chunk; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    chunk.assign(tokens.begin() + static_cast<long>(i * c.n_ctx), tokens.begin() + static_cast<long>((i + 1) * c.n_ctx));
    const int32_t original_first = chunk[0];
    if (add_bos) chunk[0] = tok.bos();
    ctx.truncate(0);
    // Positions [0, first): context only. [first, n_ctx − 1): each row scores the next token.
    KAKEYA_TRY(ctx.eval(std::span<const int32_t>(chunk.data(), plan.first)));
    KAKEYA_ASSIGN_OR_RETURN(
        std::vector<float> logits,
        ctx.eval(std::span<const int32_t>(chunk.data() + plan.first, plan.scored_per_chunk), /*all_logits=*/true));
    chunk[0] = original_first;
    double chunk_nll = 0;
    for (size_t j = 0; j < plan.scored_per_chunk; ++j) {
      const double v =
          token_nll(std::span<const float>(logits.data() + j * n_vocab, n_vocab), chunk[plan.first + j + 1]);
      chunk_nll += v;
      nll2 += v * v;
    }
    nll += chunk_nll;
    count += plan.scored_per_chunk;
    const double seconds = seconds_since(t0);
    eval_s += seconds;
    eval_tokens += c.n_ctx - 1;
    const double running = std::exp(nll / static_cast<double>(count));
    const double chunk_mean = chunk_nll / static_cast<double>(plan.scored_per_chunk);
    rows.push_back({{"chunk", i + 1},
                    {"nll_mean", chunk_mean},
                    {"ppl", std::exp(chunk_mean)},
                    {"ppl_running", running},
                    {"seconds", seconds}});
    char line[160];
    std::snprintf(line, sizeof line, "[%zu/%zu] PPL %.4f, %.2f s per chunk, %.0f s left", i + 1, plan.n_chunk,
                  running, seconds, eval_s / static_cast<double>(i + 1) * static_cast<double>(plan.n_chunk - i - 1));
    report_progress(progress, line);
  }
  const double mean = nll / static_cast<double>(count);
  const double ppl = std::exp(mean);
  const double var = nll2 / static_cast<double>(count) - mean * mean;
  const double stderr_ppl = var > 0 ? std::sqrt(var / static_cast<double>(count - 1)) * ppl : 0.0;

  nlohmann::json r = report_envelope("perplexity", c.backend, backend, &model, &ctx.weights());
  r["config"] = {{"file", c.file},
                 {"text_bytes", text.size()},
                 {"n_ctx", c.n_ctx},
                 {"n_batch", c.n_batch},
                 {"chunks", c.chunks},
                 {"add_bos", add_bos}};
  r["method"] =
      "llama-perplexity (llama.cpp c392e50): chunks of n_ctx tokens from an empty cache, first token BOS when the "
      "vocabulary adds one, the second half of each chunk scored (positions n_ctx/2 .. n_ctx-2 predicting the "
      "next token); PPL = exp(mean nll)";
  r["tokens"] = tokens.size();
  r["n_chunk"] = plan.n_chunk;
  r["scored_per_chunk"] = plan.scored_per_chunk;
  r["chunks"] = rows;
  r["aggregates"] = {{"ppl", ppl}, {"ppl_stderr", stderr_ppl}, {"nll_mean", mean}, {"scored_tokens", count}};
  r["timings"] = {{"eval_s", eval_s},
                  {"eval_tokens", eval_tokens},
                  {"tokens_per_s", eval_s > 0 ? static_cast<double>(eval_tokens) / eval_s : 0.0}};
  return r;
}

}  // namespace kakeya::engine
