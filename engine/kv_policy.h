#pragma once
// KV-cache policies (DESIGN.md §4): full, sink+window with a speculative tail, exact layers and
// exact KV heads kept whole while the rest are bounded, and affine 8/4-bit storage.
//
// Policy file (JSON), every field optional:
//   {"sink": 4, "window": 64, "tail": 32, "exact_layers": [1, 3],
//    "exact_heads": [[0, 2], [3, 1]], "kv_bits": 32}
// window == 0 means "no window": every head of every layer is exact (the `full` policy), and
// then only kv_bits matters. A head is exact when its layer is in exact_layers or [layer, head] is
// in exact_heads; otherwise it is bounded: it keeps positions < sink and the window of the last
// `window` positions (query included) — attention of a bounded head equals full attention under
// the mask "j < sink || j > i - window" (models/niah-tiny.goldens.json "decoding") — plus `tail`
// committed positions before the window, kept so that speculative drafts can be rejected by a
// plain length reset (KvCache::truncate to >= n_committed - tail). Positions keep their RoPE.
// kv_bits 32 stores f32; 8 and 4 store affine codes (engine/kv_quant.h, groups of 64 values of a
// slot's row of the heads stored together, or the whole row when it is shorter).
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "bridge/result.h"
#include "engine/kv_cache.h"

namespace kakeya::engine {

struct KvPolicy {
  int32_t sink = 4;
  int32_t window = 0;  // 0 = unbounded (full)
  int32_t tail = 32;   // >= the largest speculative block / prefill chunk you will roll back
  std::vector<int> exact_layers;
  std::vector<std::pair<int, int>> exact_heads;  // (layer, kv head)
  int kv_bits = 32;                              // 32, 8 or 4
  size_t quant_group = 64;

  bool bounded() const { return window > 0; }
  bool head_exact(int layer, int head) const;
  // Short description for reports, e.g. "sink4+window64+tail32 exact_layers=1,3 kv_bits=32".
  std::string describe() const;
};

// Errors "bad_param" naming the field: sink < 0, window < 0, tail < 0, kv_bits not in
// {32, 8, 4}, quant_group == 0, a layer/head index outside the shape (when shape.n_layer > 0).
Status check_kv_policy(const KvPolicy& p, const KvCacheShape& shape);

Result<KvPolicy> kv_policy_from_json(const nlohmann::json& j);
nlohmann::json to_json(const KvPolicy& p);
// Errors: "io" (unreadable), "parse_error", or kv_policy_from_json's.
Result<KvPolicy> load_kv_policy(const std::filesystem::path& path);
Status save_kv_policy(const std::filesystem::path& path, const KvPolicy& p);

// One KvLayer per layer of `shape` implementing `p`, storing on `backend`. Errors:
// check_kv_policy's.
Result<std::vector<std::unique_ptr<KvLayer>>> make_kv_layers(const KvPolicy& p, const KvCacheShape& shape,
                                                             Backend& backend);
// Replaces the layers of an empty cache (storage on the cache's backend). Errors:
// check_kv_policy's, KvCache::set_layers's.
Status apply_kv_policy(KvCache& cache, const KvPolicy& p);

// ANALYTICAL upper bound (a formula, not a measurement) on the resident bytes of a cache under
// `p` after n_tokens tokens appended in chunks of at most n_batch: per layer and storage group,
// slots × (4 bytes of position + 2 × row bytes), where a bounded group holds at most
// min(n_tokens, sink + window + tail - 1 + n_batch) slots and an exact group holds n_tokens
// (plus the geometric-growth slack of at most 2× for exact groups, which this bound includes).
// Tests check that the measured resident_bytes() stays below it; reports label it "analytical".
size_t kv_policy_bound_bytes(const KvPolicy& p, const KvCacheShape& shape, size_t n_tokens,
                             size_t n_batch);

}  // namespace kakeya::engine
