// bench/gpu_bench.cpp run as a real process on the Vulkan device of this machine (lavapipe in CI)
// with tiny sizes: the JSON's shape, units and that every measured number is positive. Never a
// speed threshold. Skipped where the build has no kakeya_gpu_bench or the machine no device.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/engine/backends.h"
#include "tests/engine/bench_tools.h"
#include "tests/harness/paths.h"

namespace kakeya::engine {
namespace {

using test::BenchRun;

BenchRun run_bench(const std::vector<std::string>& args) {
  return test::run_bench_tool("kakeya_gpu_bench", args, 120);
}

std::string skip_reason() {
  if (!std::filesystem::exists(testing::binary_dir() / "bench" / "kakeya_gpu_bench"))
    return "kakeya_gpu_bench is not built (needs -DKAKEYA_BENCH=ON and the Vulkan backend)";
  std::string why;
  if (test::vulkan(&why) == nullptr) return "no Vulkan device: " + why;
  return "";
}

void expect_stats(const nlohmann::json& s, const std::string& unit, size_t n, const std::string& what) {
  EXPECT_EQ(s.at("unit"), unit) << what;
  EXPECT_EQ(s.at("n").get<size_t>(), n) << what;
  EXPECT_GT(s.at("median").get<double>(), 0.0) << what;
  EXPECT_LE(s.at("min").get<double>(), s.at("median").get<double>()) << what;
  EXPECT_GE(s.at("max").get<double>(), s.at("median").get<double>()) << what;
}

// A stand-in for llama.cpp's llama-bench with fixed rates, so the ratios are checkable.
std::filesystem::path fake_llama_bench(const std::filesystem::path& dir) {
  return test::fake_llama_bench(
      dir,
      "[{\"build_commit\": \"c392e50\", \"backends\": \"Vulkan\", \"n_prompt\": 16, \"n_gen\": 0, \"avg_ts\": 1000.0},\n"
      " {\"build_commit\": \"c392e50\", \"backends\": \"Vulkan\", \"n_prompt\": 0, \"n_gen\": 8, \"avg_ts\": 50.0}]");
}

TEST(GpuBench, TinyRunOnTheDeviceHasTheReportsShapeAndPositiveNumbers) {
  if (const std::string why = skip_reason(); !why.empty()) GTEST_SKIP() << why;
  testing::TempDir tmp("gpu-bench");
  const auto out = tmp.path() / "gpu-bench.json";
  const auto llama = fake_llama_bench(tmp.path());
  const BenchRun r = run_bench({"--bandwidth-mib", "4", "--matmul-n", "256", "--matmul-tokens", "64", "--repeats", "3",
                           "--rounds", "2", "-p", "16", "-n", "8", "-r", "1", "--model",
                           test::stories_path(), "--synth", "custom:q4_0",
                           "--work-dir", tmp.path().string(), "--llama-bench", llama.string(), "--out",
                           out.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::ifstream f(out);
  const nlohmann::json j = nlohmann::json::parse(f);

  EXPECT_EQ(j.at("kind"), "gpu-bench");
  EXPECT_EQ(j.at("backend").at("name"), "vulkan");
  EXPECT_FALSE(j.at("device").at("name").get<std::string>().empty());
  EXPECT_FALSE(j.at("device").at("driver").get<std::string>().empty());
  EXPECT_EQ(j.at("bandwidth").at("bytes"), 4u << 20);
  expect_stats(j.at("bandwidth").at("read_gb_s"), "GB/s", 3, "bandwidth");
  EXPECT_EQ(j.at("matmul").at("shader"), "tiled");
  EXPECT_EQ(j.at("matmul").at("weight_type"), "f16");
  expect_stats(j.at("matmul").at("gflop_s"), "GFLOP/s", 3, "matmul");

  const nlohmann::json& models = j.at("models");
  ASSERT_EQ(models.size(), 2u);
  EXPECT_TRUE(std::filesystem::exists(models[1].at("file").get<std::string>())) << "the synth file was written";
  for (const nlohmann::json& m : models) {
    const std::string label = m.at("label");
    EXPECT_EQ(m.at("backend_used"), "vulkan") << label;
    const auto weight_bytes = m.at("weight_bytes_per_token").get<uint64_t>();
    EXPECT_GT(weight_bytes, 0u) << label;
    EXPECT_LT(weight_bytes, std::filesystem::file_size(m.at("file").get<std::string>())) << label;
    expect_stats(m.at("decode_tok_s"), "tokens/s", 2, label);
    expect_stats(m.at("prefill_tok_s"), "tokens/s", 2, label);
    // The device holds at least the weights a decode step reads.
    EXPECT_GE(m.at("device_memory_peak_bytes").get<uint64_t>(), weight_bytes) << label;
    const double bw = j.at("bandwidth").at("read_gb_s").at("median").get<double>() * 1e9;
    EXPECT_DOUBLE_EQ(m.at("decode_efficiency").get<double>(),
                     static_cast<double>(weight_bytes) * m.at("decode_tok_s").at("median").get<double>() / bw)
        << label;

    const nlohmann::json& prof = m.at("profile");
    EXPECT_EQ(prof.at("unit"), "ms");
    double sum = 0;
    for (const auto& [op, t] : prof.at("ops").items()) {
      EXPECT_GT(t.at("ms").get<double>(), 0.0) << label << " " << op;
      EXPECT_GE(t.at("count").get<int>(), 1) << label << " " << op;
      sum += t.at("ms").get<double>();
    }
    EXPECT_NEAR(sum, prof.at("total_ms").get<double>(), 1e-9 * sum);
    for (const char* op : {"embed", "rms_norm", "matmul", "rope", "attention", "kv_store", "swiglu", "add", "argmax"})
      EXPECT_TRUE(prof.at("ops").contains(op)) << label << " profile lacks " << op;

    ASSERT_EQ(m.at("llama_bench").size(), 1u) << label << ": one entry per --llama-bench binary";
    const nlohmann::json& lb = m.at("llama_bench").at(0);
    EXPECT_EQ(lb.at("binary"), llama.string());
    EXPECT_EQ(lb.at("build_commit"), "c392e50");
    EXPECT_DOUBLE_EQ(lb.at("prefill_tok_s").at("median").get<double>(), 1000.0);
    EXPECT_DOUBLE_EQ(lb.at("decode_ratio").get<double>(), m.at("decode_tok_s").at("median").get<double>() / 50.0);
    EXPECT_DOUBLE_EQ(lb.at("prefill_ratio").get<double>(), m.at("prefill_tok_s").at("median").get<double>() / 1000.0);
  }
}

TEST(GpuBench, BadSynthSpecIsAnErrorNamingIt) {
  if (const std::string why = skip_reason(); !why.empty()) GTEST_SKIP() << why;
  const BenchRun r = run_bench({"--bandwidth-mib", "1", "--matmul-n", "64", "--matmul-tokens", "32", "--repeats", "1",
                           "--synth", "llama-7b"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("--synth llama-7b"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace kakeya::engine
