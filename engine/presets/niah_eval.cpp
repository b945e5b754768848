#include "engine/presets/niah_eval.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <set>

#include "engine/presets/niah.h"
#include "engine/presets/report.h"

namespace kakeya::engine {

Result<GreedyRun> run_greedy(LlamaContext& ctx, const KvPolicy& policy,
                             const std::vector<int32_t>& prompt, int decode_tokens) {
  ctx.kv().clear();
  KAKEYA_TRY(apply_kv_policy(ctx.kv(), policy));
  GreedyRun run;
  const auto t0 = std::chrono::steady_clock::now();
  KAKEYA_ASSIGN_OR_RETURN(std::vector<int32_t> next, ctx.eval_argmax(prompt));
  run.prefill_s = seconds_since(t0);
  run.resident_kv_bytes = ctx.kv().resident_bytes();
  const auto t1 = std::chrono::steady_clock::now();
  for (int i = 0; i < decode_tokens; ++i) {
    const int32_t id = next[0];
    run.ids.push_back(id);
    if (i + 1 == decode_tokens) break;
    const int32_t one[1] = {id};
    KAKEYA_ASSIGN_OR_RETURN(next, ctx.eval_argmax(one));
    run.resident_kv_bytes = std::max(run.resident_kv_bytes, ctx.kv().resident_bytes());
  }
  run.decode_s = seconds_since(t1);
  run.kv_tokens = ctx.n_past();
  return run;
}

Result<double> answer_logprob(LlamaContext& ctx, const KvPolicy& policy,
                              const std::vector<int32_t>& prompt,
                              const std::vector<int32_t>& answer) {
  ctx.kv().clear();
  KAKEYA_TRY(apply_kv_policy(ctx.kv(), policy));
  if (prompt.size() > 1) {
    const std::vector<int32_t> head(prompt.begin(), prompt.end() - 1);
    KAKEYA_TRY(ctx.eval(head));
  }
  std::vector<int32_t> tail{prompt.back()};
  tail.insert(tail.end(), answer.begin(), answer.end() - 1);
  KAKEYA_ASSIGN_OR_RETURN(std::vector<float> logits, ctx.eval(tail, true));
  const size_t V = static_cast<size_t>(ctx.n_vocab());
  double total = 0;
  for (size_t i = 0; i < answer.size(); ++i) {
    const float* row = logits.data() + i * V;
    const float mx = *std::max_element(row, row + V);
    double z = 0;
    for (size_t j = 0; j < V; ++j) z += std::exp(static_cast<double>(row[j] - mx));
    total += static_cast<double>(row[answer[i]] - mx) - std::log(z);
  }
  return total / static_cast<double>(answer.size());
}

namespace {

double median_of(std::vector<double> v) { return summarize(std::move(v)).median; }

}  // namespace

Result<nlohmann::json> run_niah_eval(const LlamaModel& model, const Tokenizer& tok, Backend& backend,
                                     const NiahEvalConfig& cfg, const Progress& progress) {
  using nlohmann::json;
  if (cfg.arms.empty()) return make_error("bad_param", "niah-eval: no arms");
  const auto oracle_it = std::find_if(cfg.arms.begin(), cfg.arms.end(),
                                      [](const NiahArm& a) { return a.role == "oracle"; });
  if (oracle_it == cfg.arms.end()) return make_error("bad_param", "niah-eval: no arm with role oracle");
  if (cfg.lines.empty()) return make_error("bad_param", "niah-eval: --lines is empty");
  if (cfg.decode_tokens < 1) return make_error("bad_param", "niah-eval: --decode-tokens must be >= 1");
  for (int l : cfg.lines) KAKEYA_TRY(check_niah_params(l, l, cfg.samples));

  // Prompts per rung (identical for every arm).
  struct Prompt {
    NiahSample s;
    std::vector<int32_t> ids;
    std::string id;
  };
  std::map<int, std::vector<Prompt>> prompts;
  size_t longest = 0;
  for (int l : cfg.lines) {
    auto& v = prompts[l];
    const auto samples = generate_niah(cfg.seed, l, l, cfg.samples, cfg.with_needle);
    for (size_t i = 0; i < samples.size(); ++i) {
      Prompt p{samples[i], tok.encode(samples[i].prompt, tok.add_bos()),
               "niah-s" + std::to_string(cfg.seed) + "-l" + std::to_string(l) + "-" + std::to_string(i)};
      longest = std::max(longest, p.ids.size());
      v.push_back(std::move(p));
    }
  }
  ContextOptions opts;
  opts.n_batch = cfg.n_batch;
  opts.n_ctx = cfg.n_ctx != 0 ? cfg.n_ctx
                              : std::max(static_cast<size_t>(model.hparams().n_ctx_train),
                                         longest + static_cast<size_t>(cfg.decode_tokens));
  KAKEYA_ASSIGN_OR_RETURN(std::unique_ptr<LlamaContext> context, LlamaContext::create(model, backend, opts));
  LlamaContext& ctx = *context;
  const KvCacheShape& shape = ctx.kv().shape();

  json arms = json::array();
  json comparisons = json::array();
  std::map<std::string, double> recall_of, kv_of;
  for (int l : cfg.lines) {
    std::string oracle_name;
    for (const NiahArm& arm : cfg.arms) {
      KAKEYA_TRY(check_kv_policy(arm.policy, shape));
      const std::string name = arm.name + "@" + std::to_string(l);
      json samples = json::array();
      std::vector<double> kv_bytes;
      int n_recall = 0;
      size_t max_tokens = 0;
      for (const Prompt& p : prompts[l]) {
        KAKEYA_ASSIGN_OR_RETURN(GreedyRun run, run_greedy(ctx, arm.policy, p.ids, cfg.decode_tokens));
        const std::string text = niah_continuation(tok, run.ids);
        const bool rec = p.s.needle && niah_recalled(text, p.s.answer);
        n_recall += rec ? 1 : 0;
        kv_bytes.push_back(static_cast<double>(run.resident_kv_bytes));
        max_tokens = std::max(max_tokens, run.kv_tokens);
        samples.push_back({{"prompt_id", p.id},
                           {"n_lines", p.s.n_lines},
                           {"insert_at", p.s.insert_at},
                           {"n_prompt_tokens", p.ids.size()},
                           {"needle", p.s.needle},
                           {"answer", p.s.answer},
                           {"recall", p.s.needle ? json(rec) : json(nullptr)},
                           {"token_ids", run.ids},
                           {"text", text},
                           {"decode_tokens", run.ids.size()},
                           {"kv_tokens", run.kv_tokens},
                           {"resident_kv_bytes", run.resident_kv_bytes},
                           {"prefill_s", run.prefill_s},
                           {"decode_s", run.decode_s},
                           {"e2e_s", run.prefill_s + run.decode_s}});
        report_progress(progress, name + " " + p.id + " recall=" + (rec ? "1" : "0") + " kv=" +
                                      std::to_string(run.resident_kv_bytes) + " B  \"" + text + "\"");
      }
      const double n = static_cast<double>(prompts[l].size());
      const json recall = cfg.with_needle && n > 0 ? json(n_recall / n) : json(nullptr);
      const double kv_med = median_of(kv_bytes);
      recall_of[name] = cfg.with_needle && n > 0 ? n_recall / n : 0.0;
      kv_of[name] = kv_med;
      json arm_j =
          {{"name", name},
           {"role", arm.role},
           {"timing_scope", "e2e"},
           {"config", {{"policy", to_json(arm.policy)}, {"describe", arm.policy.describe()}, {"lines", l}}},
           {"samples", samples},
           {"aggregates",
            {{"recall", recall},
             {"n_samples", samples.size()},
             {"resident_kv_bytes_measured", true},
             {"resident_kv_bytes_median", kv_med},
             {"analytical_bound_bytes",
              {{"label", "analytical"},
               {"bytes", kv_policy_bound_bytes(arm.policy, shape, max_tokens, cfg.n_batch)}}},
             {"peak_rss_bytes", peak_rss_bytes()}}}};
      arm_j.update(arm_backend(cfg.backend, backend));
      arms.push_back(std::move(arm_j));
      if (&arm == &*oracle_it) oracle_name = name;
    }
    for (const NiahArm& arm : cfg.arms) {
      if (arm.role == "oracle") continue;
      const std::string name = arm.name + "@" + std::to_string(l);
      json rc = {{"baseline", oracle_name},
                 {"candidate", name},
                 {"metric", "recall"},
                 {"oracle_recall", recall_of[oracle_name]},
                 {"candidate_recall", recall_of[name]},
                 {"delta_pp", 100.0 * (recall_of[name] - recall_of[oracle_name])}};
      json mc = {{"baseline", oracle_name},
                 {"candidate", name},
                 {"metric", "resident_kv_bytes"},
                 {"baseline_bytes", kv_of[oracle_name]},
                 {"candidate_bytes", kv_of[name]},
                 {"ratio", kv_of[name] > 0 ? kv_of[oracle_name] / kv_of[name] : 0.0}};
      if (cfg.claim && cfg.with_needle) {
        rc["claim"] = "recall";
        mc["claim"] = "memory_saving";
      }
      comparisons.push_back(rc);
      comparisons.push_back(mc);
    }
  }
  json r = report_envelope("niah-eval", cfg.backend, backend, &model, &ctx.weights());
  r["config"] = {{"seed", cfg.seed},       {"lines", cfg.lines},       {"samples", cfg.samples},
                 {"decode_tokens", cfg.decode_tokens}, {"with_needle", cfg.with_needle},
                 {"decoding", "greedy (argmax) for decode_tokens tokens; recall judged on the text before the first end-of-generation token"},
                 {"temperature", 0},       {"n_batch", cfg.n_batch},   {"n_ctx", opts.n_ctx},
                 {"threads", backend.info().threads}, {"claim", cfg.claim}};
  r["arms"] = arms;
  r["comparisons"] = comparisons;
  r["peak_rss_bytes"] = peak_rss_bytes();
  return r;
}

}  // namespace kakeya::engine
