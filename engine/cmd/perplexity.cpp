// kakeya-engine perplexity: llama-perplexity's strided perplexity of a text file
// (engine/presets/perplexity.h); prints its "[i]value," line and final estimate.
#include <cstdio>
#include <memory>
#include <string>

#include "engine/cmd/commands.h"
#include "engine/cmd/flags.h"
#include "engine/presets/perplexity.h"

namespace kakeya::engine::cmd {
namespace {

constexpr size_t kDefaultCtx = 512;  // llama-perplexity's

struct Args {
  CommonFlags flags;
  PerplexityConfig config;
};

int run(Args a) {
  const std::string name = "perplexity";
  auto text = read_text_file(a.config.file);
  if (!text.ok()) return fail(name, text.error());
  a.config.n_ctx = a.flags.n_ctx == 0 ? kDefaultCtx : a.flags.n_ctx;
  a.config.n_batch = a.flags.n_batch;
  a.config.backend = a.flags.backend;
  auto backend = open_flag_backend(a.flags);
  if (!backend.ok()) return fail(name, backend.error());
  auto m = load_model(a.flags.model);
  if (!m.ok()) return fail(name, m.error());
  auto r = run_perplexity((*m)->model, (*m)->tok, **backend, *text, a.config, stderr_progress(name));
  if (!r.ok()) return fail(name, r.error());
  if (Status st = emit_report(name, a.flags, r.value()); !st.ok()) return fail(name, st.error());
  if (!a.flags.json) {
    for (const auto& row : (*r)["chunks"])
      std::printf("[%zu]%.4f,", row["chunk"].get<size_t>(), row["ppl_running"].get<double>());
    const auto& agg = (*r)["aggregates"];
    std::printf("\nFinal estimate: PPL = %.4f +/- %.5f\n", agg["ppl"].get<double>(), agg["ppl_stderr"].get<double>());
  }
  return 0;
}

}  // namespace

void add_perplexity(CLI::App& app, int& exit_code) {
  auto* sub = app.add_subcommand("perplexity", "Perplexity of a text file, computed as llama-perplexity computes it");
  auto a = std::make_shared<Args>();
  add_common_flags(sub, a->flags, kModelRunFlags | kNCtxFlag | kNBatchFlag | kOutFlag | kJsonFlag,
                   std::to_string(kDefaultCtx) + ", llama-perplexity's default");
  sub->add_option("-f,--file", a->config.file, "Text file to evaluate (e.g. wikitext-2's wiki.test.raw)")
      ->required()
      ->check(CLI::ExistingFile);
  sub->add_option("--chunks", a->config.chunks, "Evaluate at most this many chunks (0 = all)")
      ->capture_default_str()
      ->check(CLI::Range(0, 1 << 30));
  sub->callback([a, &exit_code] { exit_code = run(*a); });
}

}  // namespace kakeya::engine::cmd
