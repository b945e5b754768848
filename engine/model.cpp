#include "engine/model.h"

#include <atomic>
#include <map>

namespace kakeya::engine {
namespace {

std::string shape_str(const std::vector<int64_t>& ne) {
  std::string s = "[";
  for (size_t i = 0; i < ne.size(); ++i) s += (i ? ", " : "") + std::to_string(ne[i]);
  return s + "]";
}

Result<int64_t> get_int_or(const GgufFile& f, const std::string& key, int64_t fallback) {
  if (!f.has(key)) return fallback;
  return f.get_int(key);
}

Result<int64_t> get_int_required(const GgufFile& f, const std::string& key) {
  if (!f.has(key)) return make_error("missing_key", "GGUF metadata key " + key + " is required");
  return f.get_int(key);
}

Result<double> get_float_or(const GgufFile& f, const std::string& key, double fallback) {
  if (!f.has(key)) return fallback;
  return f.get_float(key);
}

Result<WeightMatrix> matrix(const GgufFile& f, const std::string& name, int64_t n_in,
                            int64_t n_out) {
  const TensorInfo* t = f.find_tensor(name);
  if (t == nullptr) return make_error("missing_tensor", "tensor " + name + " is missing");
  if (t->ne.size() != 2 || t->ne[0] != n_in || t->ne[1] != n_out) {
    return make_error("bad_shape", "tensor " + name + ": expected ne " +
                                       shape_str({n_in, n_out}) + ", found " + shape_str(t->ne));
  }
  return WeightMatrix{name, t->type, t->data, n_in, n_out, t->row_bytes()};
}

// A vector of n values, as a matrix of one row.
Result<WeightMatrix> vector_view(const GgufFile& f, const std::string& name, int64_t n) {
  const TensorInfo* t = f.find_tensor(name);
  if (t == nullptr) return make_error("missing_tensor", "tensor " + name + " is missing");
  if (t->nelements() != n || t->ne[0] != n) {
    return make_error("bad_shape", "tensor " + name + ": expected ne [" + std::to_string(n) +
                                       "], found " + shape_str(t->ne));
  }
  if (n % ggml_block_size(t->type) != 0) {
    return make_error("bad_shape", "tensor " + name + ": length " + std::to_string(n) +
                                       " is not a multiple of the " + ggml_type_name(t->type) +
                                       " block size");
  }
  return WeightMatrix{name, t->type, t->data, n, 1, t->row_bytes()};
}

Result<LlamaHparams> read_hparams(const GgufFile& f) {
  LlamaHparams hp;
  if (!f.has("general.architecture")) {
    return make_error("unsupported_architecture", "GGUF has no general.architecture key");
  }
  KAKEYA_ASSIGN_OR_RETURN(hp.architecture, f.get_string("general.architecture"));
  if (hp.architecture != "llama") {
    return make_error("unsupported_architecture",
                      "general.architecture is \"" + hp.architecture +
                          "\"; only \"llama\" is supported");
  }
  const std::string p = hp.architecture + ".";
  KAKEYA_ASSIGN_OR_RETURN(hp.n_ctx_train, get_int_required(f, p + "context_length"));
  KAKEYA_ASSIGN_OR_RETURN(hp.n_embd, get_int_required(f, p + "embedding_length"));
  KAKEYA_ASSIGN_OR_RETURN(hp.n_layer, get_int_required(f, p + "block_count"));
  KAKEYA_ASSIGN_OR_RETURN(hp.n_ff, get_int_required(f, p + "feed_forward_length"));
  KAKEYA_ASSIGN_OR_RETURN(hp.n_head, get_int_required(f, p + "attention.head_count"));
  KAKEYA_ASSIGN_OR_RETURN(hp.n_head_kv, get_int_or(f, p + "attention.head_count_kv", hp.n_head));
  KAKEYA_ASSIGN_OR_RETURN(const double eps,
                          get_float_or(f, p + "attention.layer_norm_rms_epsilon", 1e-5));
  hp.rms_eps = static_cast<float>(eps);
  KAKEYA_ASSIGN_OR_RETURN(const double base, get_float_or(f, p + "rope.freq_base", 10000.0));
  hp.rope_freq_base = static_cast<float>(base);

  auto bad = [](const std::string& msg) { return make_error("bad_hparams", msg); };
  if (hp.n_embd <= 0 || hp.n_layer <= 0 || hp.n_ff <= 0 || hp.n_head <= 0 || hp.n_head_kv <= 0 ||
      hp.n_ctx_train <= 0) {
    return bad("non-positive hyperparameter (n_embd " + std::to_string(hp.n_embd) + ", n_layer " +
               std::to_string(hp.n_layer) + ", n_ff " + std::to_string(hp.n_ff) + ", n_head " +
               std::to_string(hp.n_head) + ", n_head_kv " + std::to_string(hp.n_head_kv) +
               ", context_length " + std::to_string(hp.n_ctx_train) + ")");
  }
  if (hp.n_embd % hp.n_head != 0) {
    return bad("n_embd " + std::to_string(hp.n_embd) + " is not a multiple of n_head " +
               std::to_string(hp.n_head));
  }
  if (hp.n_head % hp.n_head_kv != 0) {
    return bad("n_head " + std::to_string(hp.n_head) + " is not a multiple of n_head_kv " +
               std::to_string(hp.n_head_kv));
  }
  hp.head_dim = hp.n_embd / hp.n_head;
  KAKEYA_ASSIGN_OR_RETURN(hp.rope_dim, get_int_or(f, p + "rope.dimension_count", hp.head_dim));
  if (hp.rope_dim <= 0 || hp.rope_dim > hp.head_dim || hp.rope_dim % 2 != 0) {
    return bad("rope.dimension_count " + std::to_string(hp.rope_dim) +
               " must be even and in 1.." + std::to_string(hp.head_dim));
  }
  const TensorInfo* embd = f.find_tensor("token_embd.weight");
  if (embd == nullptr) return make_error("missing_tensor", "tensor token_embd.weight is missing");
  if (embd->ne.size() != 2) {
    return make_error("bad_shape", "tensor token_embd.weight: expected 2 dims, found " +
                                       shape_str(embd->ne));
  }
  KAKEYA_ASSIGN_OR_RETURN(hp.n_vocab, get_int_or(f, p + "vocab_size", embd->ne[1]));
  return hp;
}

}  // namespace

Result<LlamaModel> LlamaModel::load(const std::string& path) {
  static std::atomic<uint64_t> next_id{1};
  KAKEYA_ASSIGN_OR_RETURN(GgufFile file, GgufFile::open(path));
  LlamaModel m;
  m.gguf_ = std::make_unique<GgufFile>(std::move(file));
  m.path_ = path;
  m.id_ = next_id.fetch_add(1);
  const GgufFile& f = *m.gguf_;
  KAKEYA_ASSIGN_OR_RETURN(m.hparams_, read_hparams(f));
  const LlamaHparams& hp = m.hparams_;
  const int64_t hd = hp.head_dim;
  LlamaWeights& w = m.weights_;
  KAKEYA_ASSIGN_OR_RETURN(w.token_embd, matrix(f, "token_embd.weight", hp.n_embd, hp.n_vocab));
  w.layers.resize(static_cast<size_t>(hp.n_layer));
  for (int64_t il = 0; il < hp.n_layer; ++il) {
    LlamaLayerWeights& L = w.layers[static_cast<size_t>(il)];
    const std::string b = "blk." + std::to_string(il) + ".";
    KAKEYA_ASSIGN_OR_RETURN(L.attn_norm, vector_view(f, b + "attn_norm.weight", hp.n_embd));
    KAKEYA_ASSIGN_OR_RETURN(L.wq, matrix(f, b + "attn_q.weight", hp.n_embd, hp.n_head * hd));
    KAKEYA_ASSIGN_OR_RETURN(L.wk, matrix(f, b + "attn_k.weight", hp.n_embd, hp.n_head_kv * hd));
    KAKEYA_ASSIGN_OR_RETURN(L.wv, matrix(f, b + "attn_v.weight", hp.n_embd, hp.n_head_kv * hd));
    KAKEYA_ASSIGN_OR_RETURN(L.wo, matrix(f, b + "attn_output.weight", hp.n_head * hd, hp.n_embd));
    KAKEYA_ASSIGN_OR_RETURN(L.ffn_norm, vector_view(f, b + "ffn_norm.weight", hp.n_embd));
    KAKEYA_ASSIGN_OR_RETURN(L.w_gate, matrix(f, b + "ffn_gate.weight", hp.n_embd, hp.n_ff));
    KAKEYA_ASSIGN_OR_RETURN(L.w_up, matrix(f, b + "ffn_up.weight", hp.n_embd, hp.n_ff));
    KAKEYA_ASSIGN_OR_RETURN(L.w_down, matrix(f, b + "ffn_down.weight", hp.n_ff, hp.n_embd));
  }
  KAKEYA_ASSIGN_OR_RETURN(w.output_norm, vector_view(f, "output_norm.weight", hp.n_embd));
  if (f.find_tensor("output.weight") != nullptr) {
    KAKEYA_ASSIGN_OR_RETURN(w.output, matrix(f, "output.weight", hp.n_embd, hp.n_vocab));
  } else {
    w.output = w.token_embd;
    w.output_tied = true;
  }
  // Every matmul row must hold whole blocks of its type.
  auto check_blocks = [](const WeightMatrix& wm) -> Status {
    if (wm.n_in % ggml_block_size(wm.type) != 0) {
      return make_error("bad_shape", "tensor " + wm.name + ": row length " +
                                         std::to_string(wm.n_in) + " is not a multiple of the " +
                                         ggml_type_name(wm.type) + " block size " +
                                         std::to_string(ggml_block_size(wm.type)));
    }
    return ok_status();
  };
  KAKEYA_TRY(check_blocks(w.token_embd));
  KAKEYA_TRY(check_blocks(w.output));
  for (const auto& L : w.layers) {
    for (const WeightMatrix* wm : {&L.wq, &L.wk, &L.wv, &L.wo, &L.w_gate, &L.w_up, &L.w_down})
      KAKEYA_TRY(check_blocks(*wm));
  }
  if (f.has("kakeya.synthetic")) {
    KAKEYA_ASSIGN_OR_RETURN(m.synthetic_, f.get_bool("kakeya.synthetic"));
  }
  return m;
}

std::vector<std::pair<std::string, int>> LlamaModel::tensor_type_counts() const {
  std::map<std::string, int> counts;
  for (const TensorInfo& t : gguf_->tensors()) ++counts[ggml_type_name(t.type)];
  return {counts.begin(), counts.end()};
}

}  // namespace kakeya::engine
