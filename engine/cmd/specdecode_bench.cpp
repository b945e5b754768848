// kakeya-engine specdecode-bench: AR vs speculative decoding (engine/presets/specdecode_bench.h).
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>

#include "engine/cmd/commands.h"
#include "engine/presets/report.h"
#include "engine/presets/specdecode_bench.h"

namespace kakeya::engine::cmd {
namespace {

struct Args {
  SpecBenchConfig config;
  std::string block_sizes = "2,4,8";
  std::string verify_sizes = "1,2,4,8,16";
  std::string verify_mode = "quantized";
  std::string weight_layout = "auto";
  std::string draft_model;  // --draft-model PATH: same as --draft gguf:PATH
  bool draft_given = false;
  std::string out;
  bool json = false;
};

Result<std::vector<int>> parse_list(const std::string& flag, const std::string& s) {
  std::vector<int> v;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.empty()) continue;
    try {
      size_t used = 0;
      const int x = std::stoi(item, &used);
      if (used != item.size() || x < 1) throw std::invalid_argument(item);
      v.push_back(x);
    } catch (...) {
      return make_error("bad_param", flag + ": \"" + item + "\" is not a positive integer");
    }
  }
  return v;
}

int run(Args& a) {
  auto fail = [](const Error& e) {
    std::cerr << "specdecode-bench: " << e.str() << "\n";
    return 1;
  };
  if (!a.draft_model.empty()) {
    if (a.draft_given) return fail(make_error("bad_param", "give either --draft or --draft-model, not both"));
    a.config.draft = "gguf:" + a.draft_model;
  }
  auto bs = parse_list("--block-sizes", a.block_sizes);
  if (!bs.ok()) return fail(bs.error());
  a.config.block_sizes = bs.value();
  auto vs = parse_list("--verify-sizes", a.verify_sizes);
  if (!vs.ok()) return fail(vs.error());
  a.config.verify_sizes = vs.value();
  a.config.pack_rows = pack_rows_for_layout(a.weight_layout);
  if (a.verify_mode == "quantized") {
    a.config.verify_mode = MatmulMode::kQuantizedActivations;
  } else if (a.verify_mode == "sgemm") {
    a.config.verify_mode = MatmulMode::kSgemm;
  } else {
    return fail(make_error("bad_param", "--verify-mode \"" + a.verify_mode + "\" is not quantized or sgemm"));
  }
  auto r = run_specdecode_bench(a.config, [](const std::string& s) { std::cerr << "specdecode-bench: " << s << "\n"; });
  if (!r.ok()) return fail(r.error());
  const nlohmann::json& rep = r.value();
  if (Status st = write_report(a.out, rep); !st.ok()) return fail(st.error());
  if (a.json) {
    std::cout << report_json_text(rep) << "\n";
    return 0;
  }
  std::printf("%-10s %14s %12s %12s %10s\n", "arm", "decode tok/s", "tok/forward", "acceptance", "ratio");
  for (const auto& arm : rep["arms"]) {
    const auto& g = arm["aggregates"];
    double ratio = 1.0;
    for (const auto& c : rep["comparisons"])
      if (c["candidate"] == arm["name"]) ratio = c["ratio"].get<double>();
    std::printf("%-10s %14.1f %12.2f %12.3f %10.2f\n", arm["name"].get<std::string>().c_str(),
                g["decode_tok_s_median"].get<double>(), g["tokens_per_forward_median"].get<double>(),
                g["acceptance"].get<double>(), ratio);
  }
  std::printf("lossless: %s\n", rep["lossless"]["equal"].get<bool>() ? "yes" : "NO");
  return 0;
}

}  // namespace

void add_specdecode_bench(CLI::App& app, int& exit_code) {
  auto* sub = app.add_subcommand("specdecode-bench", "Benchmark speculative vs autoregressive decoding");
  auto a = std::make_shared<Args>();
  a->config.threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  sub->add_option("--model", a->config.model, "Target GGUF model")->required()->check(CLI::ExistingFile);
  auto* draft = sub->add_option("--draft", a->config.draft, "Draft: gguf:PATH, layers:K, quant:q4_0|q8_0, lookup:N")
                    ->capture_default_str();
  sub->add_option("--draft-model", a->draft_model,
                  "Draft GGUF sharing the target's vocabulary (= --draft gguf:PATH; for presets whose draft "
                  "comes from the runner's model registry)")
      ->check(CLI::ExistingFile);
  sub->add_option("--block-sizes", a->block_sizes, "Comma-separated draft block sizes")->capture_default_str();
  sub->add_option("--samples", a->config.samples, "Timed prompts (>= 5 for the gate)")->capture_default_str();
  sub->add_option("--gen-tokens", a->config.gen_tokens, "Generated tokens per sample")->capture_default_str();
  sub->add_option("--workload", a->config.workload, "stories, niah or code")->capture_default_str();
  sub->add_option("--threads", a->config.threads, "CPU threads")->capture_default_str()->check(CLI::Range(1, 1024));
  sub->add_option("--n-ctx", a->config.n_ctx, "Context length (0 = automatic)")->capture_default_str();
  sub->add_option("--verify-mode", a->verify_mode, "Batched verify matmuls: quantized (agrees with decode) or sgemm")->capture_default_str();
  sub->add_option("--verify-sizes", a->verify_sizes, "Block sizes for the verify cost curve (empty: skip)")->capture_default_str();
  sub->add_option("--verify-reps", a->config.verify_reps, "Timed repeats per verify size")->capture_default_str();
  sub->add_option("--ignore-eos", a->config.ignore_eos,
                  "true: keep decoding past EOS in both arms (for models that answer in a few tokens)")
      ->capture_default_str();
  sub->add_option("--weight-layout", a->weight_layout,
                  "auto: packed when the CPU has AVX2 or AVX-512; packed: Q4_0/Q8_0 weights of the target and "
                  "model drafts in the row-interleaved layout of the packed kernels; row-major: as stored")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "packed", "row-major"}));
  sub->add_option("--temp-dir", a->config.temp_dir, "Directory for the temporary quantized draft copy")->capture_default_str();
  sub->add_option("--out", a->out, "Directory for report.json (created if missing)")->required();
  sub->add_flag("--json", a->json, "Print the report JSON on stdout instead of a table");
  sub->callback([a, draft, &exit_code] {
    a->draft_given = draft->count() > 0;
    exit_code = run(*a);
  });
}

}  // namespace kakeya::engine::cmd
