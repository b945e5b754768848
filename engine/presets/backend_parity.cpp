#include "engine/presets/backend_parity.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "engine/llama.h"
#include "engine/cpu/quant.h"
#include "engine/presets/report.h"
#include "engine/sampling.h"
#include "engine/tokenizer.h"

namespace kakeya::engine {
namespace {

using nlohmann::json;

// y[n_out] = W·x with the portable kernels (activations converted like the decode path).
void ref_matvec(const QuantKernels& K, const WeightMatrix& w, const float* x, float* y) {
  ActivationBuffer act;
  K.quantize_activations(w.type, x, w.n_in, act);
  for (int64_t r = 0; r < w.n_out; ++r) y[r] = K.vec_dot(w.type, w.row(r), act);
}

void ref_rms_norm(const float* x, const std::vector<float>& w, int64_t n, float eps, float* y) {
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(x[i]) * x[i];
  const float scale = 1.0f / std::sqrt(static_cast<float>(sum / static_cast<double>(n)) + eps);
  for (int64_t i = 0; i < n; ++i) y[i] = (x[i] * scale) * w[static_cast<size_t>(i)];
}

void ref_rope(float* x, int64_t n_heads, const LlamaHparams& hp, int64_t pos) {
  const float theta_scale = std::pow(hp.rope_freq_base, -2.0f / static_cast<float>(hp.rope_dim));
  for (int64_t h = 0; h < n_heads; ++h) {
    float theta = static_cast<float>(pos);
    float* v = x + h * hp.head_dim;
    for (int64_t i = 0; i < hp.rope_dim; i += 2) {
      const float c = std::cos(theta), s = std::sin(theta);
      const float x0 = v[i], x1 = v[i + 1];
      v[i] = x0 * c - x1 * s;
      v[i + 1] = x0 * s + x1 * c;
      theta *= theta_scale;
    }
  }
}

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
  const QuantKernels& K = quant_kernels(KernelIsa::Portable);
  const size_t n = tokens.size();
  const size_t E = static_cast<size_t>(hp.n_embd), F = static_cast<size_t>(hp.n_ff);
  const size_t HD = static_cast<size_t>(hp.head_dim);
  const size_t QD = static_cast<size_t>(hp.n_head) * HD, KD = static_cast<size_t>(hp.n_head_kv) * HD;
  const size_t V = static_cast<size_t>(hp.n_vocab);
  std::vector<float> x(n * E), xn(E), q(QD), att(QD), tmp(E), gate(F), up(F), scores(n);
  std::vector<std::vector<float>> kc(W.layers.size(), std::vector<float>(n * KD));
  std::vector<std::vector<float>> vc(W.layers.size(), std::vector<float>(n * KD));
  std::vector<float> logits(n * V);
  for (size_t t = 0; t < n; ++t) {
    float* xt = x.data() + t * E;
    K.dequantize_row(W.token_embd.type, W.token_embd.row(tokens[t]), xt, hp.n_embd);
    for (size_t il = 0; il < W.layers.size(); ++il) {
      const LlamaLayerWeights& L = W.layers[il];
      ref_rms_norm(xt, L.attn_norm, hp.n_embd, hp.rms_eps, xn.data());
      float* k = kc[il].data() + t * KD;
      float* v = vc[il].data() + t * KD;
      ref_matvec(K, L.wq, xn.data(), q.data());
      ref_matvec(K, L.wk, xn.data(), k);
      ref_matvec(K, L.wv, xn.data(), v);
      ref_rope(q.data(), hp.n_head, hp, static_cast<int64_t>(t));
      ref_rope(k, hp.n_head_kv, hp, static_cast<int64_t>(t));
      const float scale = 1.0f / std::sqrt(static_cast<float>(HD));
      for (size_t h = 0; h < static_cast<size_t>(hp.n_head); ++h) {
        const size_t g = h / static_cast<size_t>(hp.n_gqa());
        float mx = -INFINITY;
        for (size_t s = 0; s <= t; ++s) {
          float dot = 0;
          for (size_t d = 0; d < HD; ++d) dot += q[h * HD + d] * kc[il][s * KD + g * HD + d];
          scores[s] = dot * scale;
          mx = std::max(mx, scores[s]);
        }
        double sum = 0;
        for (size_t s = 0; s <= t; ++s) {
          scores[s] = std::exp(scores[s] - mx);
          sum += scores[s];
        }
        for (size_t d = 0; d < HD; ++d) att[h * HD + d] = 0;
        for (size_t s = 0; s <= t; ++s) {
          const float p = static_cast<float>(scores[s] / sum);
          for (size_t d = 0; d < HD; ++d) att[h * HD + d] += p * vc[il][s * KD + g * HD + d];
        }
      }
      ref_matvec(K, L.wo, att.data(), tmp.data());
      for (size_t i = 0; i < E; ++i) xt[i] += tmp[i];
      ref_rms_norm(xt, L.ffn_norm, hp.n_embd, hp.rms_eps, xn.data());
      ref_matvec(K, L.w_gate, xn.data(), gate.data());
      ref_matvec(K, L.w_up, xn.data(), up.data());
      for (size_t i = 0; i < F; ++i) gate[i] = (gate[i] / (1.0f + std::exp(-gate[i]))) * up[i];
      ref_matvec(K, L.w_down, gate.data(), tmp.data());
      for (size_t i = 0; i < E; ++i) xt[i] += tmp[i];
    }
    ref_rms_norm(xt, W.output_norm, hp.n_embd, hp.rms_eps, xn.data());
    ref_matvec(K, W.output, xn.data(), logits.data() + t * V);
  }
  return logits;
}

Result<json> run_backend_parity(const BackendParityConfig& c) {
  KAKEYA_ASSIGN_OR_RETURN(LlamaModel model, LlamaModel::load(c.model));
  KAKEYA_ASSIGN_OR_RETURN(Tokenizer tok, Tokenizer::from_gguf(model.gguf()));
  const std::vector<std::string>& prompts = c.prompts.empty() ? default_prompts() : c.prompts;
  const size_t V = static_cast<size_t>(model.hparams().n_vocab);
  struct Arm {
    std::string name;
    json samples = json::array();
    Diff total;
  };
  Arm batched{"cpu-batched"}, decode{"cpu-decode"};
  json ref_samples = json::array();
  size_t longest = 0;
  std::vector<std::vector<int32_t>> ids;
  for (const auto& p : prompts) {
    ids.push_back(tok.encode(p, true));
    longest = std::max(longest, ids.back().size());
  }
  LlamaContext ctx(model, ContextOptions{std::max<size_t>(longest, 1), c.threads});
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
    arms.push_back({{"name", arm->name},
                    {"role", "candidate"},
                    {"backend_requested", "cpu"},
                    {"backend_used", "cpu"},
                    {"config", {{"path", b ? "LlamaContext batched eval (all_logits)" : "LlamaContext one-token eval"},
                                {"kernels", kernel_isa_name(active_kernel_isa())},
                                {"threads", c.threads}}},
                    {"samples", arm->samples},
                    {"aggregates", {{"argmax_agreement", static_cast<double>(arm->total.agree) / arm->total.positions},
                                    {"positions", arm->total.positions},
                                    {"max_abs_dlogit", arm->total.max_abs}}}});
    comparisons.push_back({{"baseline", "reference"},
                           {"candidate", arm->name},
                           {"metric", "max_abs_dlogit"},
                           {"value", arm->total.max_abs},
                           {"argmax_agreement", static_cast<double>(arm->total.agree) / arm->total.positions},
                           {"claim", "parity"}});
  }
  json r;
  r["kind"] = "backend-parity";
  r["schema_version"] = 1;
  r["created_at"] = utc_now_rfc3339();
  r["config"] = {{"model", c.model}, {"prompts", prompts.size()}, {"threads", c.threads},
                 {"backends", {"cpu", "reference"}}};
  r["env"] = env_summary();
  r["model"] = model_provenance(model);
  r["engine"] = engine_info(c.threads);
  r["synthetic"] = model.synthetic();
  r["arms"] = arms;
  r["comparisons"] = comparisons;
  return r;
}

}  // namespace kakeya::engine
