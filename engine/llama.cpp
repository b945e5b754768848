#include "engine/llama.h"

#include <algorithm>
#include <string>

namespace kakeya::engine {
namespace {

// y += bias per row, where the model has that bias.
void add_bias(Backend& b, const Tensor& y, const Tensor& bias) {
  if (bias.present()) b.add_bias(y, bias);
}

}  // namespace

// Activations of one forward pass, [cap][width] F32 each, on the backend.
struct LlamaContext::Scratch {
  size_t cap = 0;  // tokens
  std::vector<std::unique_ptr<BackendBuffer>> buffers;
  Tensor x, xn, q, k, v, att, tmp, gate, up, logits;
  std::vector<int32_t> positions;
  std::vector<KvHeadView> kv_views;
};

Result<std::unique_ptr<LlamaContext>> LlamaContext::create(const LlamaModel& model, Backend& backend,
                                                           ContextOptions options) {
  KAKEYA_ASSIGN_OR_RETURN(std::shared_ptr<const ModelWeights> weights, backend.weights(model));
  return std::unique_ptr<LlamaContext>(new LlamaContext(model, backend, std::move(weights), options));
}

LlamaContext::LlamaContext(const LlamaModel& model, Backend& backend, std::shared_ptr<const ModelWeights> weights,
                           ContextOptions options)
    : model_(model), backend_(backend), weights_(std::move(weights)), options_(options) {
  const LlamaHparams& hp = model.hparams();
  if (options_.n_ctx == 0) options_.n_ctx = static_cast<size_t>(hp.n_ctx_train);
  options_.n_batch = std::max<size_t>(1, options_.n_batch);
  kv_ = std::make_unique<KvCache>(backend, KvCacheShape{static_cast<size_t>(hp.n_layer),
                                                        static_cast<size_t>(hp.n_head_kv),
                                                        static_cast<size_t>(hp.head_dim), options_.n_ctx});
  s_ = std::make_unique<Scratch>();
}

LlamaContext::~LlamaContext() = default;

Result<std::vector<float>> LlamaContext::eval(std::span<const int32_t> tokens, bool all_logits) {
  drop_partial();
  std::vector<float> logits;
  KAKEYA_TRY(eval_impl(tokens, weights_->layers.size(), all_logits, &logits, nullptr));
  return logits;
}

Result<std::vector<int32_t>> LlamaContext::eval_argmax(std::span<const int32_t> tokens, bool all_rows) {
  drop_partial();
  std::vector<int32_t> ids;
  KAKEYA_TRY(eval_impl(tokens, weights_->layers.size(), all_rows, nullptr, &ids));
  return ids;
}

Result<std::vector<int32_t>> LlamaContext::eval_accept_greedy(std::span<const int32_t> block) {
  std::vector<int32_t> out(block.size() + 1);
  if (block.size() > options_.n_batch) {  // rows of several forward passes: the rule on the host
    KAKEYA_ASSIGN_OR_RETURN(std::vector<int32_t> ids, eval_argmax(block, /*all_rows=*/true));
    greedy_acceptance(ids, block.subspan(1), out);
    return out;
  }
  drop_partial();
  KAKEYA_TRY(check_tokens(block, kv_->n_free()));
  Readback rb;
  rb.all_rows = true;
  rb.drafts = block.subspan(1);
  rb.accept = out.data();
  KAKEYA_TRY(forward(block.data(), block.size(), weights_->layers.size(), rb));
  return out;
}

Result<std::vector<float>> LlamaContext::eval_layers(std::span<const int32_t> tokens, size_t n_layers,
                                                     bool all_logits) {
  const size_t n_layer = weights_->layers.size();
  if (n_layers < 1 || n_layers > n_layer) {
    return make_error("bad_param", "eval_layers: n_layers " + std::to_string(n_layers) +
                                       " outside [1, " + std::to_string(n_layer) + "]");
  }
  if (partial_tokens_ > 0 && n_layers != partial_layers_) {
    return make_error("bad_param", "eval_layers: n_layers " + std::to_string(n_layers) +
                                       " while " + std::to_string(partial_tokens_) +
                                       " partial tokens of " + std::to_string(partial_layers_) +
                                       " layers are pending");
  }
  if (n_layers == n_layer) return eval(tokens, all_logits);
  if (tokens.size() + partial_tokens_ > kv_->n_free()) {
    return make_error("context_overflow", "eval_layers: " + std::to_string(n_past()) + " past + " +
                                              std::to_string(partial_tokens_) + " partial + " +
                                              std::to_string(tokens.size()) +
                                              " new tokens exceed n_ctx " +
                                              std::to_string(options_.n_ctx));
  }
  partial_layers_ = n_layers;
  std::vector<float> logits;
  KAKEYA_TRY(eval_impl(tokens, n_layers, all_logits, &logits, nullptr));
  return logits;
}

void LlamaContext::drop_partial() {
  if (partial_tokens_ == 0) return;
  for (size_t il = 0; il < partial_layers_; ++il) kv_->layer(il).truncate(kv_->n_committed());
  partial_tokens_ = 0;
  partial_layers_ = 0;
}

Status LlamaContext::check_tokens(std::span<const int32_t> tokens, size_t room) const {
  if (tokens.empty()) return make_error("empty_input", "eval: no tokens");
  const int64_t n_vocab = model_.hparams().n_vocab;
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i] < 0 || tokens[i] >= n_vocab) {
      return make_error("bad_token", "eval: token " + std::to_string(i) + " has id " +
                                         std::to_string(tokens[i]) + ", outside [0, " +
                                         std::to_string(n_vocab) + ")");
    }
  }
  if (tokens.size() > room) {
    return make_error("context_overflow",
                      "eval: " + std::to_string(n_past()) + " past + " +
                          std::to_string(tokens.size()) + " new tokens exceed n_ctx " +
                          std::to_string(options_.n_ctx));
  }
  return ok_status();
}

Status LlamaContext::eval_impl(std::span<const int32_t> tokens, size_t n_layers, bool all_rows,
                               std::vector<float>* logits, std::vector<int32_t>* ids) {
  KAKEYA_TRY(check_tokens(tokens, kv_->n_free()));
  const size_t n_vocab = static_cast<size_t>(model_.hparams().n_vocab);
  const size_t rows = all_rows ? tokens.size() : 1;
  if (logits != nullptr) logits->assign(n_vocab * rows, 0.0f);
  if (ids != nullptr) ids->assign(rows, 0);
  for (size_t b = 0; b < tokens.size(); b += options_.n_batch) {
    const size_t n = std::min(options_.n_batch, tokens.size() - b);
    const bool last = b + n == tokens.size();
    Readback out;
    out.all_rows = all_rows;
    if (all_rows || last) {
      const size_t row0 = all_rows ? b : 0;
      if (logits != nullptr) out.logits = logits->data() + row0 * n_vocab;
      if (ids != nullptr) out.ids = ids->data() + row0;
    }
    KAKEYA_TRY(forward(tokens.data() + b, n, n_layers, out));
  }
  return ok_status();
}

Status LlamaContext::reserve_scratch(size_t n) {
  Scratch& s = *s_;
  if (s.cap >= n) return ok_status();
  const LlamaHparams& hp = model_.hparams();
  const int64_t qd = hp.n_head * hp.head_dim, kd = hp.n_head_kv * hp.head_dim;
  std::vector<std::unique_ptr<BackendBuffer>> buffers;
  auto make = [&](int64_t width, Tensor& t) -> Status {
    const size_t bytes = static_cast<size_t>(width) * n * sizeof(float);
    KAKEYA_ASSIGN_OR_RETURN(std::unique_ptr<BackendBuffer> buf, backend_.alloc(bytes));
    t = Tensor{buf.get(), 0, GgmlType::F32, width, static_cast<int64_t>(n)};
    buffers.push_back(std::move(buf));
    return ok_status();
  };
  Scratch grown;
  KAKEYA_TRY(make(hp.n_embd, grown.x));
  KAKEYA_TRY(make(hp.n_embd, grown.xn));
  KAKEYA_TRY(make(hp.n_embd, grown.tmp));
  KAKEYA_TRY(make(qd, grown.q));
  KAKEYA_TRY(make(qd, grown.att));
  KAKEYA_TRY(make(kd, grown.k));
  KAKEYA_TRY(make(kd, grown.v));
  KAKEYA_TRY(make(hp.n_ff, grown.gate));
  KAKEYA_TRY(make(hp.n_ff, grown.up));
  KAKEYA_TRY(make(hp.n_vocab, grown.logits));
  grown.cap = n;
  grown.buffers = std::move(buffers);
  *s_ = std::move(grown);
  return ok_status();
}

Status LlamaContext::forward(const int32_t* tokens, size_t n, size_t n_layers, const Readback& out) {
  KAKEYA_TRY(reserve_scratch(n));
  const bool partial = n_layers < weights_->layers.size();
  const LlamaHparams& hp = model_.hparams();
  const ModelWeights& W = *weights_;
  Backend& B = backend_;
  Scratch& s = *s_;
  const int64_t rows = static_cast<int64_t>(n);
  const Tensor x = s.x.row_range(0, rows), xn = s.xn.row_range(0, rows), tmp = s.tmp.row_range(0, rows);
  const Tensor q = s.q.row_range(0, rows), k = s.k.row_range(0, rows), v = s.v.row_range(0, rows);
  const Tensor att = s.att.row_range(0, rows), gate = s.gate.row_range(0, rows), up = s.up.row_range(0, rows);
  const size_t pos0 = kv_->n_committed() + partial_tokens_;
  s.positions.resize(n);
  for (size_t t = 0; t < n; ++t) s.positions[t] = static_cast<int32_t>(pos0 + t);
  const Tensor* freq_factors = W.rope_freqs.present() ? &W.rope_freqs : nullptr;
  const RopeArgs rope_q{hp.n_head, hp.head_dim, hp.rope, freq_factors};
  const RopeArgs rope_k{hp.n_head_kv, hp.head_dim, hp.rope, freq_factors};

  // Rows whose hidden state reaches the output head: every row (all_rows), the last one, or none
  // (a prefill chunk before the last). The last layer computes K and V for every row (the cache
  // needs them) but its queries, attention, output projection and FFN only for these rows: nothing
  // else reads the others. llama.cpp skips the last layer's FFN for unused rows (`inp_out_ids`,
  // after its attention and wo); here the rows after K and V are skipped too.
  const bool wants_output = out.logits != nullptr || out.ids != nullptr || out.accept != nullptr;
  const int64_t out_first = !wants_output ? rows : (out.all_rows ? 0 : rows - 1);
  const std::span<const int32_t> positions(s.positions);

  B.embed(W.token_embd, std::span<const int32_t>(tokens, n), x);
  for (size_t il = 0; il < n_layers; ++il) {
    const ModelWeights::Layer& L = W.layers[il];
    // Rows [r0, rows) go on past the K and V projections: all of them but in the last layer.
    const int64_t r0 = il + 1 == n_layers ? out_first : 0;
    const int64_t m = rows - r0;
    B.rms_norm(x, L.attn_norm, hp.rms_eps, xn);
    const Tensor q_r = q.row_range(r0, m);
    if (r0 == 0) {
      const MatmulOut qkv[] = {{&L.wq, q}, {&L.wk, k}, {&L.wv, v}};
      B.matmul(qkv, xn);
    } else {
      const MatmulOut kv[] = {{&L.wk, k}, {&L.wv, v}};
      B.matmul(kv, xn);
      if (m > 0) {
        const MatmulOut q_out[] = {{&L.wq, q_r}};
        B.matmul(q_out, xn.row_range(r0, m));
      }
    }
    const std::span<const int32_t> positions_r = positions.subspan(static_cast<size_t>(r0));
    if (m > 0) add_bias(B, q_r, L.bq);
    add_bias(B, k, L.bk);
    add_bias(B, v, L.bv);
    if (m > 0) B.rope(q_r, rope_q, positions_r);
    B.rope(k, rope_k, positions);
    if (Status st = kv_->layer(il).append(k, v, positions); !st.ok()) {
      for (size_t j = 0; j < il; ++j) kv_->layer(j).truncate(pos0);  // nothing appended on error
      return st;
    }
    if (m == 0) continue;
    const Tensor x_r = x.row_range(r0, m), xn_r = xn.row_range(r0, m), tmp_r = tmp.row_range(r0, m);
    const Tensor att_r = att.row_range(r0, m), gate_r = gate.row_range(r0, m), up_r = up.row_range(r0, m);
    kv_->layer(il).head_views(s.kv_views);
    B.attention(q_r, AttentionArgs{hp.n_head, hp.n_head_kv, hp.head_dim, s.kv_views, positions_r}, att_r);
    const MatmulOut o[] = {{&L.wo, tmp_r}};
    B.matmul(o, att_r);
    add_bias(B, tmp_r, L.bo);
    B.add(x_r, tmp_r);

    B.rms_norm(x_r, L.ffn_norm, hp.rms_eps, xn_r);
    const MatmulOut ffn[] = {{&L.w_gate, gate_r}, {&L.w_up, up_r}};
    B.matmul(ffn, xn_r);
    add_bias(B, gate_r, L.b_gate);
    add_bias(B, up_r, L.b_up);
    B.swiglu(gate_r, up_r);
    const MatmulOut down[] = {{&L.w_down, tmp_r}};
    B.matmul(down, gate_r);
    add_bias(B, tmp_r, L.b_down);
    B.add(x_r, tmp_r);
  }
  // Every layer received the n tokens; the capacity was checked by eval().
  if (partial) {
    partial_tokens_ += n;
  } else {
    (void)kv_->commit(n);
  }

  if (wants_output) {
    const int64_t first = out_first;
    const int64_t n_out = rows - first;
    const Tensor head_in = s.xn.row_range(0, n_out);
    const Tensor logits = s.logits.row_range(0, n_out);
    B.rms_norm(x.row_range(first, n_out), W.output_norm, hp.rms_eps, head_in);
    const MatmulOut head[] = {{&W.output, logits}};
    B.matmul(head, head_in);
    const size_t count = static_cast<size_t>(n_out);
    if (out.logits != nullptr) B.read(logits, std::span<float>(out.logits, count * static_cast<size_t>(hp.n_vocab)));
    if (out.ids != nullptr) B.argmax_rows(logits, std::span<int32_t>(out.ids, count));
    if (out.accept != nullptr) B.accept_greedy(logits, out.drafts, std::span<int32_t>(out.accept, count + 1));
  }
  B.sync();
  return ok_status();
}

}  // namespace kakeya::engine
