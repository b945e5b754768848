#include "engine/presets/selftest.h"

#include <algorithm>
#include <cmath>

#include "engine/llama.h"
#include "engine/presets/backend_ops.h"
#include "engine/presets/report.h"
#include "engine/tokenizer.h"

namespace kakeya::engine {
namespace {

using nlohmann::json;

json check(const std::string& name, bool passed, double value, double limit) {
  return {{"name", name}, {"passed", passed}, {"value", value}, {"limit", limit}};
}

float max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return INFINITY;
  float m = 0;
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::fabs(a[i] - b[i]));
  return m;
}

// Greedy ids from BOS (one-token evals) with each step's top-1/top-2 margin.
Result<std::vector<std::pair<int32_t, float>>> greedy_with_margins(LlamaContext& ctx, int32_t bos, size_t n) {
  std::vector<std::pair<int32_t, float>> out;
  int32_t tok = bos;
  for (size_t i = 0; i < n; ++i) {
    const int32_t one[1] = {tok};
    KAKEYA_ASSIGN_OR_RETURN(std::vector<float> logits, ctx.eval(one));
    const auto best = std::max_element(logits.begin(), logits.end());
    const float top = *best;
    *best = -INFINITY;
    const float second = *std::max_element(logits.begin(), logits.end());
    tok = static_cast<int32_t>(best - logits.begin());
    out.push_back({tok, top - second});
  }
  return out;
}

}  // namespace

Result<json> run_selftest(const SelftestConfig& c, Backend& backend, Backend& cpu) {
  KAKEYA_ASSIGN_OR_RETURN(std::vector<BackendOpResult> ops, run_backend_ops(backend));
  const json ops_json = backend_ops_json(backend, ops);

  KAKEYA_ASSIGN_OR_RETURN(LlamaModel model, LlamaModel::load(c.model));
  KAKEYA_ASSIGN_OR_RETURN(Tokenizer tok, Tokenizer::from_gguf(model.gguf()));
  const std::vector<int32_t> prompt = tok.encode("Once upon a time, there was a little girl named Lily.", true);
  const size_t n_ctx = std::max(prompt.size(), c.greedy_tokens) + 1;
  KAKEYA_ASSIGN_OR_RETURN(auto dev, LlamaContext::create(model, backend, ContextOptions{n_ctx}));
  KAKEYA_ASSIGN_OR_RETURN(auto ref, LlamaContext::create(model, cpu, ContextOptions{n_ctx}));
  json checks = json::array();

  KAKEYA_ASSIGN_OR_RETURN(std::vector<float> batch, dev->eval(prompt, true));
  KAKEYA_ASSIGN_OR_RETURN(std::vector<float> cpu_batch, ref->eval(prompt, true));
  const float d_cpu = max_abs_diff(batch, cpu_batch);
  checks.push_back(check("prompt_logits_vs_cpu", d_cpu <= c.logit_tol, d_cpu, c.logit_tol));

  dev->truncate(0);
  std::vector<float> decode;
  for (int32_t t : prompt) {
    const int32_t one[1] = {t};
    KAKEYA_ASSIGN_OR_RETURN(std::vector<float> row, dev->eval(one));
    decode.insert(decode.end(), row.begin(), row.end());
  }
  const float d_dec = max_abs_diff(batch, decode);
  checks.push_back(check("batch_equals_decode", d_dec == 0.0f, d_dec, 0.0));

  dev->truncate(0);
  ref->truncate(0);
  const int32_t bos = prompt.empty() ? 1 : prompt[0];
  KAKEYA_ASSIGN_OR_RETURN(auto want, greedy_with_margins(*ref, bos, c.greedy_tokens));
  KAKEYA_ASSIGN_OR_RETURN(auto got, greedy_with_margins(*dev, bos, c.greedy_tokens));
  size_t robust = 0, equal = 0;
  while (robust < want.size() && want[robust].second >= 2 * c.logit_tol) ++robust;
  while (equal < robust && got[equal].first == want[equal].first) ++equal;
  checks.push_back(check("greedy_ids_vs_cpu", equal == robust, static_cast<double>(equal), static_cast<double>(robust)));

  size_t failed = ops_json["failed"].get<size_t>();
  for (const json& ch : checks) failed += ch["passed"].get<bool>() ? 0 : 1;
  json r = report_envelope("engine-selftest", c.backend, backend, &model, &dev->weights());
  r["config"] = {{"model", c.model}, {"greedy_tokens", c.greedy_tokens}, {"logit_tol", c.logit_tol},
                 {"reference_backend", to_json(cpu.info())}};
  r["ops"] = ops_json;
  r["e2e"] = {{"checks", checks}, {"greedy_ids_compared", robust}};
  r["passed"] = failed == 0;
  r["failed"] = failed;
  return r;
}

}  // namespace kakeya::engine
