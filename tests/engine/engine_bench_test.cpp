// kakeya_engine_bench end to end on a tiny synth shape, with a stand-in for llama.cpp's llama-bench
// printing fixed rates: the JSON's shape, and the ratio arithmetic of --variant-env's further decode
// arms (run with the variable set, recorded against llama.cpp and against kakeya as it is). Never a
// speed: only that the rates are positive and the ratios are the rates' quotients.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bridge/exit_codes.h"
#include "tests/engine/bench_tools.h"
#include "tests/harness/paths.h"

namespace kakeya::engine {
namespace {

using test::BenchRun;

BenchRun run_engine_bench(const std::vector<std::string>& args) {
  return test::run_bench_tool("kakeya_engine_bench", args, 300);
}

// llama-bench's rows at fixed rates: pp16 at 400 tok/s, tg4 at 20.
std::filesystem::path fake_llama_cpu_bench(const std::filesystem::path& dir) {
  return test::fake_llama_bench(dir,
                                "[{\"build_commit\": \"c392e50\", \"cpu_info\": \"stand-in\", \"n_threads\": 1, "
                                "\"n_prompt\": 16, \"n_gen\": 0, \"avg_ts\": 400.0},\n"
                                " {\"build_commit\": \"c392e50\", \"cpu_info\": \"stand-in\", \"n_threads\": 1, "
                                "\"n_prompt\": 0, \"n_gen\": 4, \"avg_ts\": 20.0}]");
}

double rounds_median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

std::vector<std::string> tiny_engine_bench_args(const std::filesystem::path& dir) {
  return {"--shape", "custom", "--types", "f16", "--threads", "1", "--rounds", "2", "--triad-mib", "1",
          "--triad-reps", "1", "--sgemm-square", "32", "--sgemm-reps", "1", "--roofline-reps", "1",
          "--prompt-tokens", "16", "--gen-tokens", "4", "--samples", "1", "--arm-triad-reps", "1",
          "--oversubscribed", "0", "--cache-dir", (dir / "cache").string(), "--llama-bench",
          fake_llama_cpu_bench(dir).string()};
}

// With --variant-env KAKEYA_CPU_ISA=portable and again KAKEYA_CPU_ISA=avx2, each round runs both
// arms (their engine reports say which kernel set ran), in the given order rotated by one every
// round, and records each one's decode rate; each variant's ratios are its rate over the stand-in's
// 20 tok/s and over kakeya's rate in the same round.
TEST(EngineBench, VariantEnvAddsADecodeArmPerVariableWithItsOwnRatios) {
  if (!std::filesystem::exists(testing::binary_dir() / "bench" / "kakeya_engine_bench"))
    GTEST_SKIP() << "kakeya_engine_bench is not built (needs -DKAKEYA_BENCH=ON)";
  testing::TempDir tmp("engine-bench");
  const auto out = tmp.path() / "engine-bench.json";
  const std::vector<std::string> envs = {"KAKEYA_CPU_ISA=portable", "KAKEYA_CPU_ISA=avx2"};
  auto args = tiny_engine_bench_args(tmp.path());
  args.insert(args.end(), {"--variant-env", envs[0], "--variant-env", envs[1], "--out", out.string()});
  const BenchRun r = run_engine_bench(args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::ifstream f(out);
  const nlohmann::json j = nlohmann::json::parse(f);
  EXPECT_EQ(j.at("config").at("variant_env"), nlohmann::json(envs));
  ASSERT_EQ(j.at("models").size(), 1u);
  const nlohmann::json& run = j.at("models")[0].at("runs").at(0);
  const nlohmann::json& variants = run.at("decode").at("variants");
  ASSERT_EQ(variants.size(), 2u);
  const nlohmann::json& rounds = run.at("rounds");
  ASSERT_EQ(rounds.size(), 2u);
  for (size_t v = 0; v < envs.size(); ++v) {
    const nlohmann::json& variant = variants[v];
    EXPECT_EQ(variant.at("env"), envs[v]);
    std::vector<double> rate, vs_llama, vs_kakeya;
    for (size_t round = 0; round < rounds.size(); ++round) {
      const nlohmann::json& rv = rounds[round].at("variants").at(v);
      EXPECT_EQ(rv.at("env"), envs[v]);
      // Round 0 runs them in the given order, round 1 the other way round.
      EXPECT_EQ(rv.at("position"), (v + round) % 2) << "round " << round;
      const double x = rv.at("tg4").get<double>();
      const double k = rounds[round].at("kakeya").at("tg4").get<double>();
      EXPECT_GT(x, 0.0);
      EXPECT_GT(k, 0.0);
      EXPECT_EQ(rounds[round].at("llama").at("tg4"), 20.0);
      rate.push_back(x);
      vs_llama.push_back(x / 20.0);
      vs_kakeya.push_back(x / k);
    }
    EXPECT_EQ(variant.at("tok_s").at("n"), 2);
    EXPECT_DOUBLE_EQ(variant.at("tok_s").at("median").get<double>(), rounds_median(rate));
    EXPECT_EQ(variant.at("ratio_vs_llama").at("n"), 2);
    EXPECT_DOUBLE_EQ(variant.at("ratio_vs_llama").at("median").get<double>(), rounds_median(vs_llama));
    EXPECT_EQ(variant.at("ratio_vs_kakeya").at("n"), 2);
    EXPECT_DOUBLE_EQ(variant.at("ratio_vs_kakeya").at("median").get<double>(), rounds_median(vs_kakeya));
  }
  // KAKEYA_CPU_ISA caps the kernel set: portable always; avx2 where the CPU has AVX2 (and else the
  // newest set below it, never AVX-512).
  EXPECT_EQ(variants[0].at("engine").at("kernel_isa"), "portable");
  EXPECT_NE(variants[1].at("engine").at("kernel_isa"), "avx512");
  if (run.at("engine").at("kernel_isa") == "avx512") {
    EXPECT_EQ(variants[1].at("engine").at("kernel_isa"), "avx2") << "kakeya's own arm is unset";
  }
  // Five read probes a round still (the variant arms have none of their own).
  EXPECT_EQ(rounds[0].at("read_probes_gb_s").size(), 5u);
}

// A --variant-env that is not KEY=VALUE with KEY in [A-Z0-9_]+ is refused before anything runs.
TEST(EngineBench, VariantEnvMustBeKeyEqualsValue) {
  if (!std::filesystem::exists(testing::binary_dir() / "bench" / "kakeya_engine_bench"))
    GTEST_SKIP() << "kakeya_engine_bench is not built (needs -DKAKEYA_BENCH=ON)";
  testing::TempDir tmp("engine-bench-bad");
  for (const std::string bad : {"KAKEYA_DENSE16", "=one-row", "kakeya_dense16=one-row", "A B=1"}) {
    auto args = tiny_engine_bench_args(tmp.path());
    args.insert(args.end(), {"--variant-env", bad, "--out", (tmp.path() / "x.json").string()});
    const BenchRun r = run_engine_bench(args);
    EXPECT_NE(r.exit_code, 0) << bad;
    EXPECT_NE(r.err.find("--variant-env"), std::string::npos) << bad << ": " << r.err;
    EXPECT_FALSE(std::filesystem::exists(tmp.path() / "x.json")) << bad;
  }
  // The same KEY=VALUE twice would be one arm measured twice under two names: refused as a usage
  // error (exit 64, bridge/exit_codes.h).
  auto args = tiny_engine_bench_args(tmp.path());
  args.insert(args.end(), {"--variant-env", "KAKEYA_CPU_ISA=avx2", "--variant-env", "KAKEYA_CPU_ISA=avx2", "--out",
                           (tmp.path() / "x.json").string()});
  const BenchRun r = run_engine_bench(args);
  EXPECT_EQ(r.exit_code, kakeya::kExitUsage) << r.err;
  EXPECT_NE(r.err.find("--variant-env KAKEYA_CPU_ISA=avx2 given twice"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(tmp.path() / "x.json"));
}

}  // namespace
}  // namespace kakeya::engine
