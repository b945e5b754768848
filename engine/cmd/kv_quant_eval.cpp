// kakeya-engine kv-quant-eval: identity / affine-8 / affine-4 KV storage on NIAH prompts;
// writes DIR/report.json (kind "kv-quant-eval", engine/presets/kv_quant_eval.h).
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "engine/cmd/commands.h"
#include "engine/presets/kv_quant_eval.h"
#include "engine/presets/report.h"

namespace kakeya::engine::cmd {
namespace {

struct Args {
  std::string model;
  KvQuantEvalConfig cfg;
  std::string out;
};

int run(const Args& a) {
  auto fail = [](const Error& e) {
    std::cerr << "kv-quant-eval: " << e.str() << "\n";
    return 1;
  };
  auto model = LlamaModel::load(a.model);
  if (!model.ok()) return fail(model.error());
  auto tok = Tokenizer::from_gguf(model->gguf());
  if (!tok.ok()) return fail(tok.error());
  auto r = run_kv_quant_eval(model.value(), tok.value(), a.cfg);
  if (!r.ok()) return fail(r.error());
  if (!a.out.empty()) {
    if (Status st = write_report(a.out, r.value()); !st.ok()) return fail(st.error());
  }
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
  a->cfg.threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  sub->add_option("--model", a->model, "GGUF model file")->required()->check(CLI::ExistingFile);
  sub->add_option("--seed", a->cfg.seed, "NIAH seed")->capture_default_str();
  sub->add_option("--lines", a->cfg.lines, "Haystack sizes (repeat or comma-separate)")->delimiter(',')->capture_default_str();
  sub->add_option("--samples", a->cfg.samples, "Samples per size")->capture_default_str()->check(CLI::Range(1, 10000));
  sub->add_option("--decode-tokens", a->cfg.decode_tokens, "Greedy tokens")->capture_default_str()->check(CLI::Range(1, 4096));
  sub->add_option("--bits", a->cfg.bits, "Quantized arms (8, 4)")->delimiter(',')->capture_default_str();
  sub->add_option("--group", a->cfg.group, "Values per (scale, min) group")->capture_default_str()->check(CLI::Range(1, 4096));
  sub->add_option("--threads", a->cfg.threads, "CPU threads")->capture_default_str()->check(CLI::Range(1, 1024));
  sub->add_option("--out", a->out, "Directory for report.json");
  sub->callback([a, &exit_code] { exit_code = run(*a); });
}

}  // namespace kakeya::engine::cmd
