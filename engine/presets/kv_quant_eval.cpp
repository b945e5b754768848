#include "engine/presets/kv_quant_eval.h"

#include <algorithm>

#include "engine/kv_policy.h"
#include "engine/kv_quant.h"
#include "engine/presets/niah.h"
#include "engine/presets/niah_eval.h"
#include "engine/presets/report.h"

namespace kakeya::engine {

namespace {

// The K and V rows of every slot of layer `il`, [n_slots][n_head_kv · head_dim] each.
void layer_rows(const KvCache& kv, size_t il, std::vector<float>& k, std::vector<float>& v) {
  const size_t H = kv.shape().n_head_kv, hd = kv.shape().head_dim, row = H * hd;
  std::vector<float> hk, hv;
  for (size_t h = 0; h < H; ++h) {
    kv.layer(il).read_head(h, nullptr, &hk, &hv);
    const size_t n = hk.size() / hd;
    k.resize(n * row);
    v.resize(n * row);
    for (size_t s = 0; s < n; ++s) {
      std::copy_n(hk.data() + s * hd, hd, k.data() + s * row + h * hd);
      std::copy_n(hv.data() + s * hd, hd, v.data() + s * row + h * hd);
    }
  }
}

// Σ over layers and values of k² + v² (the weight of a prompt's relative MSE in the aggregate).
double kv_energy(const KvCache& kv) {
  double energy = 0;
  std::vector<float> k, v;
  for (size_t il = 0; il < kv.n_layer(); ++il) {
    layer_rows(kv, il, k, v);
    for (size_t i = 0; i < k.size(); ++i)
      energy += static_cast<double>(k[i]) * k[i] + static_cast<double>(v[i]) * v[i];
  }
  return energy;
}

}  // namespace

KvQuantError kv_quant_error(const KvCache& kv, int bits, size_t group) {
  KvQuantError e;
  double err_all = 0, energy_all = 0;
  const size_t row = kv.shape().n_head_kv * kv.shape().head_dim;
  AffineRowCodec codec(row, std::min(group, row), bits);
  std::vector<uint8_t> buf(codec.bytes_per_row());
  std::vector<float> back(row), k, v;
  for (size_t il = 0; il < kv.n_layer(); ++il) {
    layer_rows(kv, il, k, v);
    const size_t n_slots = k.size() / row;
    double err = 0, energy = 0;
    for (const std::vector<float>* rows : {&k, &v}) {
      for (size_t t = 0; t < n_slots; ++t) {
        const float* x = rows->data() + t * row;
        codec.encode(x, buf.data());
        codec.decode(buf.data(), back.data());
        for (size_t i = 0; i < row; ++i) {
          const double d = static_cast<double>(x[i]) - back[i];
          err += d * d;
          energy += static_cast<double>(x[i]) * x[i];
        }
      }
    }
    e.per_layer.push_back(energy > 0 ? err / energy : 0.0);
    err_all += err;
    energy_all += energy;
  }
  e.rel_mse = energy_all > 0 ? err_all / energy_all : 0.0;
  return e;
}

Result<nlohmann::json> run_kv_quant_eval(const LlamaModel& model, const Tokenizer& tok, Backend& backend,
                                         const KvQuantEvalConfig& cfg, const Progress& progress) {
  using nlohmann::json;
  for (int b : cfg.bits)
    if (b != 8 && b != 4) return make_error("bad_param", "kv-quant-eval: bits " + std::to_string(b) + " is not 8 or 4");
  struct Prompt {
    NiahSample s;
    std::vector<int32_t> ids;
    std::string id;
  };
  std::vector<Prompt> prompts;
  size_t longest = 0;
  for (int l : cfg.lines) {
    KAKEYA_TRY(check_niah_params(l, l, cfg.samples));
    const auto ss = generate_niah(cfg.seed, l, l, cfg.samples);
    for (size_t i = 0; i < ss.size(); ++i) {
      prompts.push_back({ss[i], tok.encode(ss[i].prompt, tok.add_bos()),
                         "niah-s" + std::to_string(cfg.seed) + "-l" + std::to_string(l) + "-" + std::to_string(i)});
      longest = std::max(longest, prompts.back().ids.size());
    }
  }
  ContextOptions o;
  o.n_batch = cfg.n_batch;
  o.n_ctx = std::max(static_cast<size_t>(model.hparams().n_ctx_train),
                     longest + static_cast<size_t>(cfg.decode_tokens));
  KAKEYA_ASSIGN_OR_RETURN(std::unique_ptr<LlamaContext> context, LlamaContext::create(model, backend, o));
  LlamaContext& ctx = *context;

  std::vector<int> arm_bits = {32};
  arm_bits.insert(arm_bits.end(), cfg.bits.begin(), cfg.bits.end());
  json arms = json::array(), comparisons = json::array();
  std::vector<double> recall(arm_bits.size()), kv_med(arm_bits.size());
  for (size_t ai = 0; ai < arm_bits.size(); ++ai) {
    const int bits = arm_bits[ai];
    const std::string name = bits == 32 ? "identity" : "affine-" + std::to_string(bits);
    KvPolicy p;
    p.kv_bits = bits;
    p.quant_group = cfg.group;
    json samples = json::array();
    std::vector<double> kvb;
    double err_sum = 0, energy_sum = 0, bpv_bits = 0, bpv_values = 0;
    int hits = 0;
    for (const Prompt& pr : prompts) {
      double rel_mse = 0;
      std::vector<double> per_layer;
      if (bits != 32) {
        // The same cache contents: the identity (f32) cache after the prompt's prefill.
        ctx.kv().clear();
        KAKEYA_TRY(apply_kv_policy(ctx.kv(), KvPolicy{}));
        KAKEYA_TRY(ctx.eval(pr.ids));
        const KvQuantError e = kv_quant_error(ctx.kv(), bits, cfg.group);
        rel_mse = e.rel_mse;
        per_layer = e.per_layer;
        const double energy = kv_energy(ctx.kv());
        err_sum += rel_mse * energy;
        energy_sum += energy;
      }
      KAKEYA_ASSIGN_OR_RETURN(GreedyRun run, run_greedy(ctx, p, pr.ids, cfg.decode_tokens));
      // Measured bits per value from the storage the decoding cache holds.
      double vb = 0, nv = 0;
      for (size_t il = 0; il < ctx.kv().n_layer(); ++il) {
        vb += 8.0 * static_cast<double>(ctx.kv().layer(il).kv_value_bytes());
        nv += static_cast<double>(ctx.kv().layer(il).kv_values());
      }
      bpv_bits += vb;
      bpv_values += nv;
      const std::string text = niah_continuation(tok, run.ids);
      const bool rec = niah_recalled(text, pr.s.answer);
      hits += rec ? 1 : 0;
      kvb.push_back(static_cast<double>(run.resident_kv_bytes));
      samples.push_back({{"prompt_id", pr.id}, {"n_lines", pr.s.n_lines}, {"needle", true},
                         {"answer", pr.s.answer}, {"recall", rec}, {"text", text},
                         {"token_ids", run.ids}, {"decode_tokens", run.ids.size()},
                         {"resident_kv_bytes", run.resident_kv_bytes},
                         {"bits_per_value", nv > 0 ? vb / nv : 0.0}, {"rel_mse", rel_mse},
                         {"rel_mse_per_layer", per_layer}, {"prefill_s", run.prefill_s},
                         {"decode_s", run.decode_s}});
      report_progress(progress, name + " " + pr.id + " recall=" + (rec ? "1" : "0") + " \"" + text + "\"");
    }
    recall[ai] = prompts.empty() ? 0.0 : static_cast<double>(hits) / static_cast<double>(prompts.size());
    kv_med[ai] = summarize(kvb).median;
    json arm_j = {{"name", name},
                    {"role", bits == 32 ? "oracle" : "candidate"},
                    {"timing_scope", "e2e"},
                    {"config", {{"kv_bits", bits}, {"group", cfg.group}}},
                    {"samples", samples},
                    {"aggregates",
                     {{"recall", recall[ai]},
                      {"bits_per_value", bpv_values > 0 ? bpv_bits / bpv_values : 0.0},
                      {"rel_mse", energy_sum > 0 ? err_sum / energy_sum : 0.0},
                      {"resident_kv_bytes_measured", true},
                      {"resident_kv_bytes_median", kv_med[ai]}}}};
    arm_j.update(arm_backend(cfg.backend, backend));
    arms.push_back(std::move(arm_j));
  }
  for (size_t ai = 1; ai < arm_bits.size(); ++ai) {
    const std::string name = arms[ai]["name"];
    comparisons.push_back({{"baseline", "identity"}, {"candidate", name}, {"metric", "recall"},
                           {"claim", "recall"}, {"delta_pp", 100.0 * (recall[ai] - recall[0])}});
    comparisons.push_back({{"baseline", "identity"}, {"candidate", name}, {"metric", "resident_kv_bytes"},
                           {"claim", "memory_saving"}, {"ratio", kv_med[ai] > 0 ? kv_med[0] / kv_med[ai] : 0.0}});
  }
  json r = report_envelope("kv-quant-eval", cfg.backend, backend, &model, &ctx.weights());
  r["config"] = {{"seed", cfg.seed}, {"lines", cfg.lines}, {"samples", cfg.samples},
                 {"decode_tokens", cfg.decode_tokens}, {"bits", cfg.bits}, {"group", cfg.group},
                 {"temperature", 0}, {"rel_mse", "energy-weighted over layers and K/V"}};
  r["arms"] = arms;
  r["comparisons"] = comparisons;
  r["peak_rss_bytes"] = peak_rss_bytes();
  return r;
}

}  // namespace kakeya::engine
