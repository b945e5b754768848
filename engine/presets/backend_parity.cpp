#include "engine/presets/backend_parity.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "engine/cpu/quant.h"
#include "engine/llama.h"
#include "engine/presets/backend_ops.h"
#include "engine/presets/reference_ops.h"
#include "engine/presets/report.h"
#include "engine/sampling.h"
#include "engine/tokenizer.h"

namespace kakeya::engine {
namespace {

using nlohmann::json;

const std::vector<std::string>& default_prompts() {
  static const std::vector<std::string> p = {
      "Once upon a time, there was a little girl named Lily.",
      "The cat sat on the mat and looked at the bird.",
      "Tom went to the park with his mom. They played with a ball.",
      "Note 0001: this paragraph is unrelated padding and does not contain the answer.",
      "def add(a, b):\n    return a + b\n",
  };
  return p;
}

struct Diff {
  size_t agree = 0;
  size_t positions = 0;
  float max_abs = 0;
};

Diff compare(const std::vector<float>& a, const std::vector<float>& ref, size_t n_vocab) {
  Diff d;
  d.positions = ref.size() / n_vocab;
  for (size_t t = 0; t < d.positions; ++t) {
    const std::span<const float> ra(a.data() + t * n_vocab, n_vocab);
    const std::span<const float> rr(ref.data() + t * n_vocab, n_vocab);
    d.agree += argmax(ra) == argmax(rr);
    for (size_t i = 0; i < n_vocab; ++i) d.max_abs = std::max(d.max_abs, std::fabs(ra[i] - rr[i]));
  }
  return d;
}

}  // namespace

Result<std::vector<float>> reference_logits(const LlamaModel& model, std::span<const int32_t> tokens) {
  const LlamaHparams& hp = model.hparams();
  const LlamaWeights& W = model.weights();
  if (tokens.empty()) return make_error("empty_input", "reference_logits: no tokens");
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i] < 0 || tokens[i] >= hp.n_vocab) {
      return make_error("bad_token", "reference_logits: token " + std::to_string(i) + " has id " +
                                         std::to_string(tokens[i]));
    }
  }
  const size_t n = tokens.size();
  const size_t E = static_cast<size_t>(hp.n_embd), F = static_cast<size_t>(hp.n_ff);
  const size_t HD = static_cast<size_t>(hp.head_dim);
  const size_t QD = static_cast<size_t>(hp.n_head) * HD, KD = static_cast<size_t>(hp.n_head_kv) * HD;
  const size_t V = static_cast<size_t>(hp.n_vocab);
  std::vector<float> x(n * E), xn(E), q(QD), att(QD), tmp(E), gate(F), up(F);
  std::vector<std::vector<float>> kc(W.layers.size(), std::vector<float>(n * KD));
  std::vector<std::vector<float>> vc(W.layers.size(), std::vector<float>(n * KD));
  std::vector<int32_t> positions(n);
  for (size_t t = 0; t < n; ++t) positions[t] = static_cast<int32_t>(t);
  struct Norms {
    std::vector<float> attn, ffn;
  };
  std::vector<Norms> norms;
  for (const LlamaLayerWeights& L : W.layers) norms.push_back({reference::dequantize(L.attn_norm), reference::dequantize(L.ffn_norm)});
  const std::vector<float> output_norm = reference::dequantize(W.output_norm);
  const std::vector<float> rope_freqs = W.rope_freqs.present() ? reference::dequantize(W.rope_freqs) : std::vector<float>{};
  const float* freq_factors = rope_freqs.empty() ? nullptr : rope_freqs.data();
  // y = W·x, then + b where the model has that bias.
  auto matvec_bias = [](const WeightMatrix& w, const WeightMatrix& b, const float* in, float* y) {
    reference::matvec(w, in, y);
    if (b.present()) reference::add_bias(y, reference::dequantize(b).data(), static_cast<size_t>(w.n_out));
  };
  std::vector<float> logits(n * V);
  for (size_t t = 0; t < n; ++t) {
    float* xt = x.data() + t * E;
    quant_kernels(KernelIsa::Portable).dequantize_row(W.token_embd.type, W.token_embd.row(tokens[t]), xt, hp.n_embd);
    for (size_t il = 0; il < W.layers.size(); ++il) {
      const LlamaLayerWeights& L = W.layers[il];
      reference::rms_norm(xt, norms[il].attn.data(), hp.n_embd, hp.rms_eps, xn.data());
      float* k = kc[il].data() + t * KD;
      float* v = vc[il].data() + t * KD;
      matvec_bias(L.wq, L.bq, xn.data(), q.data());
      matvec_bias(L.wk, L.bk, xn.data(), k);
      matvec_bias(L.wv, L.bv, xn.data(), v);
      reference::rope(q.data(), hp.n_head, hp.head_dim, hp.rope, freq_factors, static_cast<int64_t>(t));
      reference::rope(k, hp.n_head_kv, hp.head_dim, hp.rope, freq_factors, static_cast<int64_t>(t));
      for (size_t h = 0; h < static_cast<size_t>(hp.n_head); ++h) {
        const size_t g = h / static_cast<size_t>(hp.n_gqa());
        // Causal: the slots of every position so far (no window).
        const KvSlots slots{t + 1, KD, positions.data(), kc[il].data() + g * HD, vc[il].data() + g * HD};
        reference::attention_head(q.data() + h * HD, slots, static_cast<int32_t>(t), hp.head_dim, att.data() + h * HD);
      }
      matvec_bias(L.wo, L.bo, att.data(), tmp.data());
      for (size_t i = 0; i < E; ++i) xt[i] += tmp[i];
      reference::rms_norm(xt, norms[il].ffn.data(), hp.n_embd, hp.rms_eps, xn.data());
      matvec_bias(L.w_gate, L.b_gate, xn.data(), gate.data());
      matvec_bias(L.w_up, L.b_up, xn.data(), up.data());
      reference::swiglu(gate.data(), up.data(), F);
      matvec_bias(L.w_down, L.b_down, gate.data(), tmp.data());
      for (size_t i = 0; i < E; ++i) xt[i] += tmp[i];
    }
    reference::rms_norm(xt, output_norm.data(), hp.n_embd, hp.rms_eps, xn.data());
    reference::matvec(W.output, xn.data(), logits.data() + t * V);
  }
  return logits;
}

Result<json> run_backend_parity(const BackendParityConfig& c, Backend& backend, Backend* cpu) {
  KAKEYA_ASSIGN_OR_RETURN(LlamaModel model, LlamaModel::load(c.model));
  KAKEYA_ASSIGN_OR_RETURN(Tokenizer tok, Tokenizer::from_gguf(model.gguf()));
  const std::vector<std::string>& prompts = c.prompts.empty() ? default_prompts() : c.prompts;
  const size_t V = static_cast<size_t>(model.hparams().n_vocab);
  struct Arm {
    std::string name;
    json samples = json::array();
    Diff total;
  };
  const std::string used = backend.info().name;
  Arm batched{used + "-batched"}, decode{used + "-decode"};
  json ref_samples = json::array();
  size_t longest = 0;
  std::vector<std::vector<int32_t>> ids;
  for (const auto& p : prompts) {
    ids.push_back(tok.encode(p, true));
    longest = std::max(longest, ids.back().size());
  }
  KAKEYA_ASSIGN_OR_RETURN(std::unique_ptr<LlamaContext> context,
                          LlamaContext::create(model, backend, ContextOptions{std::max<size_t>(longest, 1)}));
  LlamaContext& ctx = *context;
  const bool vs_cpu = cpu != nullptr && used != "cpu";
  std::unique_ptr<LlamaContext> cpu_context;
  if (vs_cpu) {
    KAKEYA_ASSIGN_OR_RETURN(cpu_context, LlamaContext::create(model, *cpu, ContextOptions{std::max<size_t>(longest, 1)}));
  }
  Arm cpu_arm{"cpu-batched"};
  Diff vs_cpu_total;
  for (size_t i = 0; i < ids.size(); ++i) {
    const std::string id = "prompt-" + std::to_string(i);
    KAKEYA_ASSIGN_OR_RETURN(std::vector<float> ref, reference_logits(model, ids[i]));
    ctx.truncate(0);
    KAKEYA_ASSIGN_OR_RETURN(std::vector<float> lb, ctx.eval(ids[i], true));
    ctx.truncate(0);
    std::vector<float> ld;
    for (int32_t t : ids[i]) {
      const int32_t one[1] = {t};
      KAKEYA_ASSIGN_OR_RETURN(std::vector<float> row, ctx.eval(one));
      ld.insert(ld.end(), row.begin(), row.end());
    }
    ref_samples.push_back({{"prompt_id", id}, {"positions", ids[i].size()}});
    if (vs_cpu) {
      cpu_context->truncate(0);
      KAKEYA_ASSIGN_OR_RETURN(std::vector<float> lc, cpu_context->eval(ids[i], true));
      const Diff d = compare(lb, lc, V);
      vs_cpu_total.agree += d.agree;
      vs_cpu_total.positions += d.positions;
      vs_cpu_total.max_abs = std::max(vs_cpu_total.max_abs, d.max_abs);
      cpu_arm.samples.push_back({{"prompt_id", id}, {"positions", ids[i].size()}});
    }
    for (auto* arm : {&batched, &decode}) {
      const Diff d = compare(arm == &batched ? lb : ld, ref, V);
      arm->total.agree += d.agree;
      arm->total.positions += d.positions;
      arm->total.max_abs = std::max(arm->total.max_abs, d.max_abs);
      arm->samples.push_back({{"prompt_id", id},
                              {"positions", d.positions},
                              {"argmax_agree", d.agree},
                              {"argmax_agreement", static_cast<double>(d.agree) / d.positions},
                              {"max_abs_dlogit", d.max_abs}});
    }
  }
  json arms = json::array();
  arms.push_back({{"name", "reference"},
                  {"role", "baseline"},
                  {"backend_requested", "reference"},
                  {"backend_used", "reference"},
                  {"config", {{"path", "scalar reference forward"}, {"kernels", "portable"}, {"threads", 1}}},
                  {"samples", ref_samples}});
  json comparisons = json::array();
  for (const Arm* arm : {&batched, &decode}) {
    const bool b = arm == &batched;
    json arm_j = {{"name", arm->name},
                    {"role", "candidate"},
                    {"config", {{"path", b ? "LlamaContext batched eval (all_logits)" : "LlamaContext one-token eval"},
                                {"kernels", backend.info().kernel_set},
                                {"threads", backend.info().threads}}},
                    {"samples", arm->samples},
                    {"aggregates", {{"argmax_agreement", static_cast<double>(arm->total.agree) / arm->total.positions},
                                    {"positions", arm->total.positions},
                                    {"max_abs_dlogit", arm->total.max_abs}}}};
    arm_j.update(arm_backend(c.backend, backend));
    arms.push_back(std::move(arm_j));
    comparisons.push_back({{"baseline", "reference"},
                           {"candidate", arm->name},
                           {"metric", "max_abs_dlogit"},
                           {"value", arm->total.max_abs},
                           {"argmax_agreement", static_cast<double>(arm->total.agree) / arm->total.positions},
                           {"claim", "parity"}});
  }
  json ops = nullptr;
  if (vs_cpu) {
    json cpu_j = {{"name", cpu_arm.name},
                  {"role", "baseline"},
                  {"config", {{"path", "LlamaContext batched eval (all_logits)"},
                              {"kernels", cpu->info().kernel_set},
                              {"threads", cpu->info().threads}}},
                  {"samples", cpu_arm.samples}};
    cpu_j.update(arm_backend("cpu", *cpu));
    arms.push_back(std::move(cpu_j));
    comparisons.push_back({{"baseline", cpu_arm.name},
                           {"candidate", batched.name},
                           {"metric", "max_abs_dlogit"},
                           {"value", vs_cpu_total.max_abs},
                           {"argmax_agreement", static_cast<double>(vs_cpu_total.agree) / vs_cpu_total.positions},
                           {"claim", "parity"}});
    KAKEYA_ASSIGN_OR_RETURN(std::vector<BackendOpResult> table, run_backend_ops(backend));
    ops = backend_ops_json(backend, table);
  }
  json r = report_envelope("backend-parity", c.backend, backend, &model, &ctx.weights());
  r["config"] = {{"model", c.model}, {"prompts", prompts.size()}, {"threads", backend.info().threads},
                 {"backends", {used, "reference"}}};
  r["arms"] = arms;
  r["comparisons"] = comparisons;
  if (vs_cpu) {
    r["ops"] = ops;
    r["aggregates"] = {{"ops_failed", ops["failed"]}, {"max_abs_dlogit_vs_cpu", vs_cpu_total.max_abs}};
  }
  return r;
}

}  // namespace kakeya::engine
