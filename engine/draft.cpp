#include "engine/draft.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <filesystem>
#include <optional>

#include "engine/cpu/quant.h"
#include "engine/requantize.h"

namespace kakeya::engine {
namespace {

// The proposal for `logits`: argmax (greedy), or a draw from the sampling distribution.
int32_t pick(std::span<const float> logits, Sampler* sampler, DraftBlock& block) {
  if (sampler == nullptr || sampler->greedy()) return argmax(logits);
  std::vector<float> p = sampling_probabilities(logits, sampler->params());
  const int32_t tok = sampler->sample_from(p);
  block.q.push_back(std::move(p));
  return tok;
}

std::optional<int> parse_int(std::string_view s) {
  int v = 0;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  if (r.ec != std::errc() || r.ptr != s.data() + s.size()) return std::nullopt;
  return v;
}

// A separate draft model with its own context ("gguf" and "quant").
class ModelDraft final : public DraftSource {
 public:
  // The context runs `model` (which the draft owns) on the target's backend.
  static Result<std::unique_ptr<DraftSource>> create(std::string kind, std::string spec, LlamaModel model,
                                                     Backend& backend, const ContextOptions& options) {
    auto owned = std::make_unique<LlamaModel>(std::move(model));
    KAKEYA_ASSIGN_OR_RETURN(std::unique_ptr<LlamaContext> ctx, LlamaContext::create(*owned, backend, options));
    return std::unique_ptr<DraftSource>(
        new ModelDraft(std::move(kind), std::move(spec), std::move(owned), std::move(ctx)));
  }

  std::string kind() const override { return kind_; }
  std::string spec() const override { return spec_; }

  Status begin(std::span<const int32_t> prompt) override {
    ctx_->truncate(0);
    evaluated_.clear();
    if (prompt.empty()) return ok_status();
    KAKEYA_ASSIGN_OR_RETURN(logits_, ctx_->eval(prompt));
    evaluated_.assign(prompt.begin(), prompt.end());
    logits_valid_ = true;
    return ok_status();
  }

  Result<DraftBlock> propose(std::span<const int32_t> context, int k, Sampler* sampler) override {
    DraftBlock block;
    if (k <= 0 || context.empty()) return block;
    size_t lcp = 0;
    while (lcp < evaluated_.size() && lcp < context.size() && evaluated_[lcp] == context[lcp]) ++lcp;
    if (!(logits_valid_ && lcp == evaluated_.size() && lcp == context.size())) {
      // Re-evaluate at least the last context token so the logits follow the whole context.
      const size_t keep = std::min(lcp, context.size() - 1);
      ctx_->truncate(keep);
      evaluated_.resize(keep);
      KAKEYA_ASSIGN_OR_RETURN(logits_, ctx_->eval(context.subspan(keep)));
      evaluated_.assign(context.begin(), context.end());
    }
    logits_valid_ = false;
    for (int i = 0; i < k; ++i) {
      const int32_t tok = pick(logits_, sampler, block);
      block.tokens.push_back(tok);
      if (i + 1 == k) break;  // the last proposal is never evaluated by the draft
      if (ctx_->n_past() + 1 > ctx_->n_ctx()) break;
      const int32_t one[1] = {tok};
      KAKEYA_ASSIGN_OR_RETURN(logits_, ctx_->eval(one));
      evaluated_.push_back(tok);
    }
    return block;
  }

  void commit(size_t n_committed) override {
    if (evaluated_.size() > n_committed) {
      ctx_->truncate(n_committed);
      evaluated_.resize(n_committed);
      logits_valid_ = false;
    }
  }

  size_t resident_kv_bytes() const override { return ctx_->kv().resident_bytes(); }

 private:
  ModelDraft(std::string kind, std::string spec, std::unique_ptr<LlamaModel> model, std::unique_ptr<LlamaContext> ctx)
      : kind_(std::move(kind)), spec_(std::move(spec)), model_(std::move(model)), ctx_(std::move(ctx)) {}

  std::string kind_, spec_;
  std::unique_ptr<LlamaModel> model_;
  std::unique_ptr<LlamaContext> ctx_;
  std::vector<int32_t> evaluated_;  // tokens whose K/V the draft context holds
  std::vector<float> logits_;       // after evaluated_ when logits_valid_
  bool logits_valid_ = false;
};

// The target's own first n_layers layers, inside the target's context (shared KV).
class LayerSkipDraft final : public DraftSource {
 public:
  LayerSkipDraft(LlamaContext& target, size_t n_layers) : target_(target), n_layers_(n_layers) {}
  std::string kind() const override { return "layers"; }
  std::string spec() const override { return "layers:" + std::to_string(n_layers_); }
  Status begin(std::span<const int32_t>) override { return ok_status(); }

  Result<DraftBlock> propose(std::span<const int32_t> context, int k, Sampler* sampler) override {
    DraftBlock block;
    if (k <= 0 || context.empty()) return block;
    if (target_.n_past() + 1 != context.size()) {
      return make_error("bad_state", "layer-skip draft: target holds " +
                                         std::to_string(target_.n_past()) + " tokens, context has " +
                                         std::to_string(context.size()) + " (expected one more)");
    }
    target_.drop_partial();
    int32_t tok = context.back();
    for (int i = 0; i < k; ++i) {
      if (target_.n_past() + target_.n_partial() + 1 > target_.n_ctx()) break;
      const int32_t one[1] = {tok};
      KAKEYA_ASSIGN_OR_RETURN(std::vector<float> logits, target_.eval_layers(one, n_layers_));
      tok = pick(logits, sampler, block);
      block.tokens.push_back(tok);
    }
    return block;
  }
  // The partial K/V is dropped by the target's next eval().
  void commit(size_t) override {}

 private:
  LlamaContext& target_;
  size_t n_layers_;
};

class LookupDraft final : public DraftSource {
 public:
  explicit LookupDraft(int max_ngram) : max_ngram_(max_ngram) {}
  std::string kind() const override { return "lookup"; }
  std::string spec() const override { return "lookup:" + std::to_string(max_ngram_); }
  Status begin(std::span<const int32_t>) override { return ok_status(); }
  Result<DraftBlock> propose(std::span<const int32_t> context, int k, Sampler* sampler) override {
    DraftBlock block;
    block.tokens = lookup_ngram(context, max_ngram_, k);
    if (sampler != nullptr && !sampler->greedy()) {
      // A deterministic proposal: q is one-hot on each drafted token.
      for (int32_t t : block.tokens) {
        (void)t;
        block.q.emplace_back();
      }
    }
    return block;
  }
  void commit(size_t) override {}

 private:
  int max_ngram_;
};

}  // namespace

Status check_same_vocab(const GgufFile& target, const GgufFile& draft) {
  KAKEYA_ASSIGN_OR_RETURN(std::vector<std::string> a, target.get_string_array("tokenizer.ggml.tokens"));
  KAKEYA_ASSIGN_OR_RETURN(std::vector<std::string> b, draft.get_string_array("tokenizer.ggml.tokens"));
  if (a.size() != b.size()) {
    return make_error("vocab_mismatch", "draft vocabulary has " + std::to_string(b.size()) +
                                            " tokens, target has " + std::to_string(a.size()));
  }
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i] != b[i]) {
      return make_error("vocab_mismatch", "token " + std::to_string(i) + " is \"" + b[i] +
                                              "\" in the draft but \"" + a[i] + "\" in the target");
    }
  }
  return ok_status();
}

std::vector<int32_t> lookup_ngram(std::span<const int32_t> context, int max_ngram, int k) {
  const size_t L = context.size();
  if (k <= 0 || L < 2) return {};
  for (size_t n = std::min<size_t>(static_cast<size_t>(std::max(max_ngram, 1)), L - 1); n >= 1; --n) {
    const auto pattern = context.subspan(L - n, n);
    for (size_t i = L - n; i-- > 0;) {
      if (std::equal(pattern.begin(), pattern.end(), context.begin() + static_cast<long>(i))) {
        const size_t start = i + n;  // < L because i < L - n
        const size_t len = std::min(static_cast<size_t>(k), L - start);
        return std::vector<int32_t>(context.begin() + static_cast<long>(start),
                                    context.begin() + static_cast<long>(start + len));
      }
    }
  }
  return {};
}

Status write_quantized_copy(const LlamaModel& model, GgmlType type, const std::string& path) {
  if (type != GgmlType::Q4_0 && type != GgmlType::Q8_0) {
    return make_error("unsupported_type", std::string("quantized draft type must be q4_0 or q8_0, got ") +
                                              ggml_type_name(type));
  }
  RequantizeOptions o;
  o.ftype = llama_file_type_of_pure(type);
  o.pure = true;
  o.extra_kvs = {{"kakeya.draft.quantized_from", model.gguf().sha256()},
                 {"kakeya.draft.quantized_type", std::string(ggml_type_name(type))}};
  KAKEYA_ASSIGN_OR_RETURN(const RequantizeSummary written, write_requantized(model, o, path));
  (void)written;
  return ok_status();
}

Result<std::unique_ptr<DraftSource>> make_draft_source(const std::string& spec, LlamaContext& target,
                                                       const DraftOptions& options) {
  const size_t colon = spec.find(':');
  if (colon == std::string::npos) {
    return make_error("bad_param", "draft \"" + spec +
                                       "\": expected gguf:PATH, layers:K, quant:q4_0|q8_0 or lookup:N");
  }
  const std::string kind = spec.substr(0, colon);
  const std::string arg = spec.substr(colon + 1);
  ContextOptions copt;
  copt.n_ctx = options.n_ctx != 0 ? options.n_ctx : target.n_ctx();
  Backend& backend = options.backend != nullptr ? *options.backend : target.backend();
  const int64_t n_layer = target.model().hparams().n_layer;
  if (kind == "layers") {
    const auto k = parse_int(arg);
    if (!k || *k < 1 || *k >= n_layer) {
      return make_error("bad_param", "draft \"" + spec + "\": K must be in [1, " +
                                         std::to_string(n_layer - 1) + "] (the target has " +
                                         std::to_string(n_layer) + " layers)");
    }
    return std::unique_ptr<DraftSource>(new LayerSkipDraft(target, static_cast<size_t>(*k)));
  }
  if (kind == "lookup") {
    const auto n = parse_int(arg);
    if (!n || *n < 1 || *n > 16) {
      return make_error("bad_param", "draft \"" + spec + "\": N must be in [1, 16]");
    }
    return std::unique_ptr<DraftSource>(new LookupDraft(*n));
  }
  if (kind == "gguf") {
    KAKEYA_ASSIGN_OR_RETURN(LlamaModel m, LlamaModel::load(arg));
    KAKEYA_TRY(check_same_vocab(target.model().gguf(), m.gguf()));
    return ModelDraft::create("gguf", spec, std::move(m), backend, copt);
  }
  if (kind == "quant") {
    GgmlType type;
    if (arg == "q4_0") {
      type = GgmlType::Q4_0;
    } else if (arg == "q8_0") {
      type = GgmlType::Q8_0;
    } else {
      return make_error("bad_param", "draft \"" + spec + "\": quant type must be q4_0 or q8_0");
    }
    static std::atomic<int> counter{0};
    const std::filesystem::path tmp =
        std::filesystem::path(options.temp_dir) /
        ("kakeya-draft-" + std::to_string(::getpid()) + "-" + std::to_string(counter++) + "-" + arg + ".gguf");
    KAKEYA_TRY(write_quantized_copy(target.model(), type, tmp.string()));
    auto m = LlamaModel::load(tmp.string());
    std::error_code ec;
    std::filesystem::remove(tmp, ec);  // the mapping stays valid after unlink
    if (!m.ok()) return m.error();
    return ModelDraft::create("quant", spec, std::move(m).value(), backend, copt);
  }
  return make_error("bad_param", "draft \"" + spec + "\": unknown kind \"" + kind +
                                     "\" (gguf, layers, quant, lookup)");
}

}  // namespace kakeya::engine
