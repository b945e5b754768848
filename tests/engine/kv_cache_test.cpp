#include "engine/kv_cache.h"

#include <gtest/gtest.h>

#include <numeric>
#include <vector>

namespace kakeya::engine {
namespace {

// k/v rows whose values encode (position, element) so reads can be checked exactly.
std::vector<float> rows(int32_t pos0, size_t n, size_t stride, float tag) {
  std::vector<float> out(n * stride);
  for (size_t i = 0; i < n; ++i)
    for (size_t j = 0; j < stride; ++j) out[i * stride + j] = tag + (pos0 + i) * 100.0f + j;
  return out;
}

void append(KvCache& kv, int32_t pos0, size_t n) {
  const size_t stride = kv.shape().n_head_kv * kv.shape().head_dim;
  std::vector<int32_t> pos(n);
  std::iota(pos.begin(), pos.end(), pos0);
  const auto k = rows(pos0, n, stride, 0.25f);
  const auto v = rows(pos0, n, stride, 0.5f);
  for (size_t il = 0; il < kv.n_layer(); ++il) kv.layer(il).append(pos.data(), k.data(), v.data(), n);
  ASSERT_TRUE(kv.commit(n).ok());
}

TEST(KvCache, AppendViewAndPositions) {
  KvCache kv(KvCacheShape{2, 2, 4, 100});
  EXPECT_EQ(kv.n_committed(), 0u);
  append(kv, 0, 5);
  append(kv, 5, 3);
  EXPECT_EQ(kv.n_committed(), 8u);
  for (size_t il = 0; il < 2; ++il) {
    const KvSlots s = kv.layer(il).view();
    ASSERT_EQ(s.n_slots, 8u);
    ASSERT_EQ(s.row_stride, 8u);
    for (size_t i = 0; i < 8; ++i) {
      EXPECT_EQ(s.positions[i], static_cast<int32_t>(i));
      EXPECT_EQ(s.k[i * 8 + 3], 0.25f + i * 100.0f + 3);
      EXPECT_EQ(s.v[i * 8 + 7], 0.5f + i * 100.0f + 7);
    }
  }
  EXPECT_STREQ(kv.layer(0).policy(), "full");
}

TEST(KvCache, TruncateKeepsPrefixAndReappendOverwrites) {
  KvCache kv(KvCacheShape{1, 1, 2, 64});
  append(kv, 0, 10);
  const size_t bytes_before = kv.resident_bytes();
  kv.truncate(4);
  EXPECT_EQ(kv.n_committed(), 4u);
  EXPECT_EQ(kv.layer(0).view().n_slots, 4u);
  EXPECT_EQ(kv.resident_bytes(), bytes_before) << "truncate must not release or reallocate";
  kv.truncate(7);  // beyond the length: no-op
  EXPECT_EQ(kv.n_committed(), 4u);
  append(kv, 4, 2);
  const KvSlots s = kv.layer(0).view();
  ASSERT_EQ(s.n_slots, 6u);
  EXPECT_EQ(s.positions[5], 5);
  EXPECT_EQ(s.k[5 * 2 + 1], 0.25f + 500.0f + 1);
  kv.clear();
  EXPECT_EQ(kv.n_committed(), 0u);
  EXPECT_EQ(kv.layer(0).view().n_slots, 0u);
}

TEST(KvCache, CommitRejectsOverflow) {
  KvCache kv(KvCacheShape{1, 1, 2, 8});
  append(kv, 0, 6);
  EXPECT_EQ(kv.n_free(), 2u);
  const Status st = kv.commit(3);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, "context_overflow");
  EXPECT_EQ(kv.n_committed(), 6u);
}

TEST(KvCache, ResidentBytesMeasuredFromStorage) {
  const size_t n_layer = 3, n_kv = 2, hd = 8, n_ctx = 4096;
  KvCache kv(KvCacheShape{n_layer, n_kv, hd, n_ctx});
  EXPECT_EQ(kv.resident_bytes(), 0u) << "nothing is allocated before the first token";
  append(kv, 0, 1);
  const size_t one = kv.resident_bytes();
  const size_t per_slot = n_layer * (sizeof(int32_t) + 2 * n_kv * hd * sizeof(float));
  EXPECT_GE(one, per_slot);
  EXPECT_LT(one, per_slot * n_ctx) << "storage grows with use, not preallocated to n_ctx";
  append(kv, 1, 999);
  EXPECT_GE(kv.resident_bytes(), 1000 * per_slot);
  EXPECT_LE(kv.resident_bytes(), 2 * 1000 * per_slot + one);
}

// A layer with a policy of its own can be plugged in per layer.
class CountingLayer final : public KvLayer {
 public:
  void append(const int32_t*, const float*, const float*, size_t n) override { n_ += n; }
  void truncate(size_t n_tokens) override { n_ = std::min(n_, n_tokens); }
  KvSlots view() const override { return KvSlots{}; }
  size_t resident_bytes() const override { return 123; }
  const char* policy() const override { return "counting"; }
  size_t n_ = 0;
};

TEST(KvCache, PerLayerPolicies) {
  const KvCacheShape shape{2, 1, 2, 16};
  std::vector<std::unique_ptr<KvLayer>> layers;
  layers.push_back(std::make_unique<FullKvLayer>(1, 2, 16));
  auto counting = std::make_unique<CountingLayer>();
  CountingLayer* c = counting.get();
  layers.push_back(std::move(counting));
  KvCache kv(shape, std::move(layers));
  append(kv, 0, 5);
  EXPECT_EQ(c->n_, 5u);
  EXPECT_STREQ(kv.layer(1).policy(), "counting");
  EXPECT_EQ(kv.resident_bytes(), kv.layer(0).resident_bytes() + 123);
  kv.truncate(2);
  EXPECT_EQ(c->n_, 2u);
  EXPECT_EQ(kv.layer(0).view().n_slots, 2u);
}

}  // namespace
}  // namespace kakeya::engine
