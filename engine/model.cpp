#include "engine/model.h"

#include <atomic>
#include <iterator>
#include <map>
#include <string_view>
#include <utility>

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

// What an architecture changes in the llama basics (llama.cpp c392e50: llm_load_tensors'
// create_tensor flags, llama_model_rope_type, build_llama / build_qwen2).
enum class BiasRule {
  kOptional,     // llama: attn_q/k/v/output.bias and ffn_gate/up/down.bias, each optional
  kQkvRequired,  // qwen2: attn_q/k/v.bias required, no others read
};
struct ArchSpec {
  std::string_view name;
  RopeLayout rope_layout;
  BiasRule biases;
  bool rope_freqs;  // reads the optional rope_freqs.weight
};
constexpr ArchSpec kArchitectures[] = {
    {"llama", RopeLayout::kNormal, BiasRule::kOptional, true},
    {"qwen2", RopeLayout::kNeox, BiasRule::kQkvRequired, false},
};

const ArchSpec* find_arch(std::string_view name) {
  for (const ArchSpec& a : kArchitectures)
    if (a.name == name) return &a;
  return nullptr;
}

std::string arch_list() {
  std::string s;
  for (const ArchSpec& a : kArchitectures) s += (s.empty() ? "\"" : ", \"") + std::string(a.name) + "\"";
  return s;
}

// The RoPE of `p` (= "<arch>.") for a head of head_dim, as llama.cpp c392e50 sets it up with its
// default context parameters: llm_load_hparams reads the rope.* keys, llama_init_from_model turns
// them into freq_scale, ext_factor (1 for YaRN), attn_factor and n_ctx_orig_yarn.
Result<RopeParams> read_rope(const GgufFile& f, const std::string& p, const ArchSpec& arch, int64_t head_dim,
                             int64_t n_ctx_train) {
  RopeParams r;
  r.layout = arch.rope_layout;
  KAKEYA_ASSIGN_OR_RETURN(r.n_dims, get_int_or(f, p + "rope.dimension_count", head_dim));
  if (r.n_dims != head_dim) {
    // build_llama / build_qwen2 assert n_rot == n_embd_head; llm_load_hparams refuses it for llama.
    return make_error("bad_hparams", p + "rope.dimension_count " + std::to_string(r.n_dims) +
                                         " differs from the head size " + std::to_string(head_dim) +
                                         " (" + std::string(arch.name) + " rotates whole heads)");
  }
  KAKEYA_ASSIGN_OR_RETURN(const double base, get_float_or(f, p + "rope.freq_base", 10000.0));
  r.freq_base = static_cast<float>(base);
  std::string type = "linear";  // llama.cpp's default when the key is absent
  if (f.has(p + "rope.scaling.type")) {
    KAKEYA_ASSIGN_OR_RETURN(type, f.get_string(p + "rope.scaling.type"));
  }
  if (type == "none") {
    r.scaling = RopeScaling::kNone;
  } else if (type == "linear") {
    r.scaling = RopeScaling::kLinear;
  } else if (type == "yarn") {
    r.scaling = RopeScaling::kYarn;
  } else {
    return make_error("unsupported_architecture", p + "rope.scaling.type \"" + type +
                                              "\" is not supported (none, linear or yarn)");
  }
  const std::string factor_key =
      f.has(p + "rope.scaling.factor") ? p + "rope.scaling.factor" : p + "rope.scale_linear";
  KAKEYA_ASSIGN_OR_RETURN(const double factor, get_float_or(f, factor_key, 0.0));
  if (factor < 0.0) {
    return make_error("bad_hparams", factor_key + " " + std::to_string(factor) + " is negative");
  }
  // 0 or absent: no scaling. "none" never scales, whatever the factor says.
  r.freq_scale = factor == 0.0 || r.scaling == RopeScaling::kNone ? 1.0f : 1.0f / static_cast<float>(factor);
  if (r.freq_scale == 1.0f && r.scaling == RopeScaling::kLinear) r.scaling = RopeScaling::kNone;
  r.ext_factor = r.scaling == RopeScaling::kYarn ? 1.0f : 0.0f;
  KAKEYA_ASSIGN_OR_RETURN(const double attn, get_float_or(f, p + "rope.scaling.attn_factor", 1.0));
  r.attn_factor = static_cast<float>(attn);
  KAKEYA_ASSIGN_OR_RETURN(r.n_ctx_orig, get_int_or(f, p + "rope.scaling.original_context_length", 0));
  if (r.n_ctx_orig <= 0) r.n_ctx_orig = n_ctx_train;
  return r;
}

Result<LlamaHparams> read_hparams(const GgufFile& f, const ArchSpec** arch_out) {
  LlamaHparams hp;
  if (!f.has("general.architecture")) {
    return make_error("unsupported_architecture", "GGUF has no general.architecture key");
  }
  KAKEYA_ASSIGN_OR_RETURN(hp.architecture, f.get_string("general.architecture"));
  const ArchSpec* arch = find_arch(hp.architecture);
  if (arch == nullptr) {
    return make_error("unsupported_architecture", "general.architecture is \"" + hp.architecture +
                                                      "\"; supported: " + arch_list());
  }
  *arch_out = arch;
  const std::string p = hp.architecture + ".";
  KAKEYA_ASSIGN_OR_RETURN(const int64_t n_expert, get_int_or(f, p + "expert_count", 0));
  if (n_expert > 0) {
    return make_error("unsupported_architecture", p + "expert_count is " + std::to_string(n_expert) +
                                                      ": mixture-of-experts files are not supported");
  }
  KAKEYA_ASSIGN_OR_RETURN(hp.n_ctx_train, get_int_required(f, p + "context_length"));
  KAKEYA_ASSIGN_OR_RETURN(hp.n_embd, get_int_required(f, p + "embedding_length"));
  KAKEYA_ASSIGN_OR_RETURN(hp.n_layer, get_int_required(f, p + "block_count"));
  KAKEYA_ASSIGN_OR_RETURN(hp.n_ff, get_int_required(f, p + "feed_forward_length"));
  KAKEYA_ASSIGN_OR_RETURN(hp.n_head, get_int_required(f, p + "attention.head_count"));
  KAKEYA_ASSIGN_OR_RETURN(hp.n_head_kv, get_int_or(f, p + "attention.head_count_kv", hp.n_head));
  KAKEYA_ASSIGN_OR_RETURN(const double eps,
                          get_float_or(f, p + "attention.layer_norm_rms_epsilon", 1e-5));
  hp.rms_eps = static_cast<float>(eps);

  auto bad = [](const std::string& msg) { return make_error("bad_hparams", msg); };
  if (hp.n_embd <= 0 || hp.n_layer <= 0 || hp.n_ff <= 0 || hp.n_head <= 0 || hp.n_head_kv <= 0 ||
      hp.n_ctx_train <= 0) {
    return bad("non-positive hyperparameter (n_embd " + std::to_string(hp.n_embd) + ", n_layer " +
               std::to_string(hp.n_layer) + ", n_ff " + std::to_string(hp.n_ff) + ", n_head " +
               std::to_string(hp.n_head) + ", n_head_kv " + std::to_string(hp.n_head_kv) +
               ", context_length " + std::to_string(hp.n_ctx_train) + ")");
  }
  if (hp.n_head % hp.n_head_kv != 0) {
    return bad("n_head " + std::to_string(hp.n_head) + " is not a multiple of n_head_kv " +
               std::to_string(hp.n_head_kv));
  }
  // The head size: attention.key_length (Mistral-Nemo's 128 with n_embd 5120, 32 heads), else
  // n_embd / n_head.
  const bool keyed = f.has(p + "attention.key_length");
  if (!keyed && hp.n_embd % hp.n_head != 0) {
    return bad("n_embd " + std::to_string(hp.n_embd) + " is not a multiple of n_head " +
               std::to_string(hp.n_head));
  }
  KAKEYA_ASSIGN_OR_RETURN(hp.head_dim, get_int_or(f, p + "attention.key_length", hp.n_embd / hp.n_head));
  KAKEYA_ASSIGN_OR_RETURN(const int64_t value_length, get_int_or(f, p + "attention.value_length", hp.head_dim));
  if (hp.head_dim <= 0 || hp.head_dim % 2 != 0 || value_length != hp.head_dim) {
    return bad("attention.key_length " + std::to_string(hp.head_dim) + " and value_length " +
               std::to_string(value_length) + " must be equal, even and positive");
  }
  KAKEYA_ASSIGN_OR_RETURN(hp.rope, read_rope(f, p, *arch, hp.head_dim, hp.n_ctx_train));
  const TensorInfo* embd = f.find_tensor("token_embd.weight");
  if (embd == nullptr) return make_error("missing_tensor", "tensor token_embd.weight is missing");
  if (embd->ne.size() != 2) {
    return make_error("bad_shape", "tensor token_embd.weight: expected 2 dims, found " +
                                       shape_str(embd->ne));
  }
  KAKEYA_ASSIGN_OR_RETURN(hp.n_vocab, get_int_or(f, p + "vocab_size", embd->ne[1]));
  return hp;
}

// "blk.N.attn_q.weight" → "blk.N.attn_q.bias".
std::string bias_name(const std::string& weight_name) {
  constexpr std::string_view kSuffix = ".weight";
  return weight_name.substr(0, weight_name.size() - kSuffix.size()) + ".bias";
}

// The optional vector `name` of n values: a view when the file has it, else an absent matrix.
Result<WeightMatrix> optional_vector(const GgufFile& f, const std::string& name, int64_t n) {
  if (f.find_tensor(name) == nullptr) return WeightMatrix{name};
  return vector_view(f, name, n);
}

}  // namespace

std::vector<std::string> supported_architectures() {
  std::vector<std::string> out;
  for (const ArchSpec& a : kArchitectures) out.emplace_back(a.name);
  return out;
}

Result<LlamaModel> LlamaModel::load(const std::string& path) {
  static std::atomic<uint64_t> next_id{1};
  KAKEYA_ASSIGN_OR_RETURN(GgufFile file, GgufFile::open(path));
  LlamaModel m;
  m.gguf_ = std::make_unique<GgufFile>(std::move(file));
  m.path_ = path;
  m.id_ = next_id.fetch_add(1);
  const GgufFile& f = *m.gguf_;
  const ArchSpec* arch = nullptr;
  KAKEYA_ASSIGN_OR_RETURN(m.hparams_, read_hparams(f, &arch));
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
    // Biases by the architecture's rule, each [1][rows of its matrix]; q, k, v first.
    const std::pair<WeightMatrix*, const WeightMatrix*> biases[] = {
        {&L.bq, &L.wq},         {&L.bk, &L.wk}, {&L.bv, &L.wv},        {&L.bo, &L.wo},
        {&L.b_gate, &L.w_gate}, {&L.b_up, &L.w_up}, {&L.b_down, &L.w_down}};
    for (size_t i = 0; i < std::size(biases); ++i) {
      const auto [bias, weight] = biases[i];
      const std::string name = bias_name(weight->name);
      if (arch->biases == BiasRule::kOptional) {
        KAKEYA_ASSIGN_OR_RETURN(*bias, optional_vector(f, name, weight->n_out));
      } else if (i < 3) {  // kQkvRequired
        KAKEYA_ASSIGN_OR_RETURN(*bias, vector_view(f, name, weight->n_out));
      }
    }
  }
  if (arch->rope_freqs) {
    KAKEYA_ASSIGN_OR_RETURN(w.rope_freqs, optional_vector(f, "rope_freqs.weight", hp.rope.n_dims / 2));
    if (w.rope_freqs.present() && w.rope_freqs.type != GgmlType::F32) {
      return make_error("unsupported_type", "tensor rope_freqs.weight: type " +
                                                std::string(ggml_type_name(w.rope_freqs.type)) +
                                                ", expected f32 (ggml's rope reads f32 factors)");
    }
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
