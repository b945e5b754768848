#pragma once
// The KV cache: per-layer attention keys and values, stored on the backend, with the policy's
// bookkeeping (positions, visibility, eviction plan) on the host.
//
// A layer (KvLayer) implements one layer of a KV policy (engine/kv_policy.h): its KV heads are
// split into at most two storage groups, the exact heads (every position kept) and the bounded
// heads (sink + window + a speculative tail). Each group is one backend KvBuffer of slots
// (position, K row, V row), rows of (heads in the group × head_dim) values in f32 or affine 8/4-bit
// codes (engine/kv_quant.h), written by the backend's kv_store op (which quantizes) and
// compacted or grown by its kv_copy op. The host keeps a mirror of each group's positions, so
// every decision (how many slots, which to evict, what a query sees) is made without reading the
// device. Each slot keeps the original RoPE position its key was rotated with.
//
// Semantics:
//   append      adds slots to every group (no eviction, so a batch's queries see their windows);
//   on_commit   the ONLY place that evicts: KvCache::commit(n) lets a bounded group drop positions
//               p with sink <= p <= n - window - tail (one row move of at most sink + window +
//               tail rows);
//   truncate(n) forgets slots at positions >= n: a length reset, O(log slots), nothing copied or
//               freed — rejecting speculative drafts costs nothing;
//   truncate_floor() = evicted_through + window: truncating below it would need evicted slots.
// Storage grows geometrically for exact groups (capacity doubles from 64 slots, capped at the
// context length) and exact-fit for bounded groups (capacity = the most slots ever held, at most
// sink + window + tail - 1 + the largest batch). Nothing is allocated before the first token.
//
// resident_bytes() is MEASURED: the bytes the backend reports for the storage it allocated
// (KvBuffer::bytes), never computed from a formula over n_ctx.
//
// Visibility (kv_visible_ranges): a bounded head shows a query at position q only the slots with
// position < sink or q - window < position <= q, exactly as a full-sequence attention mask
// "j < sink || j > i - window" would; an exact head shows every slot at position <= q.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "bridge/result.h"
#include "engine/backend.h"

namespace kakeya::engine {

// A host view of one KV head's slots (the CPU backend's attention and the scalar references).
struct KvSlots {
  size_t n_slots = 0;
  size_t row_stride = 0;               // floats between consecutive slots
  const int32_t* positions = nullptr;  // [n_slots] original RoPE positions, ascending
  const float* k = nullptr;            // slot s of this head at k + s * row_stride, head_dim values
  const float* v = nullptr;
  int32_t sink = 0;
  int32_t window = 0;  // 0: every slot at position <= the query's
};

// Slots visible to a query at position qpos: [0, a) and [b, c) (indices into the view; positions
// ascending). Unbounded views give a = 0, b = 0, c = #slots with position <= qpos.
struct KvVisibleRanges {
  size_t a = 0, b = 0, c = 0;
};
KvVisibleRanges kv_visible_ranges(const KvSlots& slots, int32_t qpos);

struct KvCacheShape {
  size_t n_layer = 0;
  size_t n_head_kv = 0;
  size_t head_dim = 0;
  size_t n_ctx = 0;  // maximum number of tokens in the sequence
};

// One layer's policy (KvPolicy resolved for a layer, engine/kv_policy.h).
struct KvLayerPolicy {
  int32_t sink = 4;
  int32_t window = 64;           // used by bounded heads only (> 0)
  int32_t tail = 32;
  std::vector<bool> exact_head;  // [n_head_kv]; every head exact = no eviction
  int kv_bits = 32;              // 32, 8, 4
  size_t quant_group = 64;
};

class KvLayer {
 public:
  // REQUIRES: backend outlives the layer. Allocates nothing yet.
  KvLayer(Backend& backend, size_t n_head_kv, size_t head_dim, size_t max_tokens, KvLayerPolicy policy);
  ~KvLayer();
  KvLayer(const KvLayer&) = delete;
  KvLayer& operator=(const KvLayer&) = delete;

  // Appends n tokens: k, v [n][n_head_kv · head_dim] f32 (keys after RoPE), positions [n]
  // continuing the sequence. REQUIRES: room for them (KvCache checks the context length).
  // Errors: the backend's allocation errors (nothing is appended then).
  Status append(const Tensor& k, const Tensor& v, std::span<const int32_t> positions);
  // Forgets every slot whose position is >= n_tokens. O(log slots).
  void truncate(size_t n_tokens);
  // Called by KvCache::commit with the new committed length; bounded groups evict here.
  void on_commit(size_t n_committed);
  // Smallest n for which truncate(n) keeps every slot a query at position n needs.
  size_t truncate_floor() const;
  // What attention reads: one view per KV head (out is resized to n_head_kv).
  void head_views(std::vector<KvHeadView>& out) const;
  // Bytes of storage held right now, as the backend measured it (every group's KvBuffer).
  size_t resident_bytes() const;
  // Policy name for reports: "full", "exact/q8", "sink4+window64+tail32", ".../exact_heads=2".
  const std::string& policy() const { return name_; }

  // Slots held right now by KV head h.
  size_t head_slots(size_t h) const;
  // Bytes of K and V rows in use (codes + scales, or f32), and the values they hold.
  size_t kv_value_bytes() const;
  size_t kv_values() const;
  // Readback (syncs the backend) of every slot of KV head h: positions [n], k and v
  // [n][head_dim] f32 (decoded when the storage is quantized). Any pointer may be null.
  void read_head(size_t h, std::vector<int32_t>* positions, std::vector<float>* k, std::vector<float>* v) const;

 private:
  struct Group;
  Status ensure(Group& g, size_t slots);

  Backend& backend_;
  size_t n_head_kv_, head_dim_, max_tokens_;
  KvLayerPolicy p_;
  std::vector<Group> groups_;
  std::vector<std::pair<size_t, size_t>> where_;  // head -> (group, index within group)
  int64_t evicted_through_ = -1;                  // bounded groups hold no position in [sink, this]
  std::string name_;
};

class KvCache {
 public:
  // A cache with the `full` policy on every layer, storage on `backend` (which must outlive it).
  KvCache(Backend& backend, const KvCacheShape& shape);
  ~KvCache();

  const KvCacheShape& shape() const { return shape_; }
  Backend& backend() const { return backend_; }
  size_t n_layer() const { return layers_.size(); }
  KvLayer& layer(size_t il) { return *layers_[il]; }
  const KvLayer& layer(size_t il) const { return *layers_[il]; }

  size_t n_committed() const { return n_tokens_; }
  // Tokens that still fit: n_ctx - n_committed().
  size_t n_free() const { return shape_.n_ctx - n_tokens_; }
  // Marks n more tokens as appended (every layer must have received them), then lets every
  // layer evict (KvLayer::on_commit). Errors: "context_overflow" when n_committed() + n > n_ctx.
  Status commit(size_t n);
  // Forgets tokens at positions >= n in every layer. O(1) in the sequence length (a length
  // reset; nothing is copied or evicted). No-op when n >= n_committed(). REQUIRES: n >=
  // truncate_floor() (a bounded layer keeps `tail` positions beyond its window for this).
  void truncate(size_t n);
  // truncate(n), or the error "evicted" when n < truncate_floor() (nothing is changed).
  Status truncate_checked(size_t n);
  // Max over layers of KvLayer::truncate_floor().
  size_t truncate_floor() const;
  // Replaces every layer (one per model layer). REQUIRES: n_committed() == 0.
  // Errors: "bad_param" when the cache is not empty or the layer count differs.
  Status set_layers(std::vector<std::unique_ptr<KvLayer>> layers);
  void clear() { truncate(0); }
  // Sum over layers of KvLayer::resident_bytes().
  size_t resident_bytes() const;

 private:
  Backend& backend_;
  KvCacheShape shape_;
  std::vector<std::unique_ptr<KvLayer>> layers_;
  size_t n_tokens_ = 0;
};

}  // namespace kakeya::engine
