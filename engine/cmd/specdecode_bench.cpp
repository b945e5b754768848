// kakeya-engine specdecode-bench: AR vs speculative decoding (engine/presets/specdecode_bench.h).
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>

#include "engine/cmd/commands.h"
#include "engine/cmd/flags.h"
#include "engine/presets/specdecode_bench.h"

namespace kakeya::engine::cmd {
namespace {

struct Args {
  CommonFlags flags;
  SpecBenchConfig config;
  BackendOptions cpu;
  std::string block_sizes = "2,4,8";
  std::string verify_sizes = "1,2,4,8,16";
  std::string verify_mode = "quantized";
  std::string draft_model;  // --draft-model PATH: same as --draft gguf:PATH
  bool draft_given = false;
};

int run(Args& a) {
  const std::string name = "specdecode-bench";
  if (!a.draft_model.empty()) {
    if (a.draft_given) return fail(name, make_error("bad_param", "give either --draft or --draft-model, not both"));
    a.config.draft = "gguf:" + a.draft_model;
  }
  auto bs = parse_int_list("--block-sizes", a.block_sizes, 1);
  if (!bs.ok()) return fail(name, bs.error());
  a.config.block_sizes = bs.value();
  auto vs = parse_int_list("--verify-sizes", a.verify_sizes, 1);
  if (!vs.ok()) return fail(name, vs.error());
  a.config.verify_sizes = vs.value();
  // Verify blocks on the CPU backend: its batched matmul mode (cpu/cpu_backend.h).
  if (a.verify_mode != "quantized" && a.verify_mode != "sgemm") {
    return fail(name, make_error("bad_param", "--verify-mode \"" + a.verify_mode + "\" is not quantized or sgemm"));
  }
  a.cpu.batched_matmul = a.verify_mode;
  a.config.model = a.flags.model;
  a.config.n_ctx = a.flags.n_ctx;
  a.config.backend = a.flags.backend;
  auto backend = open_flag_backend(a.flags, a.cpu);
  if (!backend.ok()) return fail(name, backend.error());
  // Draft models on a backend of their own: the weight layout of the target's, the default
  // batched matmul (--verify-mode is the target's).
  BackendOptions draft_options;
  draft_options.weight_layout = a.cpu.weight_layout;
  auto draft_backend = open_flag_backend(a.flags, draft_options);
  if (!draft_backend.ok()) return fail(name, draft_backend.error());
  auto r = run_specdecode_bench(a.config, **backend, draft_backend->get(), stderr_progress(name));
  if (!r.ok()) return fail(name, r.error());
  const nlohmann::json& rep = r.value();
  if (Status st = emit_report(name, a.flags, rep); !st.ok()) return fail(name, st.error());
  if (a.flags.json) return 0;
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
  add_common_flags(sub, a->flags, kModelRunFlags | kNCtxFlag | kOutRequiredFlag | kJsonFlag,
                   "the model's, or enough for the prompts, tokens and blocks");
  auto* draft = sub->add_option("--draft", a->config.draft, "Draft: gguf:PATH, layers:K, quant:q4_0|q8_0, lookup:N")
                    ->capture_default_str();
  sub->add_option("--draft-model", a->draft_model,
                  "Draft GGUF sharing the target's vocabulary (= --draft gguf:PATH; for presets whose draft "
                  "comes from the runner's model registry)")
      ->check(CLI::ExistingFile);
  sub->add_option("--block-sizes", a->block_sizes, "Comma-separated draft block sizes")->capture_default_str();
  sub->add_option("--samples", a->config.samples, "Timed prompts (>= 5 for the gate)")->capture_default_str();
  sub->add_option("--gen-tokens", a->config.gen_tokens, "Generated tokens per sample")->capture_default_str();
  sub->add_option("--workload", a->config.workload, "stories, niah, code, or file (--prompts-file)")->capture_default_str();
  sub->add_option("--prompts-file", a->config.prompts_file,
                  "workload file: JSON {\"prompts\": [...], \"warmup\": \"...\"} (e.g. what tools/train_pair/prompts.py writes)")
      ->check(CLI::ExistingFile);
  sub->add_option("--verify-mode", a->verify_mode,
                  "cpu backend, batched matmuls of prefill and verify: quantized (verify agrees with decode) or sgemm")
      ->capture_default_str();
  sub->add_option("--verify-sizes", a->verify_sizes, "Block sizes for the verify cost curve (empty: skip)")->capture_default_str();
  sub->add_option("--verify-reps", a->config.verify_reps, "Timed repeats per verify size")->capture_default_str();
  sub->add_option("--ignore-eos", a->config.ignore_eos,
                  "true: keep decoding past EOS in both arms (for models that answer in a few tokens)")
      ->capture_default_str();
  sub->add_option("--weight-layout", a->cpu.weight_layout,
                  "cpu backend: auto (packed when the CPU has AVX2 or AVX-512); packed: matmul weights of the target "
                  "and model drafts copied into huge pages, Q4_0/Q8_0 in the row-interleaved layout of the packed "
                  "kernels; row-major: read in place from the file")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "packed", "row-major"}));
  sub->add_option("--temp-dir", a->config.temp_dir, "Directory for the temporary quantized draft copy")->capture_default_str();
  sub->callback([a, draft, &exit_code] {
    a->draft_given = draft->count() > 0;
    exit_code = run(*a);
  });
}

}  // namespace kakeya::engine::cmd
