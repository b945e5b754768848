// kakeya-engine ar-bench: autoregressive prefill/decode throughput (engine/presets/ar_bench.h).
#include <cstdio>
#include <memory>
#include <string>

#include "engine/cmd/commands.h"
#include "engine/cmd/flags.h"
#include "engine/presets/ar_bench.h"
#include "engine/presets/bench_table.h"

namespace kakeya::engine::cmd {
namespace {

struct Args {
  CommonFlags flags;
  ArBenchConfig config;
  std::string prompt_lengths = "16,128,512";
  std::string output = "md";  // the table on stdout: md, csv or json (llama-bench's -o)
  BackendOptions cpu;
};

int run(Args a) {
  const std::string name = "ar-bench";
  auto lengths = parse_int_list("--prompt-lengths", a.prompt_lengths, 1);
  if (!lengths.ok()) return fail(name, lengths.error());
  a.config.prompt_lengths.assign(lengths->begin(), lengths->end());
  a.config.n_ctx = a.flags.n_ctx;
  a.config.n_batch = a.flags.n_batch;
  a.config.backend = a.flags.backend;
  auto backend = open_flag_backend(a.flags, a.cpu);
  if (!backend.ok()) return fail(name, backend.error());
  auto m = load_model(a.flags.model);
  if (!m.ok()) return fail(name, m.error());
  auto r = run_ar_bench((*m)->model, (*m)->tok, **backend, a.config, stderr_progress(name));
  if (!r.ok()) return fail(name, r.error());
  if (Status st = emit_report(name, a.flags, r.value()); !st.ok()) return fail(name, st.error());
  if (!a.flags.json) {
    auto rows = ar_bench_table(*r);
    if (!rows.ok()) return fail(name, rows.error());
    auto table = format_bench_table(*rows, a.output);
    if (!table.ok()) return fail(name, table.error());
    std::fputs(table->c_str(), stdout);
  }
  return 0;
}

}  // namespace

void add_ar_bench(CLI::App& app, int& exit_code) {
  auto* sub = app.add_subcommand("ar-bench", "Benchmark autoregressive prefill and decode throughput");
  auto a = std::make_shared<Args>();
  add_common_flags(sub, a->flags, kModelRunFlags | kNCtxFlag | kNBatchFlag | kOutFlag | kJsonFlag);
  // Short names as llama-bench's: -p prompt sizes, -n generated tokens, -r repetitions, -o format.
  sub->add_option("-p,--prompt-lengths,--n-prompt", a->prompt_lengths, "Comma-separated prompt lengths in tokens")
      ->capture_default_str();
  sub->add_option("-n,--gen-tokens,--n-gen", a->config.gen_tokens, "Decode tokens per sample")->capture_default_str();
  sub->add_option("-r,--samples,--repetitions", a->config.samples, "Timed samples per prompt length")
      ->capture_default_str();
  sub->add_option("-o,--output", a->output,
                  "The table printed on stdout, as llama-bench prints it: md, csv or json (--json prints the "
                  "whole report instead)")
      ->capture_default_str()
      ->check(CLI::IsMember({"md", "csv", "json"}));
  sub->add_option("--weight-layout", a->cpu.weight_layout,
                  "cpu backend: auto (packed when the CPU has AVX2 or AVX-512); packed: matmul weights copied into "
                  "huge pages, Q4_0/Q8_0 in the row-interleaved layout of the packed kernels, the others as stored; "
                  "row-major: read in place from the file")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "packed", "row-major"}));
  sub->add_option("--batched-matmul", a->cpu.batched_matmul,
                  "cpu backend, prefill matmuls: auto (the engine's GEMM kernels from 32 tokens, the decode kernels below), sgemm (dequantize + OpenBLAS) or "
                  "quantized (the decode kernels, weights reused from cache across the batch)")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "sgemm", "quantized"}));
  sub->callback([a, &exit_code] { exit_code = run(*a); });
}

}  // namespace kakeya::engine::cmd
