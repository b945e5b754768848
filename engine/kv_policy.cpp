#include "engine/kv_policy.h"

#include <algorithm>
#include <fstream>
#include <sstream>


namespace kakeya::engine {

bool KvPolicy::head_exact(int layer, int head) const {
  if (!bounded()) return true;
  if (std::find(exact_layers.begin(), exact_layers.end(), layer) != exact_layers.end()) return true;
  return std::find(exact_heads.begin(), exact_heads.end(), std::make_pair(layer, head)) !=
         exact_heads.end();
}

std::string KvPolicy::describe() const {
  std::ostringstream o;
  if (!bounded()) {
    o << "full";
  } else {
    o << "sink" << sink << "+window" << window << "+tail" << tail;
    if (!exact_layers.empty()) {
      o << " exact_layers=";
      for (size_t i = 0; i < exact_layers.size(); ++i) o << (i ? "," : "") << exact_layers[i];
    }
    if (!exact_heads.empty()) {
      o << " exact_heads=";
      for (size_t i = 0; i < exact_heads.size(); ++i)
        o << (i ? "," : "") << "L" << exact_heads[i].first << "H" << exact_heads[i].second;
    }
  }
  if (kv_bits != 32) o << " kv_bits=" << kv_bits;
  return o.str();
}

Status check_kv_policy(const KvPolicy& p, const KvCacheShape& shape) {
  auto bad = [](const std::string& m) { return make_error("bad_param", "KV policy: " + m); };
  if (p.sink < 0) return bad("sink " + std::to_string(p.sink) + " < 0");
  if (p.window < 0) return bad("window " + std::to_string(p.window) + " < 0");
  if (p.tail < 0) return bad("tail " + std::to_string(p.tail) + " < 0");
  if (p.kv_bits != 32 && p.kv_bits != 8 && p.kv_bits != 4)
    return bad("kv_bits " + std::to_string(p.kv_bits) + " is not 32, 8 or 4");
  if (p.quant_group == 0) return bad("quant_group 0");
  if (shape.n_layer == 0) return ok_status();
  for (int l : p.exact_layers) {
    if (l < 0 || static_cast<size_t>(l) >= shape.n_layer)
      return bad("exact_layers entry " + std::to_string(l) + " outside [0, " +
                 std::to_string(shape.n_layer) + ")");
  }
  for (auto [l, h] : p.exact_heads) {
    if (l < 0 || static_cast<size_t>(l) >= shape.n_layer || h < 0 ||
        static_cast<size_t>(h) >= shape.n_head_kv)
      return bad("exact_heads entry [" + std::to_string(l) + ", " + std::to_string(h) +
                 "] outside the model's " + std::to_string(shape.n_layer) + " layers x " +
                 std::to_string(shape.n_head_kv) + " KV heads");
  }
  return ok_status();
}

Result<KvPolicy> kv_policy_from_json(const nlohmann::json& j) {
  auto bad = [](const std::string& m) { return make_error("bad_param", "KV policy file: " + m); };
  if (!j.is_object()) return bad("not a JSON object");
  static const std::vector<std::string> known = {"sink", "window", "tail", "exact_layers",
                                                 "exact_heads", "kv_bits", "quant_group",
                                                 "comment", "ranking"};
  for (auto it = j.begin(); it != j.end(); ++it)
    if (std::find(known.begin(), known.end(), it.key()) == known.end())
      return bad("unknown field \"" + it.key() + "\"");
  KvPolicy p;
  auto get_int = [&](const char* key, auto& out) -> Status {
    if (!j.contains(key)) return ok_status();
    if (!j[key].is_number_integer()) return bad(std::string(key) + " is not an integer");
    out = j[key].get<std::remove_reference_t<decltype(out)>>();
    return ok_status();
  };
  KAKEYA_TRY(get_int("sink", p.sink));
  KAKEYA_TRY(get_int("window", p.window));
  KAKEYA_TRY(get_int("tail", p.tail));
  KAKEYA_TRY(get_int("kv_bits", p.kv_bits));
  KAKEYA_TRY(get_int("quant_group", p.quant_group));
  if (j.contains("exact_layers")) {
    if (!j["exact_layers"].is_array()) return bad("exact_layers is not an array");
    for (const auto& e : j["exact_layers"]) {
      if (!e.is_number_integer()) return bad("exact_layers entry is not an integer");
      p.exact_layers.push_back(e.get<int>());
    }
  }
  if (j.contains("exact_heads")) {
    if (!j["exact_heads"].is_array()) return bad("exact_heads is not an array");
    for (const auto& e : j["exact_heads"]) {
      if (!e.is_array() || e.size() != 2 || !e[0].is_number_integer() || !e[1].is_number_integer())
        return bad("exact_heads entry " + e.dump() + " is not [layer, head]");
      p.exact_heads.emplace_back(e[0].get<int>(), e[1].get<int>());
    }
  }
  KAKEYA_TRY(check_kv_policy(p, KvCacheShape{}));
  return p;
}

nlohmann::json to_json(const KvPolicy& p) {
  nlohmann::json heads = nlohmann::json::array();
  for (auto [l, h] : p.exact_heads) heads.push_back({l, h});
  return {{"sink", p.sink},       {"window", p.window},       {"tail", p.tail},
          {"exact_layers", p.exact_layers}, {"exact_heads", heads}, {"kv_bits", p.kv_bits},
          {"quant_group", p.quant_group}};
}

Result<KvPolicy> load_kv_policy(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) return make_error("io", "KV policy file " + path.string() + ": cannot be read");
  nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  if (j.is_discarded()) return make_error("parse_error", "KV policy file " + path.string() + ": not valid JSON");
  return kv_policy_from_json(j);
}

Status save_kv_policy(const std::filesystem::path& path, const KvPolicy& p) {
  std::ofstream out(path);
  out << to_json(p).dump(2) << "\n";
  if (!out) return make_error("io", "KV policy file " + path.string() + ": cannot be written");
  return ok_status();
}

Result<std::vector<std::unique_ptr<KvLayer>>> make_kv_layers(const KvPolicy& p, const KvCacheShape& shape,
                                                             Backend& backend) {
  KAKEYA_TRY(check_kv_policy(p, shape));
  std::vector<std::unique_ptr<KvLayer>> layers;
  for (size_t il = 0; il < shape.n_layer; ++il) {
    KvLayerPolicy lp;
    lp.sink = p.sink;
    lp.window = p.window;
    lp.tail = p.tail;
    lp.kv_bits = p.kv_bits;
    lp.quant_group = p.quant_group;
    for (size_t h = 0; h < shape.n_head_kv; ++h)
      lp.exact_head.push_back(p.head_exact(static_cast<int>(il), static_cast<int>(h)));
    layers.push_back(std::make_unique<KvLayer>(backend, shape.n_head_kv, shape.head_dim, shape.n_ctx, std::move(lp)));
  }
  return layers;
}

Status apply_kv_policy(KvCache& cache, const KvPolicy& p) {
  KAKEYA_ASSIGN_OR_RETURN(auto layers, make_kv_layers(p, cache.shape(), cache.backend()));
  return cache.set_layers(std::move(layers));
}

size_t kv_policy_bound_bytes(const KvPolicy& p, const KvCacheShape& shape, size_t n_tokens,
                             size_t n_batch) {
  size_t total = 0;
  const size_t bounded_slots =
      std::min(n_tokens, static_cast<size_t>(p.sink + p.window + p.tail) - 1 + n_batch);
  const size_t exact_slots = std::min(shape.n_ctx, std::max<size_t>(64, 2 * n_tokens));
  for (size_t il = 0; il < shape.n_layer; ++il) {
    size_t n_exact = 0;
    for (size_t h = 0; h < shape.n_head_kv; ++h)
      n_exact += p.head_exact(static_cast<int>(il), static_cast<int>(h)) ? 1 : 0;
    for (int grp = 0; grp < 2; ++grp) {
      const size_t heads = grp == 0 ? n_exact : shape.n_head_kv - n_exact;
      if (heads == 0) continue;
      const size_t row = heads * shape.head_dim;
      size_t row_bytes = row * sizeof(float);
      if (p.kv_bits != 32) {
        const size_t group = std::min(p.quant_group, row);
        row_bytes = (p.kv_bits == 8 ? row : (row + 1) / 2) + ((row + group - 1) / group) * 8;
      }
      const size_t slots = grp == 0 ? exact_slots : bounded_slots;
      total += slots * (sizeof(int32_t) + 2 * row_bytes);
    }
  }
  return total;
}

}  // namespace kakeya::engine
