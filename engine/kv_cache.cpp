#include "engine/kv_cache.h"

#include <algorithm>
#include <cstring>
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

void KvLayer::head_views(size_t n_head_kv, size_t head_dim, std::vector<KvSlots>& out,
                         std::vector<float>& /*dequant*/) const {
  const KvSlots all = view();
  out.assign(n_head_kv, all);
  for (size_t h = 0; h < n_head_kv; ++h) {
    if (all.k != nullptr) out[h].k = all.k + h * head_dim;
    if (all.v != nullptr) out[h].v = all.v + h * head_dim;
  }
}

FullKvLayer::FullKvLayer(size_t n_head_kv, size_t head_dim, size_t max_tokens)
    : row_stride_(n_head_kv * head_dim), max_tokens_(max_tokens) {}

void FullKvLayer::reserve(size_t n_slots) {
  if (n_slots <= positions_.capacity()) return;
  size_t cap = std::max<size_t>(64, positions_.capacity());
  while (cap < n_slots) cap *= 2;
  cap = std::min(std::max(cap, n_slots), std::max(max_tokens_, n_slots));
  positions_.reserve(cap);
  k_.reserve(cap * row_stride_);
  v_.reserve(cap * row_stride_);
}

void FullKvLayer::append(const int32_t* positions, const float* k, const float* v, size_t n) {
  reserve(n_slots_ + n);
  // Storage vectors always have size() == n_slots_ (truncate resizes down, O(1) for trivials).
  positions_.insert(positions_.end(), positions, positions + n);
  k_.insert(k_.end(), k, k + n * row_stride_);
  v_.insert(v_.end(), v, v + n * row_stride_);
  n_slots_ += n;
}

void FullKvLayer::truncate(size_t n_tokens) {
  // Positions are ascending: drop the tail whose positions are >= n_tokens.
  size_t keep = n_slots_;
  while (keep > 0 && static_cast<size_t>(positions_[keep - 1]) >= n_tokens) --keep;
  n_slots_ = keep;
  positions_.resize(keep);
  k_.resize(keep * row_stride_);
  v_.resize(keep * row_stride_);
}

KvSlots FullKvLayer::view() const {
  return KvSlots{n_slots_, row_stride_, positions_.data(), k_.data(), v_.data()};
}

size_t FullKvLayer::resident_bytes() const {
  return positions_.capacity() * sizeof(int32_t) + (k_.capacity() + v_.capacity()) * sizeof(float);
}

KvCache::KvCache(const KvCacheShape& shape) : shape_(shape) {
  layers_.reserve(shape.n_layer);
  for (size_t il = 0; il < shape.n_layer; ++il)
    layers_.push_back(std::make_unique<FullKvLayer>(shape.n_head_kv, shape.head_dim, shape.n_ctx));
}

KvCache::KvCache(const KvCacheShape& shape, std::vector<std::unique_ptr<KvLayer>> layers)
    : shape_(shape), layers_(std::move(layers)) {}

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
