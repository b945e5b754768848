// bench/pool_rounds.h: the sign-test interval for the median against exact binomial sums, the pooling
// of engine_bench rounds (ratios, medians, goals, the variant forms), the refusals, and
// `kakeya_engine_bench --pool` over result files committed in bench/results.
#include "bench/pool_rounds.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bridge/exit_codes.h"
#include "tests/engine/bench_tools.h"
#include "tests/harness/paths.h"

namespace kakeya::bench {
namespace {

using nlohmann::json;

// P(Bin(n, 1/2) <= j) from integer binomial coefficients (n <= 60 keeps them in 64 bits).
double binomial_half_cdf(unsigned n, int j) {
  std::uint64_t c = 1, sum = 0;
  for (int i = 0; i <= j; ++i) {
    sum += c;
    c = c * (n - static_cast<unsigned>(i)) / static_cast<unsigned>(i + 1);
  }
  return static_cast<double>(sum) / static_cast<double>(std::uint64_t{1} << n);
}

TEST(PoolRounds, MedianIntervalIsTheNarrowestWithEnoughCoverage) {
  for (unsigned n = 1; n <= 40; ++n) {
    for (double conf : {0.8, 0.9, 0.95}) {
      const auto iv = median_interval_ranks(n, conf);
      // The widest interval [x_(1), x_(n)] covers with 1 - 2^(1-n).
      if (1.0 - 2.0 * binomial_half_cdf(n, 0) < conf) {
        EXPECT_FALSE(iv.has_value()) << "n=" << n << " conf=" << conf;
        continue;
      }
      ASSERT_TRUE(iv.has_value()) << "n=" << n << " conf=" << conf;
      const size_t k = iv->low_rank;
      EXPECT_EQ(iv->high_rank, n + 1 - k);
      const double cov = 1.0 - 2.0 * binomial_half_cdf(n, static_cast<int>(k) - 1);
      EXPECT_NEAR(iv->coverage, cov, 1e-12) << "n=" << n;
      EXPECT_GE(iv->coverage, conf) << "n=" << n;
      // One rank narrower falls short (or would cross the middle).
      if (2 * (k + 1) <= n + 1) {
        EXPECT_LT(1.0 - 2.0 * binomial_half_cdf(n, static_cast<int>(k)), conf) << "n=" << n << " conf=" << conf;
      }
    }
  }
  // The README's pooled tables: 19 rounds -> [x_(6), x_(14)], coverage 0.936; 4 rounds -> none.
  const auto iv19 = median_interval_ranks(19, 0.9);
  ASSERT_TRUE(iv19.has_value());
  EXPECT_EQ(iv19->low_rank, 6u);
  EXPECT_EQ(iv19->high_rank, 14u);
  EXPECT_NEAR(iv19->coverage, 0.9364, 1e-4);
  EXPECT_FALSE(median_interval_ranks(4, 0.9).has_value());
  EXPECT_FALSE(median_interval_ranks(0, 0.9).has_value());
}

json cpu_of(const std::string& family, const std::string& model) {
  return {{"vendor", "AuthenticAMD"}, {"family", family}, {"model", model}, {"model_name", "AMD EPYC"}};
}

// An engine_bench document with one type at one thread count: one round per entry of
// kakeya_tg / llama_tg (tg48), pp128 at 2x llama.cpp in every round.
json bench_doc(const std::string& created_at, const std::string& version, const std::vector<double>& kakeya_tg,
               const std::vector<double>& llama_tg, const std::string& family = "26") {
  json rounds = json::array();
  for (size_t i = 0; i < kakeya_tg.size(); ++i)
    rounds.push_back(
        {{"round", i},
         {"kakeya", {{"pp128", 200.0}, {"tg48", kakeya_tg[i]}, {"tg48_after_pp128", 9.0}, {"load", "1 1 1"}}},
         {"llama", {{"pp128", 100.0}, {"tg48", llama_tg[i]}, {"tg48_after_pp128", 10.0}, {"load", "1 1 1"}}}});
  return {{"kind", "engine-bench"},
          {"created_at", created_at},
          {"env", {{"cpu", cpu_of(family, "2")}}},
          {"config", {{"shape", "tinyllama-1.1b"}, {"variant_env", json::array()}}},
          {"models",
           {{{"type", "bf16"}, {"runs", {{{"threads", 2}, {"engine", {{"version", version}}}, {"rounds", rounds}}}}}}}};
}

const json* find_cell(const json& pooled, const std::string& arm, const std::string& variant_env = "") {
  for (const auto& c : pooled.at("cells"))
    if (c.at("arm") == arm && c.value("variant_env", std::string()) == variant_env) return &c;
  return nullptr;
}

TEST(PoolRounds, PoolsEveryRoundOfEveryFileIntoOneCell) {
  // Ratios 1.0, 1.2, 0.9 from the first file and 1.3, 1.1 from the second (llama at 10 tok/s).
  const std::vector<PoolInput> in = {
      {"a.json", bench_doc("2026-12-01T00:00:00Z", "0.1.0+aaa", {10, 12, 9}, {10, 10, 10})},
      {"b.json", bench_doc("2026-12-02T00:00:00Z", "0.1.0+bbb", {13, 11}, {10, 10})}};
  auto pooled = pool_rounds(in, 0.9);
  ASSERT_TRUE(pooled.ok()) << pooled.error().str();
  EXPECT_EQ(pooled->at("kind"), "engine-bench-pool");
  EXPECT_EQ(pooled->at("cpu").at("family"), "26");
  ASSERT_EQ(pooled->at("files").size(), 2u);
  EXPECT_EQ(pooled->at("files")[0].at("rounds"), 3);
  EXPECT_EQ(pooled->at("files")[1].at("rounds"), 2);

  const json* tg = find_cell(*pooled, "tg48");
  ASSERT_NE(tg, nullptr);
  EXPECT_EQ(tg->at("n"), 5);
  EXPECT_EQ(tg->at("file_count"), 2);
  EXPECT_DOUBLE_EQ(tg->at("median").get<double>(), 1.1);
  EXPECT_DOUBLE_EQ(tg->at("min").get<double>(), 0.9);
  EXPECT_DOUBLE_EQ(tg->at("max").get<double>(), 1.3);
  EXPECT_DOUBLE_EQ(tg->at("goal").get<double>(), 1.1);
  EXPECT_EQ(tg->at("reached"), 3);  // 1.1, 1.2, 1.3
  EXPECT_TRUE(tg->at("median_meets_goal").get<bool>());
  // Five rounds at 0.9: [x_(1), x_(5)], coverage 1 - 2/32.
  ASSERT_TRUE(tg->at("interval").is_object());
  EXPECT_DOUBLE_EQ(tg->at("interval").at("low").get<double>(), 0.9);
  EXPECT_DOUBLE_EQ(tg->at("interval").at("high").get<double>(), 1.3);
  EXPECT_NEAR(tg->at("interval").at("coverage").get<double>(), 0.9375, 1e-12);
  EXPECT_FALSE(tg->at("interval_above_goal").get<bool>());
  EXPECT_EQ(tg->at("engine_versions"), json::array({"0.1.0+aaa", "0.1.0+bbb"}));

  const json* pp = find_cell(*pooled, "pp128");
  ASSERT_NE(pp, nullptr);
  EXPECT_DOUBLE_EQ(pp->at("median").get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(pp->at("goal").get<double>(), 1.0);
  EXPECT_EQ(pp->at("reached"), 5);
  EXPECT_TRUE(pp->at("interval_above_goal").get<bool>());

  // Decode after a prompt has no goal in the table.
  const json* depth = find_cell(*pooled, "tg48_after_pp128");
  ASSERT_NE(depth, nullptr);
  EXPECT_TRUE(depth->at("goal").is_null());
  EXPECT_FALSE(depth->contains("reached"));
  EXPECT_DOUBLE_EQ(depth->at("median").get<double>(), 0.9);

  EXPECT_EQ(find_cell(*pooled, "load"), nullptr);
  EXPECT_NE(pool_table(*pooled).find("tg48"), std::string::npos);
}

TEST(PoolRounds, VariantArmsInBothFormsAndUnusableRatesLeftOut) {
  json now = bench_doc("2026-12-01T00:00:00Z", "v", {10, 10}, {10, 10});
  auto& rounds = now["models"][0]["runs"][0]["rounds"];
  rounds[0]["variants"] = {{{"env", "KAKEYA_DENSE16=one-row+vdpbf16ps"}, {"position", 0}, {"tg48", 12.0}}};
  rounds[1]["variants"] = {{{"env", "KAKEYA_DENSE16=one-row+vdpbf16ps"}, {"position", 0}, {"tg48", 14.0}}};
  rounds[1]["kakeya"]["pp128"] = 0.0;  // a failed arm: not a ratio
  json old = bench_doc("2026-12-02T00:00:00Z", "v", {10}, {10});
  old["config"]["variant_env"] = "KAKEYA_DENSE16=one-row+vdpbf16ps";
  old["models"][0]["runs"][0]["rounds"][0]["variant"] = {{"tg48", 16.0}};
  auto pooled = pool_rounds({{"now.json", now}, {"old.json", old}}, 0.9);
  ASSERT_TRUE(pooled.ok()) << pooled.error().str();
  const json* v = find_cell(*pooled, "tg48", "KAKEYA_DENSE16=one-row+vdpbf16ps");
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(v->at("n"), 3);
  EXPECT_DOUBLE_EQ(v->at("median").get<double>(), 1.4);
  EXPECT_TRUE(v->at("interval").is_null());  // three rounds: no interval at 0.9
  EXPECT_FALSE(v->at("interval_above_goal").get<bool>());
  const json* pp = find_cell(*pooled, "pp128");
  ASSERT_NE(pp, nullptr);
  EXPECT_EQ(pp->at("n"), 2);  // the zero rate left out
}

TEST(PoolRounds, RefusesWhatWouldMisleadNamingTheFile) {
  const json a = bench_doc("2026-12-01T00:00:00Z", "v1", {10}, {10});
  auto refused = [](const std::vector<PoolInput>& in, const std::string& needle) {
    auto r = pool_rounds(in, 0.9);
    ASSERT_FALSE(r.ok()) << needle;
    EXPECT_EQ(r.error().code, errc::kBadValue);
    EXPECT_NE(r.error().message.find(needle), std::string::npos) << r.error().message;
  };
  refused({}, "no result files");
  // Zen 4 rounds beside Zen 5 ones.
  refused({{"zen5.json", a}, {"zen4.json", bench_doc("2026-12-02T00:00:00Z", "v1", {10}, {10}, "25")}},
          "zen4.json was measured on AuthenticAMD family 25 model 2");
  json no_family = a;
  no_family["env"]["cpu"].erase("family");
  refused({{"old.json", no_family}}, "old.json records no env.cpu vendor, family");
  json other_shape = bench_doc("2026-12-02T00:00:00Z", "v1", {10}, {10});
  other_shape["config"]["shape"] = "custom";
  refused({{"a.json", a}, {"c.json", other_shape}}, "c.json is shape \"custom\"");
  refused({{"a.json", a}, {"a.json", bench_doc("2026-12-03T00:00:00Z", "v1", {10}, {10})}}, "a.json is given twice");
  refused({{"a.json", a}, {"copy.json", a}}, "copy.json and a.json are the same run");
  json no_llama = a;
  no_llama["models"][0]["runs"][0]["rounds"][0].erase("llama");
  refused({{"solo.json", no_llama}}, "solo.json has no round with both engines' figures");
  refused({{"x.json", json{{"kind", "fleet-bench"}}}}, "x.json is not a kakeya_engine_bench result");
  refused({{"n.json", json(nullptr)}}, "n.json is not a kakeya_engine_bench result");
  auto bad_conf = pool_rounds({{"a.json", a}}, 1.0);
  EXPECT_FALSE(bad_conf.ok());
}

// Odd shapes where the pooling reads (strings for numbers, objects for arrays, huge numbers) are
// skipped or refused, never thrown.
TEST(PoolRounds, MalformedShapesAreSkippedNotThrown) {
  const json good = bench_doc("2026-12-01T00:00:00Z", "v", {10}, {10});
  std::vector<json> odd;
  for (const char* path : {"/models", "/models/0/runs", "/models/0/runs/0/rounds", "/models/0/runs/0/rounds/0/kakeya",
                           "/models/0/runs/0/threads", "/models/0/type", "/env/cpu/family", "/config"}) {
    for (const json& value : {json("x"), json::object(), json::array(), json(1e300), json(-1), json(nullptr)}) {
      json d = good;
      d[json::json_pointer(path)] = value;
      odd.push_back(std::move(d));
    }
  }
  json v = good;
  v["models"][0]["runs"][0]["rounds"][0]["variants"] = {{{"env", 7}, {"tg48", "fast"}}, "x", {{"env", "K=V"}}};
  odd.push_back(v);
  json huge = good;
  huge["models"][0]["runs"][0]["rounds"][0]["kakeya"]["tg4800000000000000000000"] = 1.0;
  huge["models"][0]["runs"][0]["rounds"][0]["llama"]["tg4800000000000000000000"] = 1.0;
  odd.push_back(huge);
  size_t pooled_ok = 0;
  for (const json& d : odd) {
    EXPECT_NO_THROW({
      auto r = pool_rounds({{"odd.json", d}}, 0.9);
      if (r.ok()) {
        ++pooled_ok;
        EXPECT_FALSE(pool_table(*r).empty());
      } else {
        EXPECT_NE(r.error().message.find("odd.json"), std::string::npos) << r.error().message;
      }
    }) << d.dump();
  }
  EXPECT_GT(pooled_ok, 0u);  // some odd values (a family given as a number) still pool
}

TEST(PoolRounds, EngineBenchPoolsCommittedResultFiles) {
  if (!std::filesystem::exists(testing::binary_dir() / "bench" / "kakeya_engine_bench"))
    GTEST_SKIP() << "kakeya_engine_bench is not built (needs -DKAKEYA_BENCH=ON)";
  testing::TempDir tmp("pool-rounds");
  const auto results = testing::source_dir() / "bench" / "results";
  const auto ten = results / "engine-vs-llama-epyc-zen4-dense16-10r-d7dc889-vm.json";
  const auto five = results / "engine-vs-llama-epyc-zen4-dense16-5r-d7dc889-vm.json";
  const auto out = tmp.path() / "pooled.json";
  auto run = engine::test::run_bench_tool("kakeya_engine_bench",
                                          {"--pool", ten.string(), five.string(), "--out", out.string()}, 60);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.err.find("median"), std::string::npos) << run.err;  // the table
  std::ifstream f(out);
  const json pooled = json::parse(f, nullptr, false);
  ASSERT_FALSE(pooled.is_discarded());
  const json* tg = nullptr;
  for (const auto& c : pooled.at("cells"))
    if (c.at("type") == "f16" && c.at("threads") == 1 && c.at("arm") == "tg48") tg = &c;
  ASSERT_NE(tg, nullptr);
  EXPECT_EQ(tg->at("n"), 15);  // ten rounds and five
  EXPECT_EQ(tg->at("file_count"), 2);
  EXPECT_DOUBLE_EQ(tg->at("goal").get<double>(), 1.1);

  // Another decode goal counts the same rounds against it.
  const auto out2 = tmp.path() / "pooled-1.0.json";
  run = engine::test::run_bench_tool(
      "kakeya_engine_bench", {"--pool", ten.string(), five.string(), "--goal-decode", "1.0", "--out", out2.string()},
      60);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  std::ifstream f2(out2);
  const json pooled2 = json::parse(f2, nullptr, false);
  ASSERT_FALSE(pooled2.is_discarded());
  EXPECT_DOUBLE_EQ(pooled2.at("goals").at("decode").get<double>(), 1.0);
  for (const auto& c : pooled2.at("cells"))
    if (c.at("type") == "f16" && c.at("threads") == 1 && c.at("arm") == "tg48") {
      EXPECT_DOUBLE_EQ(c.at("goal").get<double>(), 1.0);
      EXPECT_GE(c.at("reached").get<int>(), tg->at("reached").get<int>());
    }

  // A Zen 5 file beside them is refused, naming it; so is a file that is not JSON.
  const auto zen5 = results / "engine-vs-llama-epyc-zen5-dense16-bc74a0b-vm.json";
  run = engine::test::run_bench_tool("kakeya_engine_bench", {"--pool", ten.string(), zen5.string()}, 60);
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_NE(run.err.find(zen5.string()), std::string::npos) << run.err;
  const auto junk = tmp.path() / "junk.json";
  std::ofstream(junk) << "{not json";
  run = engine::test::run_bench_tool("kakeya_engine_bench", {"--pool", junk.string()}, 60);
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_NE(run.err.find("junk.json is not readable JSON"), std::string::npos) << run.err;
  run = engine::test::run_bench_tool("kakeya_engine_bench", {"--pool", (tmp.path() / "absent.json").string()}, 60);
  EXPECT_EQ(run.exit_code, kExitUsage) << run.err;
}

}  // namespace
}  // namespace kakeya::bench
