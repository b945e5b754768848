#include "engine/kv_policy_layer.h"

#include <algorithm>
#include <cstring>

namespace kakeya::engine {

PolicyKvLayer::PolicyKvLayer(size_t n_head_kv, size_t head_dim, size_t max_tokens,
                             KvLayerPolicy policy)
    : n_head_kv_(n_head_kv), head_dim_(head_dim), max_tokens_(max_tokens), p_(std::move(policy)) {
  p_.exact_head.resize(n_head_kv, false);
  where_.resize(n_head_kv);
  Group exact, bounded;
  exact.bounded = false;
  bounded.bounded = true;
  for (size_t h = 0; h < n_head_kv; ++h) (p_.exact_head[h] ? exact : bounded).heads.push_back(h);
  size_t n_exact = 0;
  for (Group* g : {&exact, &bounded}) {
    if (g->heads.empty()) continue;
    g->row = g->heads.size() * head_dim;
    if (p_.kv_bits == 32) {
      g->row_bytes = g->row * sizeof(float);
    } else {
      g->codec = AffineRowCodec(g->row, std::min(p_.quant_group, g->row), p_.kv_bits);
      g->row_bytes = g->codec.bytes_per_row();
    }
    const size_t gi = groups_.size();
    for (size_t i = 0; i < g->heads.size(); ++i) where_[g->heads[i]] = {gi, i};
    if (!g->bounded) n_exact = g->heads.size();
    groups_.push_back(std::move(*g));
  }
  name_ = "sink" + std::to_string(p_.sink) + "+window" + std::to_string(p_.window) + "+tail" +
          std::to_string(p_.tail);
  if (n_exact == n_head_kv) name_ = "exact";
  else if (n_exact > 0) name_ += "/exact_heads=" + std::to_string(n_exact);
  if (p_.kv_bits != 32) name_ += "/q" + std::to_string(p_.kv_bits);
}

void PolicyKvLayer::ensure(Group& g, size_t slots) {
  if (slots <= g.pos.capacity()) return;
  size_t cap = slots;
  if (!g.bounded) {  // geometric growth, capped by the context
    cap = std::max<size_t>(64, g.pos.capacity());
    while (cap < slots) cap *= 2;
    cap = std::max(std::min(cap, max_tokens_), slots);
  }
  std::vector<int32_t> pos;
  pos.reserve(cap);
  pos.assign(g.pos.begin(), g.pos.begin() + static_cast<ptrdiff_t>(g.n));
  std::vector<uint8_t> k, v;
  k.reserve(cap * g.row_bytes);
  v.reserve(cap * g.row_bytes);
  k.assign(g.k.begin(), g.k.begin() + static_cast<ptrdiff_t>(g.n * g.row_bytes));
  v.assign(g.v.begin(), g.v.begin() + static_cast<ptrdiff_t>(g.n * g.row_bytes));
  g.pos = std::move(pos);
  g.k = std::move(k);
  g.v = std::move(v);
}

void PolicyKvLayer::append(const int32_t* positions, const float* k, const float* v, size_t n) {
  const size_t stride = n_head_kv_ * head_dim_;
  for (Group& g : groups_) {
    ensure(g, g.n + n);
    g.pos.resize(g.n + n);
    g.k.resize((g.n + n) * g.row_bytes);
    g.v.resize((g.n + n) * g.row_bytes);
    gather_.resize(g.row);
    for (size_t t = 0; t < n; ++t) {
      g.pos[g.n + t] = positions[t];
      for (int kv = 0; kv < 2; ++kv) {
        const float* src = (kv == 0 ? k : v) + t * stride;
        for (size_t i = 0; i < g.heads.size(); ++i)
          std::memcpy(gather_.data() + i * head_dim_, src + g.heads[i] * head_dim_,
                      head_dim_ * sizeof(float));
        uint8_t* dst = (kv == 0 ? g.k : g.v).data() + (g.n + t) * g.row_bytes;
        if (p_.kv_bits == 32) {
          std::memcpy(dst, gather_.data(), g.row_bytes);
        } else {
          g.codec.encode(gather_.data(), dst);
        }
      }
    }
    g.n += n;
  }
}

void PolicyKvLayer::truncate(size_t n_tokens) {
  for (Group& g : groups_) {
    const auto end = g.pos.begin() + static_cast<ptrdiff_t>(g.n);
    const size_t keep = static_cast<size_t>(
        std::lower_bound(g.pos.begin(), end, static_cast<int32_t>(n_tokens)) - g.pos.begin());
    g.n = keep;
    // Sizes follow n (shrinking a vector of trivials neither copies nor frees).
    g.pos.resize(keep);
    g.k.resize(keep * g.row_bytes);
    g.v.resize(keep * g.row_bytes);
  }
}

void PolicyKvLayer::on_commit(size_t n_committed) {
  const int64_t lo = static_cast<int64_t>(n_committed) - p_.window - p_.tail;
  if (lo < p_.sink) return;
  if (std::none_of(groups_.begin(), groups_.end(), [](const Group& g) { return g.bounded; })) return;
  for (Group& g : groups_) {
    if (!g.bounded) continue;
    const auto begin = g.pos.begin();
    const auto end = begin + static_cast<ptrdiff_t>(g.n);
    const size_t i0 = static_cast<size_t>(std::lower_bound(begin, end, p_.sink) - begin);
    const size_t i1 = static_cast<size_t>(std::upper_bound(begin, end, static_cast<int32_t>(lo)) - begin);
    if (i1 <= i0) continue;
    const size_t moved = g.n - i1;
    std::memmove(g.pos.data() + i0, g.pos.data() + i1, moved * sizeof(int32_t));
    std::memmove(g.k.data() + i0 * g.row_bytes, g.k.data() + i1 * g.row_bytes, moved * g.row_bytes);
    std::memmove(g.v.data() + i0 * g.row_bytes, g.v.data() + i1 * g.row_bytes, moved * g.row_bytes);
    g.n -= i1 - i0;
    g.pos.resize(g.n);
    g.k.resize(g.n * g.row_bytes);
    g.v.resize(g.n * g.row_bytes);
  }
  evicted_through_ = std::max(evicted_through_, lo);
}

size_t PolicyKvLayer::truncate_floor() const {
  if (evicted_through_ < 0) return 0;
  return static_cast<size_t>(evicted_through_ + p_.window);
}

void PolicyKvLayer::head_views(size_t /*n_head_kv*/, size_t /*head_dim*/, std::vector<KvSlots>& out,
                               std::vector<float>& dequant) const {
  out.assign(n_head_kv_, KvSlots{});
  if (p_.kv_bits != 32) {
    size_t total = 0;
    for (const Group& g : groups_) total += 2 * g.n * g.row;
    dequant.resize(total);  // sized once: pointers below stay valid
  }
  size_t off = 0;
  for (const Group& g : groups_) {
    const float* kf;
    const float* vf;
    if (p_.kv_bits == 32) {
      kf = reinterpret_cast<const float*>(g.k.data());
      vf = reinterpret_cast<const float*>(g.v.data());
    } else {
      float* kd = dequant.data() + off;
      float* vd = kd + g.n * g.row;
      for (size_t s = 0; s < g.n; ++s) {
        g.codec.decode(g.k.data() + s * g.row_bytes, kd + s * g.row);
        g.codec.decode(g.v.data() + s * g.row_bytes, vd + s * g.row);
      }
      off += 2 * g.n * g.row;
      kf = kd;
      vf = vd;
    }
    for (size_t i = 0; i < g.heads.size(); ++i) {
      KvSlots& s = out[g.heads[i]];
      s.n_slots = g.n;
      s.row_stride = g.row;
      s.positions = g.pos.data();
      s.k = kf + i * head_dim_;
      s.v = vf + i * head_dim_;
      s.sink = g.bounded ? p_.sink : 0;
      s.window = g.bounded ? p_.window : 0;
    }
  }
}

size_t PolicyKvLayer::resident_bytes() const {
  size_t b = 0;
  for (const Group& g : groups_)
    b += g.pos.capacity() * sizeof(int32_t) + g.k.capacity() + g.v.capacity();
  return b;
}

size_t PolicyKvLayer::head_slots(size_t h) const { return groups_[where_[h].first].n; }

size_t PolicyKvLayer::kv_value_bytes() const {
  size_t b = 0;
  for (const Group& g : groups_) b += 2 * g.n * g.row_bytes;
  return b;
}

size_t PolicyKvLayer::kv_values() const {
  size_t b = 0;
  for (const Group& g : groups_) b += 2 * g.n * g.row;
  return b;
}

}  // namespace kakeya::engine
