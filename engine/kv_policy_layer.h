#pragma once
// PolicyKvLayer: one layer of a bounded and/or quantized KV cache (policy: engine/kv_policy.h).
//
// The layer's KV heads are split into at most two storage groups: the exact heads (every
// position kept) and the bounded heads (sink + window + tail). Each group stores its slots with
// rows of (heads in group × head_dim) values, f32 or affine-quantized (dequantized on read into
// the caller's scratch by head_views()).
//
// Semantics:
//   append  — adds slots to every group (no eviction, so a batch's queries see their windows);
//   on_commit(n) — the ONLY place that evicts: a bounded group drops positions p with
//             sink <= p <= n - window - tail (a memmove of at most sink + window + tail rows);
//   truncate(n) — length reset of every group, O(log slots), nothing copied or freed;
//   truncate_floor() — evicted_through + window: truncating below it would need evicted slots.
// Storage is exact-fit for bounded groups (capacity = the most slots ever held, which is at most
// sink + window + tail - 1 + the largest batch) and geometric for exact groups; resident_bytes()
// is the allocated capacity of every buffer.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/kv_cache.h"
#include "engine/kv_quant.h"

namespace kakeya::engine {

struct KvLayerPolicy {
  int32_t sink = 4;
  int32_t window = 64;  // > 0
  int32_t tail = 32;
  std::vector<bool> exact_head;  // [n_head_kv]
  int kv_bits = 32;              // 32, 8, 4
  size_t quant_group = 64;
};

class PolicyKvLayer final : public KvLayer {
 public:
  PolicyKvLayer(size_t n_head_kv, size_t head_dim, size_t max_tokens, KvLayerPolicy policy);

  void append(const int32_t* positions, const float* k, const float* v, size_t n) override;
  void truncate(size_t n_tokens) override;
  // Not meaningful for split storage: an empty view. Use head_views().
  KvSlots view() const override { return KvSlots{}; }
  void head_views(size_t n_head_kv, size_t head_dim, std::vector<KvSlots>& out,
                  std::vector<float>& dequant) const override;
  void on_commit(size_t n_committed) override;
  size_t truncate_floor() const override;
  size_t resident_bytes() const override;
  const char* policy() const override { return name_.c_str(); }

  // Slots held right now by kv head h (tests, reports).
  size_t head_slots(size_t h) const;
  // Bytes of K and V storage only (codes + scales, or f32), and the values they hold.
  size_t kv_value_bytes() const;
  size_t kv_values() const;

 private:
  struct Group {
    std::vector<size_t> heads;
    bool bounded = false;
    size_t row = 0;        // floats per slot row
    size_t row_bytes = 0;  // stored bytes per slot row (k or v)
    size_t n = 0;          // slots held
    std::vector<int32_t> pos;
    std::vector<uint8_t> k, v;  // [capacity][row_bytes]
    AffineRowCodec codec;
  };
  void ensure(Group& g, size_t slots);

  size_t n_head_kv_, head_dim_, max_tokens_;
  KvLayerPolicy p_;
  std::vector<Group> groups_;
  std::vector<std::pair<size_t, size_t>> where_;  // head -> (group, index within group)
  int64_t evicted_through_ = -1;                   // bounded groups hold no position in [sink, this]
  std::string name_;
  std::vector<float> gather_;                      // append: rows of one group
};

}  // namespace kakeya::engine
