// ar-bench's llama-bench-style table (presets/bench_table.h): rows, statistics and the md, csv
// and json printers, on a hand-made report and on a real ar-bench run.
#include "engine/presets/bench_table.h"

#include <gtest/gtest.h>

#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "engine/presets/ar_bench.h"
#include "engine/tokenizer.h"
#include "tests/engine/backends.h"
#include "tests/harness/paths.h"

namespace kakeya::engine {
namespace {

using nlohmann::json;

// An ar-bench report with two prompt lengths and three samples each, t/s chosen by hand.
json hand_report() {
  json samples = json::array();
  const double pp16[] = {100, 200, 300}, tg16[] = {10, 10, 10}, pp512[] = {1000, 1100, 1200}, tg512[] = {9, 11, 13};
  for (int i = 0; i < 3; ++i) samples.push_back({{"prompt_tokens", 16}, {"prefill_tok_s", pp16[i]}, {"decode_tok_s", tg16[i]}});
  for (int i = 0; i < 3; ++i) {
    samples.push_back({{"prompt_tokens", 512}, {"prefill_tok_s", pp512[i]}, {"decode_tok_s", tg512[i]}});
  }
  return {{"model",
           {{"architecture", "qwen2"},
            {"n_params", 1543714304},
            {"tensor_bytes", 1646572544},
            {"tensor_types", {{"f32", 141}, {"q8_0", 197}, {"q6_k", 1}}}}},
          {"engine", {{"backend", "cpu"}, {"threads", 8}}},
          {"config", {{"gen_tokens", 64}}},
          {"samples", samples}};
}

TEST(BenchTable, RowsPerTestWithMeanAndSampleStddev) {
  auto rows = ar_bench_table(hand_report());
  ASSERT_TRUE(rows.ok()) << rows.error().str();
  ASSERT_EQ(rows->size(), 4u);
  const std::vector<std::string> tests = {"pp16", "tg64 @ d16", "pp512", "tg64 @ d512"};
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ((*rows)[i].test, tests[i]);
    EXPECT_EQ((*rows)[i].model, "qwen2 1.54B Q8_0") << "the most common type that is not the norms' f32";
    EXPECT_EQ((*rows)[i].backend, "cpu");
    EXPECT_EQ((*rows)[i].threads, 8);
    EXPECT_EQ((*rows)[i].size_bytes, 1646572544u);
  }
  EXPECT_DOUBLE_EQ((*rows)[0].avg_ts, 200);
  EXPECT_DOUBLE_EQ((*rows)[0].stddev_ts, 100) << "n − 1 in the denominator";
  EXPECT_EQ((*rows)[0].n_prompt, 16);
  EXPECT_EQ((*rows)[0].n_gen, 0);
  EXPECT_DOUBLE_EQ((*rows)[1].stddev_ts, 0);
  EXPECT_EQ((*rows)[1].n_gen, 64);
  EXPECT_EQ((*rows)[1].n_depth, 16);
  EXPECT_DOUBLE_EQ((*rows)[3].avg_ts, 11);
  EXPECT_DOUBLE_EQ((*rows)[3].stddev_ts, 2);
  EXPECT_EQ(ar_bench_table(json::object()).error().code, "missing_key");
}

TEST(BenchTable, MarkdownAsLlamaBenchPrintsIt) {
  auto rows = ar_bench_table(hand_report());
  ASSERT_TRUE(rows.ok());
  auto md = format_bench_table(*rows, "md");
  ASSERT_TRUE(md.ok());
  std::istringstream in(*md);
  std::string header, rule, first, second;
  std::getline(in, header);
  std::getline(in, rule);
  std::getline(in, first);
  std::getline(in, second);
  EXPECT_EQ(header,
            "| model                          |       size |     params | backend    | threads |          test |    "
            "              t/s |");
  EXPECT_EQ(rule,
            "| ------------------------------ | ---------: | ---------: | ---------- | ------: | ------------: | "
            "-------------------: |");
  EXPECT_EQ(first,
            "| qwen2 1.54B Q8_0               |   1.53 GiB |     1.54 B | cpu        |       8 |          pp16 |    "
            "  200.00 ± 100.00 |");
  EXPECT_EQ(second,
            "| qwen2 1.54B Q8_0               |   1.53 GiB |     1.54 B | cpu        |       8 |    tg64 @ d16 |    "
            "     10.00 ± 0.00 |");
}

TEST(BenchTable, CsvAndJson) {
  auto rows = ar_bench_table(hand_report());
  ASSERT_TRUE(rows.ok());
  auto csv = format_bench_table(*rows, "csv");
  ASSERT_TRUE(csv.ok());
  std::istringstream in(*csv);
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line, "model,size,params,backend,threads,test,n_prompt,n_gen,n_depth,avg_ts,stddev_ts");
  std::getline(in, line);
  EXPECT_EQ(line,
            "\"qwen2 1.54B Q8_0\",\"1646572544\",\"1543714304\",\"cpu\",\"8\",\"pp16\",\"16\",\"0\",\"0\","
            "\"200.000000\",\"100.000000\"");
  size_t lines = 2;
  while (std::getline(in, line)) ++lines;
  EXPECT_EQ(lines, 5u);
  auto js = format_bench_table(*rows, "json");
  ASSERT_TRUE(js.ok());
  const json j = json::parse(*js);
  ASSERT_EQ(j.size(), 4u);
  EXPECT_EQ(j[3]["test"], "tg64 @ d512");
  EXPECT_EQ(j[3]["samples_ts"], (std::vector<double>{9, 11, 13}));
  EXPECT_EQ(format_bench_table(*rows, "sql").error().code, "bad_param");
}

TEST(BenchTable, ArBenchReportCarriesTheTableOfItsSamples) {
  auto model = LlamaModel::load(test::stories_path());
  ASSERT_TRUE(model.ok());
  auto tok = Tokenizer::from_gguf(model->gguf());
  ASSERT_TRUE(tok.ok());
  ArBenchConfig c;
  c.prompt_lengths = {8, 16};
  c.gen_tokens = 4;
  c.samples = 2;
  auto r = run_ar_bench(*model, *tok, test::cpu(1), c);
  ASSERT_TRUE(r.ok()) << r.error().str();
  const json& table = (*r)["table"];
  ASSERT_EQ(table.size(), 4u);
  EXPECT_EQ(table[0]["test"], "pp8");
  EXPECT_EQ(table[3]["test"], "tg4 @ d16");
  EXPECT_EQ(table[0]["model"], "llama 293K F32");
  EXPECT_EQ(table[0]["params"], (*r)["model"]["n_params"]);
  EXPECT_EQ(table[0]["threads"], 1);
  // pp8's samples are the report's prefill tok/s of its two L=8 samples.
  double sum = 0;
  for (const auto& s : (*r)["samples"])
    if (s["prompt_tokens"] == 8) sum += s["prefill_tok_s"].get<double>();
  EXPECT_NEAR(table[0]["avg_ts"].get<double>(), sum / 2, 1e-9 * sum);
}

}  // namespace
}  // namespace kakeya::engine
