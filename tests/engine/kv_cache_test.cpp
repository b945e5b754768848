// The KV cache: storage on the backend, bookkeeping on the host (kv_cache.h).
#include "engine/kv_cache.h"

#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "engine/kv_policy.h"
#include "tests/engine/backends.h"

namespace kakeya::engine {
namespace {

// k/v rows whose values encode (position, element) so reads can be checked exactly.
std::vector<float> rows(int32_t pos0, size_t n, size_t stride, float tag) {
  std::vector<float> out(n * stride);
  for (size_t i = 0; i < n; ++i)
    for (size_t j = 0; j < stride; ++j) out[i * stride + j] = tag + static_cast<float>(pos0 + i) * 100.0f + j;
  return out;
}

// Appends n tokens at positions pos0.. to every layer, then commits.
void append(KvCache& kv, int32_t pos0, size_t n) {
  const size_t stride = kv.shape().n_head_kv * kv.shape().head_dim;
  std::vector<int32_t> pos(n);
  std::iota(pos.begin(), pos.end(), pos0);
  const auto k = rows(pos0, n, stride, 0.25f), v = rows(pos0, n, stride, 0.5f);
  for (size_t il = 0; il < kv.n_layer(); ++il)
    ASSERT_TRUE(test::append_rows(kv.layer(il), kv.backend(), pos, k, v).ok());
  ASSERT_TRUE(kv.commit(n).ok());
}

TEST(KvCache, AppendReadBackAndPositions) {
  KvCache kv(test::cpu(1), KvCacheShape{2, 2, 4, 100});
  EXPECT_EQ(kv.n_committed(), 0u);
  append(kv, 0, 5);
  append(kv, 5, 3);
  EXPECT_EQ(kv.n_committed(), 8u);
  for (size_t il = 0; il < 2; ++il) {
    for (size_t h = 0; h < 2; ++h) {
      std::vector<int32_t> pos;
      std::vector<float> k, v;
      kv.layer(il).read_head(h, &pos, &k, &v);
      ASSERT_EQ(pos.size(), 8u);
      for (size_t i = 0; i < 8; ++i) {
        EXPECT_EQ(pos[i], static_cast<int32_t>(i));
        EXPECT_EQ(k[i * 4 + 3], 0.25f + i * 100.0f + h * 4 + 3);  // head h holds elements h*4 .. h*4+3
        EXPECT_EQ(v[i * 4 + 1], 0.5f + i * 100.0f + h * 4 + 1);
      }
    }
  }
  EXPECT_EQ(kv.layer(0).policy(), "full");
  std::vector<KvHeadView> views;
  kv.layer(1).head_views(views);
  ASSERT_EQ(views.size(), 2u);
  EXPECT_EQ(views[1].index, 1u);
  EXPECT_EQ(views[1].n_slots, 8u);
  EXPECT_EQ(views[1].window, 0);
  EXPECT_EQ(views[0].storage, views[1].storage) << "one storage group holds both exact heads";
}

TEST(KvCache, TruncateKeepsPrefixAndReappendOverwrites) {
  KvCache kv(test::cpu(1), KvCacheShape{1, 1, 2, 64});
  append(kv, 0, 10);
  const size_t bytes_before = kv.resident_bytes();
  kv.truncate(4);
  EXPECT_EQ(kv.n_committed(), 4u);
  EXPECT_EQ(kv.layer(0).head_slots(0), 4u);
  EXPECT_EQ(kv.resident_bytes(), bytes_before) << "truncate must not release or reallocate";
  kv.truncate(7);  // beyond the length: no-op
  EXPECT_EQ(kv.n_committed(), 4u);
  append(kv, 4, 2);
  std::vector<int32_t> pos;
  std::vector<float> k;
  kv.layer(0).read_head(0, &pos, &k, nullptr);
  ASSERT_EQ(pos.size(), 6u);
  EXPECT_EQ(pos[5], 5);
  EXPECT_EQ(k[5 * 2 + 1], 0.25f + 500.0f + 1);
  kv.clear();
  EXPECT_EQ(kv.n_committed(), 0u);
  EXPECT_EQ(kv.layer(0).head_slots(0), 0u);
}

TEST(KvCache, CommitRejectsOverflow) {
  KvCache kv(test::cpu(1), KvCacheShape{1, 1, 2, 8});
  append(kv, 0, 6);
  EXPECT_EQ(kv.n_free(), 2u);
  const Status st = kv.commit(3);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, "context_overflow");
  EXPECT_EQ(kv.n_committed(), 6u);
}

// Resident bytes are what the backend allocated for the storage, which grows with use.
TEST(KvCache, ResidentBytesMeasuredFromStorage) {
  const size_t n_layer = 3, n_kv = 2, hd = 8, n_ctx = 4096;
  Backend& backend = test::cpu(1);
  const size_t before = backend.allocated_bytes();
  {
    KvCache kv(backend, KvCacheShape{n_layer, n_kv, hd, n_ctx});
    EXPECT_EQ(kv.resident_bytes(), 0u) << "nothing is allocated before the first token";
    append(kv, 0, 1);
    const size_t one = kv.resident_bytes();
    const size_t per_slot = n_layer * (sizeof(int32_t) + 2 * n_kv * hd * sizeof(float));
    EXPECT_EQ(one, 64 * per_slot) << "exact storage starts at 64 slots";
    EXPECT_EQ(backend.allocated_bytes() - before, one) << "the backend's own count agrees";
    append(kv, 1, 999);
    EXPECT_EQ(kv.resident_bytes(), 1024 * per_slot) << "capacity doubles: 64 ... 1024 slots";
    EXPECT_EQ(backend.allocated_bytes() - before, kv.resident_bytes()) << "grown storage replaces the old";
  }
  EXPECT_EQ(backend.allocated_bytes(), before) << "storage is released with the cache";
}

// Per-layer policies: layer 0 exact, layer 1 bounded (kv_policy.h).
TEST(KvCache, PerLayerPolicies) {
  const KvCacheShape shape{2, 1, 2, 16};
  KvCache kv(test::cpu(1), shape);
  KvPolicy p;
  p.sink = 1;
  p.window = 2;
  p.tail = 1;
  p.exact_layers = {0};
  ASSERT_TRUE(apply_kv_policy(kv, p).ok());
  EXPECT_EQ(kv.layer(0).policy(), "full");
  EXPECT_EQ(kv.layer(1).policy(), "sink1+window2+tail1");
  append(kv, 0, 8);
  EXPECT_EQ(kv.layer(0).head_slots(0), 8u);
  EXPECT_EQ(kv.layer(1).head_slots(0), 1u + 2u) << "sink 0 and positions > 8 - 2 - 1";
  std::vector<int32_t> pos;
  std::vector<float> k;
  kv.layer(1).read_head(0, &pos, &k, nullptr);
  EXPECT_EQ(pos, (std::vector<int32_t>{0, 6, 7}));
  EXPECT_EQ(k[1 * 2], 0.25f + 600.0f) << "the row moved with its position";
  EXPECT_EQ(kv.truncate_floor(), 7u);
  ASSERT_TRUE(kv.truncate_checked(7).ok());
  EXPECT_EQ(kv.layer(0).head_slots(0), 7u);
  EXPECT_EQ(kv.layer(1).head_slots(0), 2u);
}

}  // namespace
}  // namespace kakeya::engine
