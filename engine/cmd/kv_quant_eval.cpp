// kakeya-engine kv-quant-eval: identity / affine-8 / affine-4 KV storage on NIAH prompts;
// writes DIR/report.json (kind "kv-quant-eval", engine/presets/kv_quant_eval.h).
#include <iostream>
#include <memory>
#include <string>

#include "engine/cmd/commands.h"
#include "engine/cmd/flags.h"
#include "engine/presets/kv_quant_eval.h"

namespace kakeya::engine::cmd {
namespace {

struct Args {
  CommonFlags flags;
  KvQuantEvalConfig cfg;
  std::string lines = "20";
  std::string bits = "8,4";
};

int run(Args a) {
  const std::string name = "kv-quant-eval";
  auto lines = parse_int_list("--lines", a.lines, 1);
  if (!lines.ok()) return fail(name, lines.error());
  a.cfg.lines = lines.value();
  auto bits = parse_int_list("--bits", a.bits, 1);
  if (!bits.ok()) return fail(name, bits.error());
  a.cfg.bits = bits.value();
  a.cfg.n_batch = a.flags.n_batch;
  a.cfg.backend = a.flags.backend;
  auto backend = open_flag_backend(a.flags);
  if (!backend.ok()) return fail(name, backend.error());
  auto m = load_model(a.flags.model);
  if (!m.ok()) return fail(name, m.error());
  auto r = run_kv_quant_eval((*m)->model, (*m)->tok, **backend, a.cfg, stderr_progress(name));
  if (!r.ok()) return fail(name, r.error());
  if (Status st = emit_report(name, a.flags, r.value()); !st.ok()) return fail(name, st.error());
  if (a.flags.json) return 0;
  for (const auto& arm : (*r)["arms"]) {
    const auto& g = arm["aggregates"];
    std::cout << arm["name"].get<std::string>() << ": recall " << g["recall"].get<double>()
              << ", bits/value " << g["bits_per_value"].get<double>() << ", rel MSE "
              << g["rel_mse"].get<double>() << ", resident KV " << g["resident_kv_bytes_median"].get<double>()
              << " B\n";
  }
  return 0;
}

}  // namespace

void add_kv_quant_eval(CLI::App& app, int& exit_code) {
  auto* sub = app.add_subcommand("kv-quant-eval", "KV storage arms identity / affine-8 / affine-4 on NIAH prompts");
  auto a = std::make_shared<Args>();
  a->flags.n_batch = a->cfg.n_batch;
  add_common_flags(sub, a->flags, kModelRunFlags | kNBatchFlag | kOutFlag | kJsonFlag);
  sub->add_option("--seed", a->cfg.seed, "NIAH seed")->capture_default_str();
  sub->add_option("--lines", a->lines, "Haystack sizes (comma-separated)")->capture_default_str();
  sub->add_option("--samples", a->cfg.samples, "Samples per size")->capture_default_str()->check(CLI::Range(1, 10000));
  sub->add_option("--decode-tokens", a->cfg.decode_tokens, "Greedy tokens")->capture_default_str()->check(CLI::Range(1, 4096));
  sub->add_option("--bits", a->bits, "Quantized arms (comma-separated: 8, 4)")->capture_default_str();
  sub->add_option("--group", a->cfg.group, "Values per (scale, min) group")->capture_default_str()->check(CLI::Range(1, 4096));
  sub->callback([a, &exit_code] { exit_code = run(*a); });
}

}  // namespace kakeya::engine::cmd
