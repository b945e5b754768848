#pragma once
// The KV cache: per-layer storage of attention keys and values.
//
// Designed for per-layer policies. Each layer owns a KvLayer; today the only policy is
// `full` (FullKvLayer: every position kept, f32). Later policies (sink+window, exact layers,
// quantized storage) subclass KvLayer. Attention reads a layer only through KvLayer::view(),
// a list of slots, each slot being (original RoPE position, k, v) — so an evicting policy keeps
// the positions its kept tokens were rotated with, and layers may hold different slot sets.
//
// Layout of one slot: k and v are [n_head_kv][head_dim] f32, contiguous; slots are stored
// one after another, so the slot s of head h starts at k + s*row_stride + h*head_dim.
//
// Sequence bookkeeping: n_committed() is the number of tokens of the sequence appended so far
// (positions 0..n_committed()-1). truncate(n) forgets positions >= n without copying (no memory is
// released or touched): rejecting speculative drafts is a length reset.
//
// resident_bytes() is MEASURED from the storage each layer actually holds (allocated capacity),
// never computed from a formula over n_ctx.
//
// Bounded policies (engine/kv_policy_layer.h): attention reads a layer per KV head through
// KvLayer::head_views(), so heads of one layer may hold different slot sets (exact heads keep
// every position, bounded heads sink + window). A view carries the visibility rule of its
// slots (kv_visible_ranges): a bounded view shows a query at position q only the slots with
// position < sink or q - window < position <= q, exactly as a full-sequence attention mask
// "j < sink || j > i - window" would. Eviction happens only in KvCache::commit
// (KvLayer::on_commit); truncate() never evicts and never copies.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "bridge/result.h"

namespace kakeya::engine {

// A read-only view of one layer's slots. Valid until the layer is next modified.
struct KvSlots {
  size_t n_slots = 0;
  size_t row_stride = 0;            // floats between consecutive slots (n_head_kv * head_dim)
  const int32_t* positions = nullptr;  // [n_slots] original RoPE positions, ascending
  const float* k = nullptr;         // [n_slots][n_head_kv][head_dim]
  const float* v = nullptr;         // [n_slots][n_head_kv][head_dim]
  // Visibility rule (see kv_visible_ranges): window == 0 means every slot at position <= q.
  int32_t sink = 0;
  int32_t window = 0;
};

// Slots visible to a query at position qpos: [0, a) and [b, c) (indices into the view;
// positions ascending). Unbounded views give a = 0, b = 0, c = #slots with position <= qpos.
struct KvVisibleRanges {
  size_t a = 0, b = 0, c = 0;
};
KvVisibleRanges kv_visible_ranges(const KvSlots& slots, int32_t qpos);

class KvLayer {
 public:
  virtual ~KvLayer() = default;
  // Appends n tokens: k, v are [n][n_head_kv][head_dim], positions [n] (must continue the
  // sequence). REQUIRES: room for them (KvCache checks the context length).
  virtual void append(const int32_t* positions, const float* k, const float* v, size_t n) = 0;
  // Forgets every slot whose position is >= n_tokens. O(1) for tail slots.
  virtual void truncate(size_t n_tokens) = 0;
  virtual KvSlots view() const = 0;
  // Bytes of storage held right now (allocated capacity of every buffer).
  virtual size_t resident_bytes() const = 0;
  // Short policy name for reports ("full").
  virtual const char* policy() const = 0;

  // One view per KV head (out is resized to n_head_kv): head h's k/v rows start at
  // out[h].k + s * out[h].row_stride. `dequant` is caller scratch a quantized layer may
  // dequantize into (views are then valid until `dequant` is next modified). Default: slices
  // of view() (head h at offset h * head_dim, no window).
  virtual void head_views(size_t n_head_kv, size_t head_dim, std::vector<KvSlots>& out,
                          std::vector<float>& dequant) const;
  // Called by KvCache::commit with the new committed length; evicting policies drop slots
  // here (never in append/truncate). Default: nothing.
  virtual void on_commit(size_t /*n_committed*/) {}
  // Smallest n for which truncate(n) keeps every slot a query at position n needs (slots
  // evicted so far cannot come back). Default 0 (nothing is ever evicted).
  virtual size_t truncate_floor() const { return 0; }
};

// Policy `full`: every position kept, f32. Storage grows geometrically up to max_tokens.
class FullKvLayer final : public KvLayer {
 public:
  FullKvLayer(size_t n_head_kv, size_t head_dim, size_t max_tokens);
  void append(const int32_t* positions, const float* k, const float* v, size_t n) override;
  void truncate(size_t n_tokens) override;
  KvSlots view() const override;
  size_t resident_bytes() const override;
  const char* policy() const override { return "full"; }

 private:
  void reserve(size_t n_slots);
  size_t row_stride_;
  size_t max_tokens_;
  size_t n_slots_ = 0;
  std::vector<int32_t> positions_;
  std::vector<float> k_;
  std::vector<float> v_;
};

struct KvCacheShape {
  size_t n_layer = 0;
  size_t n_head_kv = 0;
  size_t head_dim = 0;
  size_t n_ctx = 0;  // maximum number of tokens in the sequence
};

class KvCache {
 public:
  // A cache with the `full` policy on every layer.
  explicit KvCache(const KvCacheShape& shape);
  // A cache with caller-supplied layers (one per layer of the model).
  KvCache(const KvCacheShape& shape, std::vector<std::unique_ptr<KvLayer>> layers);

  const KvCacheShape& shape() const { return shape_; }
  size_t n_layer() const { return layers_.size(); }
  KvLayer& layer(size_t il) { return *layers_[il]; }
  const KvLayer& layer(size_t il) const { return *layers_[il]; }

  size_t n_committed() const { return n_tokens_; }
  // Tokens that still fit: n_ctx - n_committed().
  size_t n_free() const { return shape_.n_ctx - n_tokens_; }
  // Marks n more tokens as appended (every layer must have received them), then lets every
  // layer evict (KvLayer::on_commit). Errors: "context_overflow" when n_committed() + n > n_ctx.
  Status commit(size_t n);
  // Forgets tokens at positions >= n in every layer. O(1) (a length reset; nothing is copied
  // or evicted). No-op when n >= n_committed(). REQUIRES: n >= truncate_floor() (a bounded
  // layer keeps `tail` positions beyond its window for this; see truncate_checked).
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
  KvCacheShape shape_;
  std::vector<std::unique_ptr<KvLayer>> layers_;
  size_t n_tokens_ = 0;
};

}  // namespace kakeya::engine
