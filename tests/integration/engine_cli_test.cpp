// kakeya-engine as llama.cpp users type it: the real binary with short flags, the prompt echo,
// --json/--out reports, generate's comparison outputs, perplexity's printed estimate against
// llama-perplexity's (tests/data/perplexity) and ar-bench's table formats.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/harness/bus_world.h"
#include "tests/harness/paths.h"

namespace kakeya::testing {
namespace {

using nlohmann::json;

std::string stories() { return (models_dir() / "stories260K-f32.gguf").string(); }

CmdResult engine(std::vector<std::string> args) {
  args.insert(args.begin(), (binary_dir() / "kakeya-engine").string());
  return run_cmd(args, {}, 300);
}

json read_json(const std::filesystem::path& p) {
  std::ifstream in(p);
  EXPECT_TRUE(in.good()) << p;
  return json::parse(in);
}

TEST(EngineCli, GenerateTakesLlamaCppShortFlagsAndEchoesThePrompt) {
  TempDir out;
  auto r = engine({"generate", "-m", stories(), "-p", "Once upon a time", "-n", "4", "-t", "1", "-c", "64", "-b",
                   "8", "-s", "3", "--out", out.path().string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, " Once upon a time, there was a\n") << "the prompt's tokens, then the continuation";
  const json rep = read_json(out.path() / "report.json");
  EXPECT_EQ(rep["config"]["n_ctx"], 64);
  EXPECT_EQ(rep["config"]["n_batch"], 8);
  EXPECT_EQ(rep["config"]["seed"], 3);
  EXPECT_EQ(rep["config"]["max_new_tokens"], 4);
  EXPECT_EQ(rep["engine"]["threads"], 1);

  auto quiet = engine({"generate", "-m", stories(), "-n", "4", "-t", "1", "--no-display-prompt", "--",
                       "Once upon a time"});
  ASSERT_EQ(quiet.exit_code, 0) << quiet.err;
  EXPECT_EQ(quiet.out, ", there was a\n");
  auto special = engine({"generate", "-m", stories(), "-n", "1", "-t", "1", "--special", "-p", "Once"});
  ASSERT_EQ(special.exit_code, 0) << special.err;
  EXPECT_EQ(special.out.rfind("<s> Once", 0), 0u) << special.out;
  auto chat = engine({"generate", "-m", stories(), "-n", "1", "-t", "1", "--chat", "-p", "Hi"});
  EXPECT_EQ(chat.exit_code, 1);
  EXPECT_NE(chat.err.find("no_chat_template"), std::string::npos) << chat.err;
}

TEST(EngineCli, GenerateWritesTopLogprobsAndTheLogitsFile) {
  TempDir out;
  const auto npy = out.path() / "logits.npy";
  auto r = engine({"generate", "-m", stories(), "-p", "Once upon a time", "-n", "3", "-t", "1", "--top-logprobs",
                   "4", "--logits-out", npy.string(), "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json rep = json::parse(r.out);
  ASSERT_EQ(rep["logprobs"].size(), 3u);
  for (const auto& e : rep["logprobs"]) {
    EXPECT_EQ(e["top"].size(), 4u);
    EXPECT_LE(e["logprob"].get<double>(), 0.0);
  }
  EXPECT_EQ(rep["logits_out"]["rows"], 3);
  std::ifstream in(npy, std::ios::binary);
  std::string head(6, '\0');
  in.read(head.data(), 6);
  EXPECT_EQ(head, "\x93NUMPY");
  EXPECT_EQ(std::filesystem::file_size(npy), 128u + 3u * 512u * 4u);
}

// The estimate kakeya-engine prints is llama-perplexity's on the same text (four decimals as
// printed there), and the report says how it was computed.
TEST(EngineCli, PerplexityPrintsLlamaPerplexitysEstimate) {
  const json ref = read_json(data_dir() / "perplexity" / "llama-perplexity.json");
  const json& run = ref["runs"][0];
  ASSERT_EQ(run["args"], "-c 64");
  TempDir out;
  auto r = engine({"perplexity", "-m", stories(), "-f", (data_dir() / "perplexity" / "story.txt").string(), "-c",
                   "64", "-t", "1", "--out", out.path().string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("[1]", 0), 0u) << r.out;
  const size_t at = r.out.find("Final estimate: PPL = ");
  ASSERT_NE(at, std::string::npos) << r.out;
  double ppl = 0, pm = 0;
  ASSERT_EQ(std::sscanf(r.out.c_str() + at, "Final estimate: PPL = %lf +/- %lf", &ppl, &pm), 2);
  EXPECT_NEAR(ppl, run["ppl"].get<double>(), 6e-5);
  EXPECT_NEAR(pm, run["ppl_stderr"].get<double>(), 6e-6);
  const json rep = read_json(out.path() / "report.json");
  EXPECT_EQ(rep["kind"], "perplexity");
  EXPECT_EQ(rep["n_chunk"], run["n_chunk"]);
  EXPECT_EQ(rep["tokens"], ref["tokens"]);
  EXPECT_NE(r.err.find("[13/13]"), std::string::npos) << "progress per chunk: " << r.err;

  auto refused = engine({"perplexity", "-m", stories(), "-f", (data_dir() / "perplexity" / "story.txt").string(),
                         "--ctx", "512", "-t", "1"});
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_NE(refused.err.find("out_of_range"), std::string::npos) << refused.err;
}

TEST(EngineCli, ArBenchPrintsLlamaBenchTablesWithoutAnOutDir) {
  auto md = engine({"ar-bench", "-m", stories(), "-p", "8", "-n", "2", "-r", "2", "-t", "1"});
  ASSERT_EQ(md.exit_code, 0) << md.err;
  EXPECT_EQ(md.out.rfind("| model ", 0), 0u) << md.out;
  EXPECT_NE(md.out.find("|           pp8 |"), std::string::npos) << md.out;
  EXPECT_NE(md.out.find("|      tg2 @ d8 |"), std::string::npos) << md.out;
  auto csv = engine({"ar-bench", "-m", stories(), "-p", "8", "-n", "2", "-r", "2", "-t", "1", "-o", "csv"});
  ASSERT_EQ(csv.exit_code, 0) << csv.err;
  EXPECT_EQ(csv.out.rfind("model,size,params,backend,threads,test,", 0), 0u) << csv.out;
  auto js = engine({"ar-bench", "-m", stories(), "-p", "8", "-n", "2", "-r", "2", "-t", "1", "-o", "json"});
  ASSERT_EQ(js.exit_code, 0) << js.err;
  const json rows = json::parse(js.out);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0]["test"], "pp8");
  EXPECT_EQ(rows[1]["samples_ts"].size(), 2u);
  auto bad = engine({"ar-bench", "-m", stories(), "-o", "sql"});
  EXPECT_NE(bad.exit_code, 0);
}

// KAKEYA_CPU_ISA caps the kernel set the engine dispatches to (engine/cpu/quant.h): each cap runs
// the newest set at or below it that this CPU has, says so in the report and generates the same
// greedy text; a name that is no kernel set is refused, naming it.
TEST(EngineCli, KakeyaCpuIsaCapsTheKernelSetAndRefusesOtherNames) {
  const std::vector<std::string> args = {(binary_dir() / "kakeya-engine").string(),
                                         "generate", "-m", stories(), "-p", "Once upon a time", "-n", "4", "-t", "1",
                                         "--json"};
  auto best = run_cmd(args, {}, 300);
  ASSERT_EQ(best.exit_code, 0) << best.err;
  const json best_rep = json::parse(best.out);
  const std::vector<std::string> order = {"portable", "avx2", "avx512"};
  const auto rank = [&](const std::string& isa) { return std::find(order.begin(), order.end(), isa) - order.begin(); };
  const std::string newest = best_rep["engine"]["kernel_isa"];
  ASSERT_LT(rank(newest), 3) << newest;
  for (const std::string& cap : order) {
    auto r = run_cmd(args, {{"KAKEYA_CPU_ISA", cap}}, 300);
    ASSERT_EQ(r.exit_code, 0) << cap << ": " << r.err;
    const json rep = json::parse(r.out);
    EXPECT_EQ(rep["engine"]["kernel_isa"], order[static_cast<size_t>(std::min(rank(cap), rank(newest)))]) << cap;
    EXPECT_EQ(rep["engine"]["weights"]["layout"], cap == "portable" ? "row-major" : best_rep["engine"]["weights"]["layout"])
        << cap;
    EXPECT_EQ(rep["text"], best_rep["text"]) << cap;
  }
  auto bad = run_cmd(args, {{"KAKEYA_CPU_ISA", "avx9"}}, 300);
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("KAKEYA_CPU_ISA \"avx9\""), std::string::npos) << bad.err;
}

// KAKEYA_DENSE16 names the AVX-512 set's F16/BF16 mat-vec kernel (engine/cpu/quant.h
// Dense16Kernel): the report's engine.options.dense16_kernel says which ran, in full; a value
// that names no kernel is refused, naming it. Without the AVX-512 set the option is absent.
TEST(EngineCli, KakeyaDense16NamesTheKernelAndRefusesOtherValues) {
  const std::vector<std::string> args = {(binary_dir() / "kakeya-engine").string(),
                                         "generate", "-m", stories(), "-p", "Once upon a time", "-n", "2", "-t", "1",
                                         "--json"};
  auto plain = run_cmd(args, {}, 300);
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  const json plain_rep = json::parse(plain.out);
  const json& options = plain_rep["engine"]["options"];
  if (plain_rep["engine"]["kernel_isa"] != "avx512") {
    EXPECT_FALSE(options.contains("dense16_kernel")) << options.dump();
    return;
  }
  const std::string rule = options["dense16_kernel"];
  EXPECT_TRUE(rule == "one-row+vdpbf16ps" || rule == "one-row+fma" || rule == "two-streams+fma") << rule;
  for (const auto& [value, want] : std::vector<std::pair<std::string, std::string>>{
           {"two-streams+fma", "two-streams+fma"}, {"one-row+fma", "one-row+fma"}, {"", rule}}) {
    auto r = run_cmd(args, {{"KAKEYA_DENSE16", value}}, 300);
    ASSERT_EQ(r.exit_code, 0) << value << ": " << r.err;
    EXPECT_EQ(json::parse(r.out)["engine"]["options"]["dense16_kernel"], want) << value;
  }
  auto bad = run_cmd(args, {{"KAKEYA_DENSE16", "one_row"}}, 300);
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("KAKEYA_DENSE16 \"one_row\""), std::string::npos) << bad.err;
}

TEST(EngineCli, QuantizeWritesTheCopyInLlamaQuantizeArgumentOrderAndRefusesBadArguments) {
  TempDir dir;
  const std::string out = (dir.path() / "q8.gguf").string();
  auto r = engine({"quantize", "--json", "--pure", stories(), out, "Q8_0"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["kind"], "quantize");
  EXPECT_EQ(j["file_type"], "q8_0");
  EXPECT_EQ(j["tensors_retyped"], 32);  // token_embd, output, 6 per layer; ffn_down's rows of 172 stay F32
  auto check = engine({"check-model", "--json", "-m", out});
  ASSERT_EQ(check.exit_code, 0) << check.err;
  EXPECT_EQ(json::parse(check.out)["tensor_types"]["q8_0"], 32);

  // Without --pure, llama-quantize's rules: rows of 172 fit no Q8_0 block, so the copy is refused.
  const auto rows = engine({"quantize", stories(), out, "q8_0"});
  EXPECT_EQ(rows.exit_code, 1);
  EXPECT_NE(rows.err.find("tensor blk.0.ffn_down.weight"), std::string::npos) << rows.err;

  EXPECT_EQ(engine({"quantize", stories(), out, "q9_9"}).exit_code, 64);  // unknown type
  EXPECT_EQ(engine({"quantize", stories(), out}).exit_code, 64);          // no TYPE
  const auto same = engine({"quantize", stories(), stories(), "q8_0"});
  EXPECT_EQ(same.exit_code, 1);
  EXPECT_NE(same.err.find("is the input file"), std::string::npos) << same.err;
}

}  // namespace
}  // namespace kakeya::testing
