#include "engine/backend.h"

#include "engine/cpu/cpu_backend.h"
#include "engine/kv_quant.h"
#if defined(KAKEYA_HAVE_VULKAN)
#include "engine/vulkan/vk_backend.h"
#endif

namespace kakeya::engine {

nlohmann::json to_json(const BackendInfo& info) {
  return {{"name", info.name},         {"device", info.device},   {"driver", info.driver},
          {"kernel_set", info.kernel_set}, {"threads", info.threads}, {"options", info.options}};
}

Tensor Tensor::row_range(int64_t first, int64_t n) const {
  Tensor t = *this;
  t.offset += static_cast<size_t>(first) * row_bytes();
  t.rows = n;
  return t;
}

size_t ModelWeights::bytes() const {
  size_t total = 0;
  for (const auto& b : buffers) total += b->bytes();
  return total;
}

size_t KvRowFormat::row_bytes() const {
  if (bits == 32) return values * sizeof(float);
  return AffineRowCodec(values, group, bits).bytes_per_row();
}

Result<std::shared_ptr<const ModelWeights>> Backend::weights(const LlamaModel& model) {
  std::erase_if(uploads_, [](const auto& entry) { return entry.second.expired(); });
  auto it = uploads_.find(model.id());
  if (it != uploads_.end()) return it->second.lock();
  KAKEYA_TRY(check_upload(model));
  auto w = std::make_shared<ModelWeights>();
  const LlamaWeights& src = model.weights();
  const GgufFile* file = &model.gguf();
  auto upload = [&](const WeightMatrix& m, WeightUse use, Tensor& out) -> Status {
    if (!m.present()) return ok_status();  // an optional weight the model lacks
    KAKEYA_ASSIGN_OR_RETURN(UploadedWeight u, upload_weight(m, use, file));
    out = u.tensor;
    w->buffers.push_back(std::move(u.buffer));
    return ok_status();
  };
  KAKEYA_TRY(upload(src.token_embd, WeightUse::kRows, w->token_embd));
  w->layers.resize(src.layers.size());
  for (size_t il = 0; il < src.layers.size(); ++il) {
    const LlamaLayerWeights& L = src.layers[il];
    ModelWeights::Layer& D = w->layers[il];
    KAKEYA_TRY(upload(L.attn_norm, WeightUse::kVector, D.attn_norm));
    KAKEYA_TRY(upload(L.wq, WeightUse::kMatmul, D.wq));
    KAKEYA_TRY(upload(L.wk, WeightUse::kMatmul, D.wk));
    KAKEYA_TRY(upload(L.wv, WeightUse::kMatmul, D.wv));
    KAKEYA_TRY(upload(L.wo, WeightUse::kMatmul, D.wo));
    KAKEYA_TRY(upload(L.ffn_norm, WeightUse::kVector, D.ffn_norm));
    KAKEYA_TRY(upload(L.w_gate, WeightUse::kMatmul, D.w_gate));
    KAKEYA_TRY(upload(L.w_up, WeightUse::kMatmul, D.w_up));
    KAKEYA_TRY(upload(L.w_down, WeightUse::kMatmul, D.w_down));
    const std::pair<const WeightMatrix*, Tensor*> biases[] = {{&L.bq, &D.bq},         {&L.bk, &D.bk},
                                                              {&L.bv, &D.bv},         {&L.bo, &D.bo},
                                                              {&L.b_gate, &D.b_gate}, {&L.b_up, &D.b_up},
                                                              {&L.b_down, &D.b_down}};
    for (const auto& [bias, dst] : biases) KAKEYA_TRY(upload(*bias, WeightUse::kVector, *dst));
  }
  KAKEYA_TRY(upload(src.rope_freqs, WeightUse::kVector, w->rope_freqs));
  KAKEYA_TRY(upload(src.output_norm, WeightUse::kVector, w->output_norm));
  KAKEYA_TRY(upload(src.output, WeightUse::kMatmul, w->output));
  w->layout = describe_weights(*w);
  uploads_[model.id()] = w;
  return std::shared_ptr<const ModelWeights>(std::move(w));
}

std::vector<std::string> known_backends() { return {"cpu", "vulkan"}; }

Result<std::unique_ptr<Backend>> open_backend(const std::string& spec, const BackendOptions& options) {
  if (spec == "cpu") return open_cpu_backend(options);
  if (spec == "vulkan" || spec.rfind("vulkan:", 0) == 0) {
    int index = -1;
    if (spec != "vulkan") {
      const std::string n = spec.substr(7);
      if (n.empty() || n.size() > 4 || n.find_first_not_of("0123456789") != std::string::npos) {
        return make_error("bad_param", "backend \"" + spec + "\": the device number must be 0-9999");
      }
      index = std::stoi(n);
    }
#if defined(KAKEYA_HAVE_VULKAN)
    return open_vulkan_backend(index, options);
#else
    (void)index;
    return make_error("backend_unavailable", "backend \"" + spec +
                                                 "\": this build has no Vulkan backend (built with "
                                                 "-DKAKEYA_VULKAN=OFF or without libvulkan/glslc)");
#endif
  }
  return make_error("bad_param", "backend \"" + spec + "\" is not cpu, vulkan or vulkan:N");
}

}  // namespace kakeya::engine
