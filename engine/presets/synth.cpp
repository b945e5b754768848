#include "engine/presets/synth.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>

#include "engine/cpu/quant.h"
#include "engine/cpu/thread_pool.h"
#include "engine/gguf.h"
#include "engine/gguf_writer.h"

namespace kakeya::engine {
namespace {

// ---- counter-based random numbers: splitmix64 keyed on (seed, tensor, row) ----
uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// n standard-normal draws (Box–Muller in double, cast to float).
void normal_row(uint64_t seed, uint64_t tensor, uint64_t row, float* out, int64_t n) {
  uint64_t state = seed;
  state = splitmix64(state) ^ (tensor * 0xD1B54A32D192ED03ull);
  state = splitmix64(state) ^ (row * 0x8CB92BA72F3D8DD7ull);
  for (int64_t i = 0; i < n; i += 2) {
    const double u1 = (static_cast<double>(splitmix64(state) >> 11) + 1.0) * 0x1.0p-53;
    const double u2 = static_cast<double>(splitmix64(state) >> 11) * 0x1.0p-53;
    const double r = std::sqrt(-2.0 * std::log(u1));
    out[i] = static_cast<float>(r * std::cos(2.0 * M_PI * u2));
    if (i + 1 < n) out[i + 1] = static_cast<float>(r * std::sin(2.0 * M_PI * u2));
  }
}

struct Vocab {
  std::vector<std::string> tokens;
  std::vector<float> scores;
  std::vector<int32_t> types;
  std::string origin;
};

Result<Vocab> make_vocab(const std::string& source, int64_t n_vocab) {
  Vocab v;
  if (!source.empty() && std::filesystem::exists(source)) {
    KAKEYA_ASSIGN_OR_RETURN(GgufFile f, GgufFile::open(source));
    KAKEYA_ASSIGN_OR_RETURN(v.tokens, f.get_string_array("tokenizer.ggml.tokens"));
    if (static_cast<int64_t>(v.tokens.size()) == n_vocab) {
      KAKEYA_ASSIGN_OR_RETURN(const std::vector<double> scores,
                              f.get_float_array("tokenizer.ggml.scores"));
      KAKEYA_ASSIGN_OR_RETURN(const std::vector<int64_t> types,
                              f.get_int_array("tokenizer.ggml.token_type"));
      v.scores.assign(scores.begin(), scores.end());
      for (int64_t t : types) v.types.push_back(static_cast<int32_t>(t));
      v.origin = std::filesystem::path(source).filename().string();
      return v;
    }
    v.tokens.clear();
  }
  if (n_vocab < 259) {
    return make_error("bad_shape", "n_vocab " + std::to_string(n_vocab) +
                                       " is below 259, the size of the byte-level vocabulary");
  }
  v.origin = "byte-level";
  v.tokens = {"<unk>", "<s>", "</s>"};
  v.types = {2, 3, 3};
  for (int b = 0; b < 256; ++b) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "<0x%02X>", b);
    v.tokens.emplace_back(buf);
    v.types.push_back(6);
  }
  // "▁" (U+2581, the SentencePiece space) so that spaces are one token, then fillers.
  if (n_vocab > 259) {
    v.tokens.emplace_back("\xE2\x96\x81");
    v.types.push_back(1);
  }
  for (int64_t i = 260; i < n_vocab; ++i) {
    v.tokens.push_back("<synth-" + std::to_string(i) + ">");
    v.types.push_back(1);
  }
  v.scores.assign(v.tokens.size(), 0.0f);
  for (size_t i = 259; i < v.scores.size(); ++i) v.scores[i] = -static_cast<float>(i);
  return v;
}

}  // namespace

// ---- synthetic models ----

Result<SynthShape> synth_shape(const std::string& name) {
  SynthShape s;
  s.name = name;
  if (name == "tinyllama-1.1b") {
    s.n_embd = 2048, s.n_ff = 5632, s.n_layer = 22, s.n_head = 32, s.n_head_kv = 4;
    s.n_vocab = 32000, s.n_ctx = 2048;
  } else if (name == "llama-7b") {
    s.n_embd = 4096, s.n_ff = 11008, s.n_layer = 32, s.n_head = 32, s.n_head_kv = 32;
    s.n_vocab = 32000, s.n_ctx = 4096;
  } else if (name != "custom") {
    return make_error("bad_shape", "unknown shape \"" + name +
                                       "\" (known: tinyllama-1.1b, llama-7b, custom)");
  }
  return s;
}

Status write_synth_model(const SynthOptions& o, const std::string& path) {
  const SynthShape& s = o.shape;
  if (s.n_embd <= 0 || s.n_ff <= 0 || s.n_layer <= 0 || s.n_head <= 0 || s.n_head_kv <= 0 ||
      s.n_vocab <= 0 || s.n_ctx <= 0) {
    return make_error("bad_shape", "every size must be positive");
  }
  if (s.n_embd % s.n_head != 0 || s.n_head % s.n_head_kv != 0 || (s.n_embd / s.n_head) % 2 != 0) {
    return make_error("bad_shape", "need n_embd % n_head == 0 (even head_dim) and "
                                   "n_head % n_head_kv == 0; got n_embd " + std::to_string(s.n_embd) +
                                   ", n_head " + std::to_string(s.n_head) + ", n_head_kv " +
                                   std::to_string(s.n_head_kv));
  }
  if (!o.mix && !has_dot_kernels(o.type)) {
    return make_error("unsupported_type", std::string("synth cannot write type ") + ggml_type_name(o.type));
  }
  const int64_t block = o.mix ? 32 : ggml_block_size(o.type);
  if (s.n_embd % block != 0 || s.n_ff % block != 0) {
    return make_error("bad_shape", "n_embd " + std::to_string(s.n_embd) + " and n_ff " +
                                       std::to_string(s.n_ff) + " must be multiples of " + std::to_string(block) +
                                       " for " + (o.mix ? llama_file_type_name(*o.mix) : ggml_type_name(o.type)));
  }
  const LlamaFileType ftype = o.mix ? *o.mix : llama_file_type_of_pure(o.type);
  const int n_gqa = static_cast<int>(s.n_head / s.n_head_kv);
  // The type of a 2-D tensor: the single type, or the mix's rule for its role and layer.
  auto tensor_type = [&](TensorRole role, int64_t layer, int64_t n_in) -> Result<GgmlType> {
    if (!o.mix) return o.type;
    return llama_mix_tensor_type(*o.mix, MixTensor{role, static_cast<int>(layer), static_cast<int>(s.n_layer), n_gqa, n_in});
  };
  KAKEYA_ASSIGN_OR_RETURN(Vocab vocab, make_vocab(o.vocab_source, s.n_vocab));
  const int64_t hd = s.n_embd / s.n_head;

  GgufWriter w;
  w.add_kv("general.architecture", std::string("llama"));
  w.add_kv("general.name", "kakeya-synth-" + s.name + "-" + (o.mix ? llama_file_type_name(*o.mix) : ggml_type_name(o.type)));
  w.add_kv("general.file_type", static_cast<uint32_t>(ftype));
  w.add_kv("llama.context_length", static_cast<uint32_t>(s.n_ctx));
  w.add_kv("llama.embedding_length", static_cast<uint32_t>(s.n_embd));
  w.add_kv("llama.block_count", static_cast<uint32_t>(s.n_layer));
  w.add_kv("llama.feed_forward_length", static_cast<uint32_t>(s.n_ff));
  w.add_kv("llama.attention.head_count", static_cast<uint32_t>(s.n_head));
  w.add_kv("llama.attention.head_count_kv", static_cast<uint32_t>(s.n_head_kv));
  w.add_kv("llama.attention.layer_norm_rms_epsilon", 1e-5f);
  w.add_kv("llama.rope.dimension_count", static_cast<uint32_t>(hd));
  w.add_kv("llama.rope.freq_base", 10000.0f);
  w.add_kv("llama.vocab_size", static_cast<uint32_t>(s.n_vocab));
  w.add_kv("tokenizer.ggml.model", std::string("llama"));
  w.add_kv("tokenizer.ggml.tokens", vocab.tokens);
  w.add_kv("tokenizer.ggml.scores", vocab.scores);
  w.add_kv("tokenizer.ggml.token_type", vocab.types);
  w.add_kv("tokenizer.ggml.bos_token_id", static_cast<uint32_t>(1));
  w.add_kv("tokenizer.ggml.eos_token_id", static_cast<uint32_t>(2));
  w.add_kv("tokenizer.ggml.unknown_token_id", static_cast<uint32_t>(0));
  w.add_kv("tokenizer.ggml.add_bos_token", true);
  w.add_kv("tokenizer.ggml.add_eos_token", false);
  w.add_kv("kakeya.synthetic", true);
  w.add_kv("kakeya.synth.seed", static_cast<uint64_t>(o.seed));
  w.add_kv("kakeya.synth.shape", s.name);
  w.add_kv("kakeya.synth.vocab", vocab.origin);

  auto pool = std::make_shared<ThreadPool>(o.n_threads);
  uint64_t tensor_id = 0;
  const uint64_t seed = o.seed;
  auto matrix = [&](const std::string& name, TensorRole role, int64_t layer, int64_t n_in, int64_t n_out) -> Status {
    KAKEYA_ASSIGN_OR_RETURN(const GgmlType type, tensor_type(role, layer, n_in));
    const uint64_t id = tensor_id++;
    w.add_tensor(name, type, {n_in, n_out},
                 [pool, type, id, seed, n_in, n_out](uint8_t* dst, size_t) -> Status {
                   const size_t rb = ggml_row_bytes(type, n_in);
                   std::vector<std::vector<float>> bufs(static_cast<size_t>(pool->n_threads()),
                                                        std::vector<float>(static_cast<size_t>(n_in)));
                   pool->parallel_ranges(static_cast<size_t>(n_out), 16,
                                         [&](size_t a, size_t b, int thread) {
                     float* x = bufs[static_cast<size_t>(thread)].data();
                     for (size_t r = a; r < b; ++r) {
                       normal_row(seed, id, r, x, n_in);
                       for (int64_t i = 0; i < n_in; ++i) x[i] *= 0.02f;
                       (void)convert_row(type, x, dst + r * rb, n_in);  // a storage type: cannot fail
                     }
                   });
                   return ok_status();
                 });
    return ok_status();
  };
  auto norm = [&](const std::string& name, int64_t n) {
    const uint64_t id = tensor_id++;
    w.add_tensor(name, GgmlType::F32, {n}, [id, seed, n](uint8_t* dst, size_t) -> Status {
      std::vector<float> x(static_cast<size_t>(n));
      normal_row(seed, id, 0, x.data(), n);
      for (float& v : x) v = 1.0f + 0.1f * v;
      std::memcpy(dst, x.data(), x.size() * sizeof(float));
      return ok_status();
    });
  };
  KAKEYA_TRY(matrix("token_embd.weight", TensorRole::kTokenEmbd, 0, s.n_embd, s.n_vocab));
  for (int64_t il = 0; il < s.n_layer; ++il) {
    const std::string b = "blk." + std::to_string(il) + ".";
    norm(b + "attn_norm.weight", s.n_embd);
    KAKEYA_TRY(matrix(b + "attn_q.weight", TensorRole::kAttnQ, il, s.n_embd, s.n_head * hd));
    KAKEYA_TRY(matrix(b + "attn_k.weight", TensorRole::kAttnK, il, s.n_embd, s.n_head_kv * hd));
    KAKEYA_TRY(matrix(b + "attn_v.weight", TensorRole::kAttnV, il, s.n_embd, s.n_head_kv * hd));
    KAKEYA_TRY(matrix(b + "attn_output.weight", TensorRole::kAttnOutput, il, s.n_head * hd, s.n_embd));
    norm(b + "ffn_norm.weight", s.n_embd);
    KAKEYA_TRY(matrix(b + "ffn_gate.weight", TensorRole::kFfnGate, il, s.n_embd, s.n_ff));
    KAKEYA_TRY(matrix(b + "ffn_up.weight", TensorRole::kFfnUp, il, s.n_embd, s.n_ff));
    KAKEYA_TRY(matrix(b + "ffn_down.weight", TensorRole::kFfnDown, il, s.n_ff, s.n_embd));
  }
  norm("output_norm.weight", s.n_embd);
  KAKEYA_TRY(matrix("output.weight", TensorRole::kOutput, 0, s.n_embd, s.n_vocab));
  return w.write(path);
}

}  // namespace kakeya::engine
