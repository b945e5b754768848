#include "engine/presets/kv_calibrate.h"

#include <algorithm>
#include <sstream>

#include "engine/presets/niah.h"
#include "engine/presets/niah_eval.h"

namespace kakeya::engine {
namespace {

// A score as an ostream prints it (6 significant digits).
std::string number(double v) {
  std::ostringstream o;
  o << v;
  return o.str();
}

}  // namespace

std::vector<int32_t> niah_answer_ids(const Tokenizer& tok, const std::string& prompt,
                                     const std::string& answer) {
  const auto p = tok.encode(prompt, tok.add_bos());
  const auto all = tok.encode(prompt + " " + answer, tok.add_bos());
  if (all.size() > p.size() && std::equal(p.begin(), p.end(), all.begin()))
    return std::vector<int32_t>(all.begin() + static_cast<ptrdiff_t>(p.size()), all.end());
  return tok.encode(" " + answer, false);
}

nlohmann::json KvCalibration::to_json() const {
  nlohmann::json steps_j = nlohmann::json::array();
  for (const auto& [u, s] : steps) steps_j.push_back({{"layer", u.first}, {"head", u.second}, {"score", s}});
  return {{"score", "mean answer log-probability, nats/token (teacher-forced)"},
          {"full_score", full_score},
          {"bounded_score", bounded_score},
          {"layer_alone", layer_alone},
          {"head_alone", head_alone},
          {"greedy_selection", steps_j},
          {"policy", engine::to_json(policy)}};
}

Result<KvCalibration> kv_calibrate(const LlamaModel& model, const Tokenizer& tok, Backend& backend,
                                   const KvCalibrateConfig& cfg, const Progress& progress) {
  if (!cfg.base.bounded()) return make_error("bad_param", "kv-calibrate: --window must be > 0");
  struct Item {
    std::vector<int32_t> prompt, answer;
  };
  std::vector<Item> items;
  size_t longest = 0;
  for (int l : cfg.lines) {
    KAKEYA_TRY(check_niah_params(l, l, cfg.samples));
    for (const NiahSample& s : generate_niah(cfg.seed, l, l, cfg.samples)) {
      items.push_back({tok.encode(s.prompt, tok.add_bos()), niah_answer_ids(tok, s.prompt, s.answer)});
      longest = std::max(longest, items.back().prompt.size() + items.back().answer.size());
    }
  }
  ContextOptions o;
  o.n_batch = cfg.n_batch;
  o.n_ctx = std::max(static_cast<size_t>(model.hparams().n_ctx_train), longest);
  KAKEYA_ASSIGN_OR_RETURN(std::unique_ptr<LlamaContext> context, LlamaContext::create(model, backend, o));
  LlamaContext& ctx = *context;
  const size_t L = ctx.kv().shape().n_layer, H = ctx.kv().shape().n_head_kv;
  auto score = [&](const KvPolicy& p) -> Result<double> {
    double sum = 0;
    for (const Item& it : items) {
      KAKEYA_ASSIGN_OR_RETURN(double lp, answer_logprob(ctx, p, it.prompt, it.answer));
      sum += lp;
    }
    return sum / static_cast<double>(items.size());
  };
  KvCalibration c;
  KvPolicy full;
  full.kv_bits = cfg.base.kv_bits;
  KAKEYA_ASSIGN_OR_RETURN(c.full_score, score(full));
  KvPolicy bounded = cfg.base;
  bounded.exact_layers.clear();
  bounded.exact_heads.clear();
  KAKEYA_ASSIGN_OR_RETURN(c.bounded_score, score(bounded));
  report_progress(progress, "full " + number(c.full_score) + ", bounded " + number(c.bounded_score));
  for (size_t l = 0; l < L; ++l) {
    KvPolicy p = bounded;
    p.exact_layers = {static_cast<int>(l)};
    KAKEYA_ASSIGN_OR_RETURN(double s, score(p));
    c.layer_alone.push_back(s);
    report_progress(progress, "layer " + std::to_string(l) + " alone " + number(s));
  }
  c.head_alone.assign(L, std::vector<double>(H, 0.0));
  if (cfg.heads) {
    for (size_t l = 0; l < L; ++l)
      for (size_t h = 0; h < H; ++h) {
        KvPolicy p = bounded;
        p.exact_heads = {{static_cast<int>(l), static_cast<int>(h)}};
        KAKEYA_ASSIGN_OR_RETURN(c.head_alone[l][h], score(p));
      }
  }
  // Greedy forward selection.
  KvPolicy cur = bounded;
  double cur_score = c.bounded_score;
  for (int step = 0; step < cfg.budget && cur_score < c.full_score - cfg.target_gap; ++step) {
    double best = -1e300;
    std::pair<int, int> best_unit{-1, -1};
    for (size_t l = 0; l < L; ++l) {
      for (size_t h = 0; h < (cfg.heads ? H : 1); ++h) {
        KvPolicy p = cur;
        const int li = static_cast<int>(l), hi = cfg.heads ? static_cast<int>(h) : -1;
        if (cfg.heads) {
          if (p.head_exact(li, hi)) continue;
          p.exact_heads.emplace_back(li, hi);
        } else {
          if (std::find(p.exact_layers.begin(), p.exact_layers.end(), li) != p.exact_layers.end()) continue;
          p.exact_layers.push_back(li);
        }
        KAKEYA_ASSIGN_OR_RETURN(double s, score(p));
        if (s > best) {
          best = s;
          best_unit = {li, hi};
        }
      }
    }
    if (best_unit.first < 0) break;
    if (cfg.heads) cur.exact_heads.push_back(best_unit);
    else cur.exact_layers.push_back(best_unit.first);
    cur_score = best;
    c.steps.push_back({best_unit, best});
    report_progress(progress, "+ layer " + std::to_string(best_unit.first) + " head " +
                                  std::to_string(best_unit.second) + " -> " + number(best));
  }
  std::sort(cur.exact_layers.begin(), cur.exact_layers.end());
  std::sort(cur.exact_heads.begin(), cur.exact_heads.end());
  c.policy = cur;
  return c;
}

}  // namespace kakeya::engine
