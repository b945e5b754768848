#include "engine/speculative.h"

#include <algorithm>
#include <chrono>

#include "engine/presets/report.h"

namespace kakeya::engine {
namespace {

// Generated tokens plus the stop rules; push() commits one token and says whether to go on.
class Committer {
 public:
  Committer(std::span<const int32_t> prompt, const StopRules& rules, GenerationResult& out)
      : rules_(rules), out_(out), context_(prompt.begin(), prompt.end()) {}

  bool push(int32_t tok) {
    if (std::find(rules_.eog.begin(), rules_.eog.end(), tok) != rules_.eog.end()) {
      out_.stop = StopReason::kEos;
      return false;
    }
    out_.tokens.push_back(tok);
    context_.push_back(tok);
    if (rules_.runaway_repeats > 0) {
      std::string why = runaway_reason(out_.tokens, rules_.runaway_repeats, rules_.runaway_max_unit);
      if (!why.empty()) {
        out_.stop = StopReason::kRunaway;
        out_.runaway_detail = std::move(why);
        return false;
      }
    }
    if (static_cast<int>(out_.tokens.size()) >= rules_.max_new_tokens) {
      out_.stop = StopReason::kLength;
      return false;
    }
    return true;
  }
  const std::vector<int32_t>& context() const { return context_; }

 private:
  const StopRules& rules_;
  GenerationResult& out_;
  std::vector<int32_t> context_;  // prompt + generated
};

Status check_options(std::span<const int32_t> prompt, const SpecOptions& o) {
  if (prompt.empty()) return make_error("bad_param", "prompt is empty");
  if (o.block_size < 1) {
    return make_error("bad_param", "block_size " + std::to_string(o.block_size) + " must be >= 1");
  }
  if (o.stop.max_new_tokens < 1) {
    return make_error("bad_param", "max_new_tokens " + std::to_string(o.stop.max_new_tokens) +
                                       " must be >= 1");
  }
  return check_sampling_params(o.sampling);
}

// The next token after `tokens` (appended to ctx): the argmax read back from the backend when
// greedy, else a draw from the logits.
Result<int32_t> eval_next(LlamaContext& ctx, std::span<const int32_t> tokens, Sampler& sampler) {
  if (sampler.greedy()) {
    KAKEYA_ASSIGN_OR_RETURN(std::vector<int32_t> ids, ctx.eval_argmax(tokens));
    return ids[0];
  }
  KAKEYA_ASSIGN_OR_RETURN(std::vector<float> logits, ctx.eval(tokens));
  return sampler.sample(logits);
}

}  // namespace

const char* stop_reason_name(StopReason r) {
  switch (r) {
    case StopReason::kLength: return "length";
    case StopReason::kEos: return "eos";
    case StopReason::kRunaway: return "runaway";
    case StopReason::kContextFull: return "context_full";
  }
  return "unknown";
}

double GenerationResult::tokens_per_forward() const {
  if (target_forwards == 0 || tokens.empty()) return 0.0;
  return static_cast<double>(tokens.size() - 1) / static_cast<double>(target_forwards);
}

std::string runaway_reason(std::span<const int32_t> generated, int repeats, int max_unit) {
  if (repeats < 2) return "";
  const size_t n = generated.size();
  for (size_t u = 1; u <= static_cast<size_t>(std::max(max_unit, 0)); ++u) {
    const size_t span = u * static_cast<size_t>(repeats);
    if (span > n) break;
    const size_t start = n - span;
    bool periodic = true;
    for (size_t i = start + u; i < n && periodic; ++i) periodic = generated[i] == generated[i - u];
    if (periodic) {
      return "unit of " + std::to_string(u) + " token" + (u == 1 ? "" : "s") + " repeated " +
             std::to_string(repeats) + " times";
    }
  }
  return "";
}

AcceptDecision speculative_accept(std::span<const float> p, std::span<const float> q, int32_t x,
                                  Sampler& sampler) {
  const double px = p[static_cast<size_t>(x)];
  const double qx = q.empty() ? 1.0 : q[static_cast<size_t>(x)];
  if (qx > 0 && sampler.uniform() < std::min(1.0, px / qx)) return {x, true};
  // Residual norm(max(0, p − q)); sample_from normalises.
  std::vector<float> residual(p.size());
  for (size_t i = 0; i < p.size(); ++i) {
    const float qi = q.empty() ? (static_cast<int32_t>(i) == x ? 1.0f : 0.0f) : q[i];
    residual[i] = std::max(0.0f, p[i] - qi);
  }
  int32_t y = sampler.sample_from(residual);
  if (y < 0) y = sampler.sample_from(p);  // p == q: rejection has probability 0; stay safe
  return {y, false};
}

Result<GenerationResult> autoregressive_generate(LlamaContext& target, std::span<const int32_t> prompt,
                                                 const SpecOptions& options) {
  KAKEYA_TRY(check_options(prompt, options));
  GenerationResult out;
  target.truncate(0);
  Sampler sampler(options.sampling);
  const auto t0 = std::chrono::steady_clock::now();
  KAKEYA_ASSIGN_OR_RETURN(const int32_t first, eval_next(target, prompt, sampler));
  out.prefill_s = seconds_since(t0);
  const auto t1 = std::chrono::steady_clock::now();
  Committer c(prompt, options.stop, out);
  bool go = c.push(first);
  while (go) {
    if (target.n_past() + 1 > target.n_ctx()) {
      out.stop = StopReason::kContextFull;
      break;
    }
    const int32_t one[1] = {out.tokens.back()};
    KAKEYA_ASSIGN_OR_RETURN(const int32_t next, eval_next(target, one, sampler));
    ++out.target_forwards;
    go = c.push(next);
  }
  out.decode_s = seconds_since(t1);
  out.resident_kv_bytes = target.kv().resident_bytes();
  return out;
}

Result<GenerationResult> speculative_generate(LlamaContext& target, DraftSource& draft,
                                              std::span<const int32_t> prompt,
                                              const SpecOptions& options) {
  KAKEYA_TRY(check_options(prompt, options));
  GenerationResult out;
  target.truncate(0);
  Sampler sampler(options.sampling);
  SamplingParams draft_params = options.sampling;
  draft_params.seed ^= 0x9E3779B97F4A7C15ull;  // an independent stream for the draft's draws
  Sampler draft_sampler(draft_params);
  Sampler* draft_sampling = sampler.greedy() ? nullptr : &draft_sampler;

  const auto t0 = std::chrono::steady_clock::now();
  KAKEYA_ASSIGN_OR_RETURN(const int32_t first, eval_next(target, prompt, sampler));
  out.prefill_s = seconds_since(t0);
  const auto td = std::chrono::steady_clock::now();
  KAKEYA_TRY(draft.begin(prompt));
  out.draft_prefill_s = seconds_since(td);

  const auto t1 = std::chrono::steady_clock::now();
  Committer c(prompt, options.stop, out);
  bool go = c.push(first);
  const size_t n_vocab = static_cast<size_t>(target.n_vocab());
  std::vector<int32_t> batch;
  while (go) {
    // The target's KV holds context[0 .. n-1); `last` = context.back() is evaluated with the block.
    if (target.n_past() + 1 > target.n_ctx()) {
      out.stop = StopReason::kContextFull;
      break;
    }
    const size_t remaining = static_cast<size_t>(options.stop.max_new_tokens) - out.tokens.size();
    const size_t k = std::min({static_cast<size_t>(options.block_size), remaining - 1,
                               target.n_ctx() - target.n_past() - 1});
    DraftBlock block;
    if (k > 0) {
      KAKEYA_ASSIGN_OR_RETURN(block, draft.propose(c.context(), static_cast<int>(k), draft_sampling));
      if (block.tokens.size() > k) block.tokens.resize(k);
    }
    const size_t kd = block.tokens.size();
    if (kd > 0) ++out.draft_blocks;
    out.drafted += kd;

    const size_t base = target.n_past();  // == context.size() - 1
    const size_t context_before = c.context().size();
    batch.assign(1, c.context().back());
    batch.insert(batch.end(), block.tokens.begin(), block.tokens.end());
    // Greedy: only each row's argmax comes back from the backend; sampling needs the logits.
    std::vector<int32_t> row_ids;
    std::vector<float> rows;
    if (sampler.greedy()) {
      KAKEYA_ASSIGN_OR_RETURN(row_ids, target.eval_argmax(batch, /*all_rows=*/true));
    } else {
      KAKEYA_ASSIGN_OR_RETURN(rows, target.eval(batch, /*all_logits=*/true));
    }
    ++out.target_forwards;

    size_t n_acc = 0;
    for (size_t i = 0; i <= kd && go; ++i) {
      if (i == kd) {  // every draft accepted (or none proposed): the target's own next token
        go = c.push(sampler.greedy() ? row_ids[i]
                                     : sampler.sample(std::span<const float>(rows.data() + i * n_vocab, n_vocab)));
        break;
      }
      const int32_t d = block.tokens[i];
      AcceptDecision dec;
      if (sampler.greedy()) {
        dec = {row_ids[i], row_ids[i] == d};
      } else {
        const std::span<const float> row(rows.data() + i * n_vocab, n_vocab);
        const std::vector<float> p = sampling_probabilities(row, options.sampling);
        const std::span<const float> q =
            i < block.q.size() ? std::span<const float>(block.q[i]) : std::span<const float>();
        dec = speculative_accept(p, q, d, sampler);
      }
      go = c.push(dec.token);
      if (!dec.accepted) break;
      ++n_acc;
      ++out.accepted;
    }
    // Keep `last` and the accepted drafts; the committed correction/bonus is the next `last`.
    target.truncate(base + 1 + n_acc);
    draft.commit(context_before + n_acc);
  }
  out.decode_s = seconds_since(t1);
  out.resident_kv_bytes = target.kv().resident_bytes() + draft.resident_kv_bytes();
  return out;
}

}  // namespace kakeya::engine
