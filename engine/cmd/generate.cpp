// kakeya-engine generate: prefill a prompt, then decode token by token (greedy or sampled),
// streaming the text to stdout; writes DIR/report.json (engine/presets/generate.h).
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>

#include "engine/cmd/commands.h"
#include "engine/cmd/flags.h"
#include "engine/presets/generate.h"

namespace kakeya::engine::cmd {
namespace {

struct Args {
  CommonFlags flags;
  GenerateConfig config;
  std::string prompt_positional;  // after `--` (a prompt starting with '-' is still a value)
};

int run(Args a) {
  const std::string name = "generate";
  if (!a.config.prompt.empty() && !a.prompt_positional.empty())
    return fail(name, make_error("bad_param", "give the prompt either with --prompt or after --, not both"));
  if (!a.prompt_positional.empty()) a.config.prompt = a.prompt_positional;
  a.config.n_ctx = a.flags.n_ctx;
  a.config.n_batch = a.flags.n_batch;
  a.config.backend = a.flags.backend;
  auto backend = open_flag_backend(a.flags);
  if (!backend.ok()) return fail(name, backend.error());
  auto m = load_model(a.flags.model);
  if (!m.ok()) return fail(name, m.error());
  std::function<void(const std::string&)> stream;
  if (!a.flags.json) stream = [](const std::string& text) { std::cout << text << std::flush; };
  auto r = run_generate((*m)->model, (*m)->tok, **backend, a.config, stream, stderr_progress(name));
  if (!r.ok()) return fail(name, r.error());
  if (!a.flags.json) std::cout << "\n";
  if (Status st = emit_report(name, a.flags, r.value()); !st.ok()) return fail(name, st.error());
  if (!a.flags.json) {
    const auto& t = (*r)["timings"];
    std::fprintf(stderr, "generate: prefill %zu tok in %.3f s (%.1f tok/s), decode %zu tok in %.3f s (%.1f tok/s), stop: %s\n",
                 t["prefill_tokens"].get<size_t>(), t["prefill_s"].get<double>(), t["prefill_tok_s"].get<double>(),
                 t["decode_tokens"].get<size_t>(), t["decode_s"].get<double>(), t["decode_tok_s"].get<double>(),
                 (*r)["stop_reason"].get<std::string>().c_str());
  }
  return 0;
}

}  // namespace

void add_generate(CLI::App& app, int& exit_code) {
  auto* sub = app.add_subcommand("generate", "Generate text from a prompt (greedy or sampled), streaming to stdout");
  auto a = std::make_shared<Args>();
  add_common_flags(sub, a->flags, kModelRunFlags | kNCtxFlag | kNBatchFlag | kOutFlag | kJsonFlag);
  sub->add_option("--prompt", a->config.prompt, "Prompt text (or give it after --, e.g. `-- -x`)");
  sub->add_option("prompt", a->prompt_positional, "Prompt text as the last argument, after --");
  sub->add_option("--max-new-tokens", a->config.max_new_tokens, "Tokens to generate")->capture_default_str();
  sub->add_option("--temperature", a->config.sampling.temperature, "0 = greedy")->capture_default_str();
  sub->add_option("--top-k", a->config.sampling.top_k, "0 = all")->capture_default_str();
  sub->add_option("--top-p", a->config.sampling.top_p, "1 = all")->capture_default_str();
  sub->add_option("--seed", a->config.sampling.seed, "Sampling seed")->capture_default_str();
  sub->add_flag("--ignore-eos", a->config.ignore_eos, "Do not stop at the end-of-sequence token");
  sub->callback([a, &exit_code] { exit_code = run(*a); });
}

}  // namespace kakeya::engine::cmd
