#include "engine/kv_cache.h"

#include <algorithm>
#include <string>

namespace kakeya::engine {

KvVisibleRanges kv_visible_ranges(const KvSlots& slots, int32_t qpos) {
  const int32_t* p = slots.positions;
  const int32_t* end = p + slots.n_slots;
  KvVisibleRanges r;
  r.c = static_cast<size_t>(std::upper_bound(p, end, qpos) - p);
  if (slots.window <= 0) return r;
  const int32_t lo = qpos - slots.window;  // visible: position > lo
  r.b = static_cast<size_t>(std::upper_bound(p, p + r.c, lo) - p);
  r.a = std::min(r.b, static_cast<size_t>(std::lower_bound(p, p + r.c, slots.sink) - p));
  return r;
}

// One storage group: its heads, its device storage and the host mirror of its slot positions.
struct KvLayer::Group {
  std::vector<size_t> heads;
  bool bounded = false;
  KvRowFormat format;
  std::unique_ptr<KvBuffer> storage;  // nullptr until the first append
  std::vector<int32_t> pos;           // [n] positions of the slots in use
};

KvLayer::KvLayer(Backend& backend, size_t n_head_kv, size_t head_dim, size_t max_tokens, KvLayerPolicy policy)
    : backend_(backend), n_head_kv_(n_head_kv), head_dim_(head_dim), max_tokens_(max_tokens), p_(std::move(policy)) {
  p_.exact_head.resize(n_head_kv, true);
  where_.resize(n_head_kv);
  Group exact, bounded;
  bounded.bounded = true;
  for (size_t h = 0; h < n_head_kv; ++h) (p_.exact_head[h] ? exact : bounded).heads.push_back(h);
  size_t n_exact = 0;
  for (Group* g : {&exact, &bounded}) {
    if (g->heads.empty()) continue;
    const size_t values = g->heads.size() * head_dim;
    g->format = KvRowFormat{values, p_.kv_bits, std::min(p_.quant_group, values)};
    const size_t gi = groups_.size();
    for (size_t i = 0; i < g->heads.size(); ++i) where_[g->heads[i]] = {gi, i};
    if (!g->bounded) n_exact = g->heads.size();
    groups_.push_back(std::move(*g));
  }
  if (n_exact == n_head_kv) {
    name_ = p_.kv_bits == 32 ? "full" : "exact";
  } else {
    name_ = "sink" + std::to_string(p_.sink) + "+window" + std::to_string(p_.window) + "+tail" +
            std::to_string(p_.tail);
    if (n_exact > 0) name_ += "/exact_heads=" + std::to_string(n_exact);
  }
  if (p_.kv_bits != 32) name_ += "/q" + std::to_string(p_.kv_bits);
}

KvLayer::~KvLayer() = default;

Status KvLayer::ensure(Group& g, size_t slots) {
  const size_t capacity = g.storage ? g.storage->capacity() : 0;
  if (slots <= capacity) return ok_status();
  size_t cap = slots;
  if (!g.bounded) {  // geometric growth, capped by the context
    cap = std::max<size_t>(64, capacity);
    while (cap < slots) cap *= 2;
    cap = std::max(std::min(cap, max_tokens_), slots);
  }
  KAKEYA_ASSIGN_OR_RETURN(std::unique_ptr<KvBuffer> grown, backend_.alloc_kv(g.format, cap));
  if (g.storage && !g.pos.empty()) backend_.kv_copy(*g.storage, 0, *grown, 0, g.pos.size());
  g.storage = std::move(grown);
  return ok_status();
}

Status KvLayer::append(const Tensor& k, const Tensor& v, std::span<const int32_t> positions) {
  const size_t n = positions.size();
  for (Group& g : groups_) KAKEYA_TRY(ensure(g, g.pos.size() + n));
  for (Group& g : groups_) {
    backend_.kv_store(*g.storage, g.pos.size(), k, v, positions, g.heads, head_dim_);
    g.pos.insert(g.pos.end(), positions.begin(), positions.end());
  }
  return ok_status();
}

void KvLayer::truncate(size_t n_tokens) {
  for (Group& g : groups_) {
    const auto keep = std::lower_bound(g.pos.begin(), g.pos.end(), static_cast<int32_t>(n_tokens));
    g.pos.erase(keep, g.pos.end());  // shrinking a vector of trivials neither copies nor frees
  }
}

void KvLayer::on_commit(size_t n_committed) {
  const int64_t lo = static_cast<int64_t>(n_committed) - p_.window - p_.tail;
  if (lo < p_.sink) return;
  if (std::none_of(groups_.begin(), groups_.end(), [](const Group& g) { return g.bounded; })) return;
  for (Group& g : groups_) {
    if (!g.bounded) continue;
    const auto begin = g.pos.begin();
    const size_t i0 = static_cast<size_t>(std::lower_bound(begin, g.pos.end(), p_.sink) - begin);
    const size_t i1 = static_cast<size_t>(std::upper_bound(begin, g.pos.end(), static_cast<int32_t>(lo)) - begin);
    if (i1 <= i0) continue;
    backend_.kv_copy(*g.storage, i1, *g.storage, i0, g.pos.size() - i1);
    g.pos.erase(g.pos.begin() + static_cast<ptrdiff_t>(i0), g.pos.begin() + static_cast<ptrdiff_t>(i1));
  }
  evicted_through_ = std::max(evicted_through_, lo);
}

size_t KvLayer::truncate_floor() const {
  if (evicted_through_ < 0) return 0;
  return static_cast<size_t>(evicted_through_ + p_.window);
}

void KvLayer::head_views(std::vector<KvHeadView>& out) const {
  out.assign(n_head_kv_, KvHeadView{});
  for (size_t h = 0; h < n_head_kv_; ++h) {
    const auto [gi, index] = where_[h];
    const Group& g = groups_[gi];
    out[h] = KvHeadView{g.storage.get(), index, g.pos.size(), g.bounded ? p_.sink : 0, g.bounded ? p_.window : 0};
  }
}

size_t KvLayer::resident_bytes() const {
  size_t b = 0;
  for (const Group& g : groups_) b += g.storage ? g.storage->bytes() : 0;
  return b;
}

size_t KvLayer::head_slots(size_t h) const { return groups_[where_[h].first].pos.size(); }

size_t KvLayer::kv_value_bytes() const {
  size_t b = 0;
  for (const Group& g : groups_) b += 2 * g.pos.size() * g.format.row_bytes();
  return b;
}

size_t KvLayer::kv_values() const {
  size_t b = 0;
  for (const Group& g : groups_) b += 2 * g.pos.size() * g.format.values;
  return b;
}

void KvLayer::read_head(size_t h, std::vector<int32_t>* positions, std::vector<float>* k,
                        std::vector<float>* v) const {
  const auto [gi, index] = where_[h];
  const Group& g = groups_[gi];
  const size_t n = g.pos.size();
  if (positions != nullptr) *positions = g.pos;
  if (k == nullptr && v == nullptr) return;
  std::vector<float> rk(k ? n * g.format.values : 0), rv(v ? n * g.format.values : 0);
  if (n > 0) {
    backend_.kv_read(*g.storage, 0, n, rk, rv, {});
    backend_.sync();
  }
  for (auto [rows, out] : {std::pair{&rk, k}, std::pair{&rv, v}}) {
    if (out == nullptr) continue;
    out->resize(n * head_dim_);
    for (size_t s = 0; s < n; ++s)
      std::copy_n(rows->data() + s * g.format.values + index * head_dim_, head_dim_, out->data() + s * head_dim_);
  }
}

KvCache::KvCache(Backend& backend, const KvCacheShape& shape) : backend_(backend), shape_(shape) {
  layers_.reserve(shape.n_layer);
  for (size_t il = 0; il < shape.n_layer; ++il) {
    KvLayerPolicy all_exact;
    all_exact.exact_head.assign(shape.n_head_kv, true);
    layers_.push_back(std::make_unique<KvLayer>(backend, shape.n_head_kv, shape.head_dim, shape.n_ctx, all_exact));
  }
}

KvCache::~KvCache() = default;

Status KvCache::commit(size_t n) {
  if (n > n_free()) {
    return make_error("context_overflow", "KV cache: " + std::to_string(n_tokens_) + " + " +
                                              std::to_string(n) + " tokens exceed n_ctx " +
                                              std::to_string(shape_.n_ctx));
  }
  n_tokens_ += n;
  for (auto& layer : layers_) layer->on_commit(n_tokens_);
  return ok_status();
}

void KvCache::truncate(size_t n) {
  if (n >= n_tokens_) return;
  for (auto& layer : layers_) layer->truncate(n);
  n_tokens_ = n;
}

Status KvCache::truncate_checked(size_t n) {
  const size_t floor = truncate_floor();
  if (n < floor && n < n_tokens_) {
    return make_error("evicted", "KV cache: truncate to " + std::to_string(n) +
                                     " tokens needs slots already evicted (floor " +
                                     std::to_string(floor) + ")");
  }
  truncate(n);
  return ok_status();
}

size_t KvCache::truncate_floor() const {
  size_t f = 0;
  for (const auto& layer : layers_) f = std::max(f, layer->truncate_floor());
  return f;
}

Status KvCache::set_layers(std::vector<std::unique_ptr<KvLayer>> layers) {
  if (n_tokens_ != 0) return make_error("bad_param", "KV cache: set_layers on a non-empty cache");
  if (layers.size() != shape_.n_layer) {
    return make_error("bad_param", "KV cache: " + std::to_string(layers.size()) +
                                       " layers given, model has " + std::to_string(shape_.n_layer));
  }
  layers_ = std::move(layers);
  return ok_status();
}

size_t KvCache::resident_bytes() const {
  size_t total = 0;
  for (const auto& layer : layers_) total += layer->resident_bytes();
  return total;
}

}  // namespace kakeya::engine
