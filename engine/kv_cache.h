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
};

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
  // Marks n more tokens as appended (every layer must have received them).
  // Errors: "context_overflow" when n_committed() + n > n_ctx.
  Status commit(size_t n);
  // Forgets tokens at positions >= n in every layer. O(1). No-op when n >= n_committed().
  void truncate(size_t n);
  void clear() { truncate(0); }
  // Sum over layers of KvLayer::resident_bytes().
  size_t resident_bytes() const;

 private:
  KvCacheShape shape_;
  std::vector<std::unique_ptr<KvLayer>> layers_;
  size_t n_tokens_ = 0;
};

}  // namespace kakeya::engine
