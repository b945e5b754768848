#pragma once
// Backends and contexts for the engine tests: CPU backends opened once per option set and shared
// by the tests of this binary (a backend holds only a thread pool and the uploads of the models
// whose contexts are alive).
#include <gtest/gtest.h>

#include <sys/resource.h>

#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include "engine/backend.h"
#include "engine/kv_cache.h"
#include "engine/llama.h"
#include "tests/harness/paths.h"

namespace kakeya::engine::test {

// CPU time of this process so far, user + system, every thread, in seconds (getrusage).
inline double process_cpu_seconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
}

// The value of the first processor's `key` line of /proc/cpuinfo ("key<tabs>: value"), trimmed;
// nullopt when there is none (or no /proc/cpuinfo).
inline std::optional<std::string> cpuinfo_field(const std::string& key) {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string name = line.substr(0, colon);
    name.erase(name.find_last_not_of(" \t") + 1);
    if (name != key) continue;
    const size_t at = line.find_first_not_of(' ', colon + 1);
    return at == std::string::npos ? std::string() : line.substr(at);
  }
  return std::nullopt;
}

// The CPU backend with `threads`, batched_matmul `mode` ("auto", "sgemm", "quantized") and
// weight_layout `layout` ("auto", "packed", "row-major").
inline Backend& cpu(int threads = 2, const std::string& mode = "auto", const std::string& layout = "auto") {
  static std::map<std::tuple<int, std::string, std::string>, std::unique_ptr<Backend>> backends;
  auto& b = backends[{threads, mode, layout}];
  if (!b) {
    auto opened = open_backend("cpu", BackendOptions{threads, layout, mode});
    if (!opened.ok()) ADD_FAILURE() << opened.error().str();
    b = std::move(opened).value();
  }
  return *b;
}

// The Vulkan backend on the default device, opened once; nullptr when this build or machine has
// none (then *why says why, for GTEST_SKIP).
inline Backend* vulkan(std::string* why = nullptr) {
  static std::string reason;
  static std::unique_ptr<Backend> b = [] {
    auto opened = open_backend("vulkan", BackendOptions{1});
    if (!opened.ok()) {
      reason = opened.error().str();
      return std::unique_ptr<Backend>();
    }
    return std::move(opened).value();
  }();
  if (why != nullptr) *why = reason;
  return b.get();
}

// The path of `name` in the shared models directory (testing::models_dir()).
inline std::string model_path(const std::string& name) { return (testing::models_dir() / name).string(); }

// The path of stories260K-f32.gguf, the engine tests' small real model.
inline std::string stories_path() { return model_path("stories260K-f32.gguf"); }

// stories260K-f32.gguf, loaded once per test binary (a failed load fails the test that asked first).
inline const LlamaModel& stories() {
  static const std::unique_ptr<LlamaModel> m = [] {
    auto r = LlamaModel::load(stories_path());
    EXPECT_TRUE(r.ok()) << r.error().str();
    return std::make_unique<LlamaModel>(std::move(r).value());
  }();
  return *m;
}

// A context (the test fails, and this returns nullptr, when it cannot be made).
inline std::unique_ptr<LlamaContext> context(const LlamaModel& model, Backend& backend, size_t n_ctx = 0,
                                             size_t n_batch = 512) {
  auto c = LlamaContext::create(model, backend, ContextOptions{n_ctx, n_batch});
  if (!c.ok()) {
    ADD_FAILURE() << c.error().str();
    return nullptr;
  }
  return std::move(c).value();
}

// Appends host rows to `layer` through tensors on `backend`: k, v [positions.size()][n_head_kv ·
// head_dim].
inline Status append_rows(KvLayer& layer, Backend& backend, std::span<const int32_t> positions,
                          const std::vector<float>& k, const std::vector<float>& v) {
  const int64_t n = static_cast<int64_t>(positions.size());
  const int64_t width = n > 0 ? static_cast<int64_t>(k.size()) / n : 0;
  KAKEYA_ASSIGN_OR_RETURN(auto kb, backend.alloc(k.size() * sizeof(float)));
  KAKEYA_ASSIGN_OR_RETURN(auto vb, backend.alloc(v.size() * sizeof(float)));
  const Tensor kt{kb.get(), 0, GgmlType::F32, width, n}, vt{vb.get(), 0, GgmlType::F32, width, n};
  backend.write(kt, k);
  backend.write(vt, v);
  return layer.append(kt, vt, positions);
}

}  // namespace kakeya::engine::test
