#include "engine/presets/ar_bench.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>

#include "engine/llama.h"
#include "engine/presets/bench_table.h"

namespace kakeya::engine {
namespace {

constexpr const char* kSampleText =
    "Once upon a time, there was a little girl named Lily. She loved to play outside in the park "
    "with her friends. One day, she saw a big red ball under a tall green tree. ";
constexpr const char* kWarmupText =
    "The quick brown fox jumps over the lazy dog while the weather stays calm and the birds sing. ";

struct SampleTiming {
  double prefill_s = 0, decode_s = 0;
};

Result<SampleTiming> run_sample(LlamaContext& ctx, const std::vector<int32_t>& prompt, int gen,
                                std::vector<int32_t>* out = nullptr) {
  ctx.truncate(0);
  SampleTiming t;
  const auto t0 = std::chrono::steady_clock::now();
  KAKEYA_ASSIGN_OR_RETURN(std::vector<int32_t> next, ctx.eval_argmax(prompt));
  t.prefill_s = seconds_since(t0);
  const auto t1 = std::chrono::steady_clock::now();
  for (int i = 0; i < gen; ++i) {
    const int32_t one[1] = {next[0]};
    if (out != nullptr) out->push_back(one[0]);
    KAKEYA_ASSIGN_OR_RETURN(next, ctx.eval_argmax(one));
  }
  t.decode_s = seconds_since(t1);
  return t;
}

}  // namespace

std::vector<int32_t> bench_prompt(const Tokenizer& tok, const std::string& text, size_t n, size_t offset) {
  std::string repeated;
  std::vector<int32_t> body;
  while (body.size() < n + offset) {
    repeated += text;
    body = tok.encode(repeated, false);
  }
  std::vector<int32_t> ids = {tok.bos() >= 0 ? tok.bos() : body[0]};
  ids.insert(ids.end(), body.begin() + static_cast<long>(offset), body.begin() + static_cast<long>(offset + n - 1));
  return ids;
}

Result<nlohmann::json> run_ar_bench(const LlamaModel& model, const Tokenizer& tok, Backend& backend,
                                    const ArBenchConfig& a, const Progress& progress) {
  const std::vector<size_t>& lengths = a.prompt_lengths;
  if (lengths.empty()) return make_error("bad_param", "--prompt-lengths is empty");
  for (size_t len : lengths)
    if (len < 1) return make_error("bad_param", "--prompt-lengths: 0 is not a positive integer");
  if (a.samples < 1 || a.gen_tokens < 1) return make_error("bad_param", "--samples and --gen-tokens must be >= 1");
  KAKEYA_ASSIGN_OR_RETURN(std::unique_ptr<LlamaContext> context,
                          LlamaContext::create(model, backend, ContextOptions{a.n_ctx, a.n_batch}));
  LlamaContext& ctx = *context;
  const size_t max_len = *std::max_element(lengths.begin(), lengths.end());
  for (size_t len : lengths) {
    if (len + static_cast<size_t>(a.gen_tokens) > ctx.n_ctx())
      return make_error("context_overflow", "prompt length " + std::to_string(len) + " + " +
                                                std::to_string(a.gen_tokens) + " generated tokens exceed n_ctx " +
                                                std::to_string(ctx.n_ctx()));
  }

  // Warm-up: the longest prompt length, a different text, not timed and never a sample.
  report_progress(progress, "warm-up (" + std::to_string(max_len) + " prompt tokens, untimed)");
  const auto warm_prompt = bench_prompt(tok, kWarmupText, max_len, 0);
  KAKEYA_TRY(run_sample(ctx, warm_prompt, std::min(a.gen_tokens, 8)));

  nlohmann::json rows = nlohmann::json::array();
  nlohmann::json aggregates = nlohmann::json::array();
  nlohmann::json gate_arms = nlohmann::json::array();  // the evidence gate's shape (bridge/gate.h)
  const int threads = backend.info().threads;
  for (size_t len : lengths) {
    std::vector<double> pf_s, dc_s, pf_tps, dc_tps;
    nlohmann::json gate_samples = nlohmann::json::array();
    for (int s = 0; s < a.samples; ++s) {
      // Each sample gets its own window of the sample text (offset 7·s).
      const auto prompt = bench_prompt(tok, kSampleText, len, static_cast<size_t>(s) * 7);
      std::vector<int32_t> generated;
      KAKEYA_ASSIGN_OR_RETURN(const SampleTiming t, run_sample(ctx, prompt, a.gen_tokens, &generated));
      gate_samples.push_back({{"prompt_id", "sample-L" + std::to_string(len) + "-" + std::to_string(s)},
                              {"prefill_s", t.prefill_s},
                              {"decode_s", t.decode_s},
                              {"e2e_s", t.prefill_s + t.decode_s},
                              {"decode_tokens", a.gen_tokens},
                              {"text", tok.decode(generated)},
                              {"resident_kv_bytes", ctx.kv().resident_bytes()}});
      const double ptps = static_cast<double>(len) / t.prefill_s;
      const double dtps = a.gen_tokens / t.decode_s;
      pf_s.push_back(t.prefill_s);
      dc_s.push_back(t.decode_s);
      pf_tps.push_back(ptps);
      dc_tps.push_back(dtps);
      rows.push_back({{"prompt_tokens", len},
                      {"sample", s},
                      {"prefill_s", t.prefill_s},
                      {"decode_s", t.decode_s},
                      {"e2e_s", t.prefill_s + t.decode_s},
                      {"decode_tokens", a.gen_tokens},
                      {"prefill_tok_s", ptps},
                      {"decode_tok_s", dtps},
                      {"kv_resident_bytes", ctx.kv().resident_bytes()}});
      char line[128];
      std::snprintf(line, sizeof line, "L=%zu sample %d: prefill %.1f tok/s, decode %.1f tok/s", len, s, ptps, dtps);
      report_progress(progress, line);
    }
    nlohmann::json arm = {{"name", "prompt-" + std::to_string(len)},
                          {"role", "baseline"},
                          {"timing_scope", "decode_only"},
                          {"config", {{"prompt_tokens", len}, {"gen_tokens", a.gen_tokens}, {"threads", threads}}},
                          {"samples", gate_samples},
                          {"aggregates", {{"decode_tok_s_median", summarize(dc_tps).median},
                                          {"decode_tokens_median", a.gen_tokens},
                                          {"resident_kv_bytes_measured", true}}}};
    arm.update(arm_backend(a.backend, backend));
    gate_arms.push_back(std::move(arm));
    aggregates.push_back({{"name", "prompt-" + std::to_string(len)},
                          {"prompt_tokens", len},
                          {"samples", a.samples},
                          {"decode_tokens", a.gen_tokens},
                          {"prefill_s", to_json(summarize(pf_s))},
                          {"decode_s", to_json(summarize(dc_s))},
                          {"prefill_tok_s", to_json(summarize(pf_tps))},
                          {"decode_tok_s", to_json(summarize(dc_tps))}});
  }

  nlohmann::json r = report_envelope("ar-bench", a.backend, backend, &model, &ctx.weights());
  r["config"] = {{"prompt_lengths", lengths},
                 {"gen_tokens", a.gen_tokens},
                 {"samples", a.samples},
                 {"threads", threads},
                 {"n_ctx", ctx.n_ctx()},
                 {"n_batch", a.n_batch},
                 {"weight_layout", ctx.weights().layout.value("layout", backend.info().name)},
                 {"batched_matmul", backend.info().options.value("batched_matmul", backend.info().name)},
                 {"decoding", "greedy"},
                 {"timing_scope", "prefill: one eval of the whole prompt from an empty KV cache; "
                                  "decode: gen_tokens one-token evals; tokenization excluded"}};
  r["warmup"] = {{"done", true},
                 {"timed", false},
                 {"prompt_tokens", warm_prompt.size()},
                 {"distinct_from_samples", true},
                 {"prompt_id", "warmup"}};
  r["samples"] = rows;
  r["aggregates"] = aggregates;
  // This process's own peak RSS (VmHWM): see peak_rss_bytes().
  r["peak_rss_bytes"] = peak_rss_bytes();
  r["arms"] = gate_arms;
  // llama-bench's view of the same samples (presets/bench_table.h).
  KAKEYA_ASSIGN_OR_RETURN(const std::vector<BenchRow> table, ar_bench_table(r));
  r["table"] = nlohmann::json::array();
  for (const BenchRow& row : table) r["table"].push_back(to_json(row));
  return r;
}

}  // namespace kakeya::engine
