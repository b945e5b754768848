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
  bool no_display_prompt = false;
};

int run(Args a) {
  const std::string name = "generate";
  if (!a.config.prompt.empty() && !a.prompt_positional.empty())
    return fail(name, make_error("bad_param", "give the prompt either with --prompt or after --, not both"));
  if (!a.prompt_positional.empty()) a.config.prompt = a.prompt_positional;
  a.config.display_prompt = !a.no_display_prompt;
  a.config.chat = a.config.chat || !a.config.chat_template.empty();  // a template asks for chat
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
  GenerateConfig& c = a->config;
  sub->add_option("-p,--prompt", c.prompt, "Prompt text (or give it after --, e.g. `-- -x`)");
  sub->add_option("prompt", a->prompt_positional, "Prompt text as the last argument, after --");
  sub->add_option("-n,--n-predict,--max-new-tokens", c.max_new_tokens, "Tokens to generate")->capture_default_str();
  sub->add_option("--temperature,--temp", c.sampling.temperature, "0 = greedy")->capture_default_str();
  sub->add_option("--top-k", c.sampling.top_k, "0 = all")->capture_default_str();
  sub->add_option("--top-p", c.sampling.top_p, "1 = all")->capture_default_str();
  sub->add_option("-s,--seed", c.sampling.seed, "Sampling seed")->capture_default_str();
  // Flags that also take an explicit value (`--special false`) for the preset catalog, whose
  // argv cannot leave a token out; a bare flag means true, as in llama-cli.
  auto flag = [&](const std::string& name, bool& value, const std::string& help) {
    sub->add_flag(name, value, help + " (a bare flag means true; or give true/false)")->expected(0, 1);
  };
  flag("--ignore-eos", c.ignore_eos, "Do not stop at end-of-generation tokens (EOS, EOT, EOM)");
  flag("--special", c.special, "Render special (control) tokens such as </s> or <|eot_id|> in the output");
  flag("--chat", c.chat, "Write the prompt as a user message in the model's chat template");
  sub->add_option("--chat-template", c.chat_template,
                  "With --chat: this template (a built-in name such as chatml, llama3, mistral-v7, or Jinja text) "
                  "instead of the model's");
  sub->add_flag("--no-display-prompt", a->no_display_prompt, "Do not echo the prompt before the continuation");
  sub->add_option("--top-logprobs", c.top_logprobs,
                  "Per generated token, its log-probability and the K most likely alternatives in the report")
      ->capture_default_str()
      ->check(CLI::Range(0, 1000));
  sub->add_option("--logits-out", c.logits_out,
                  "Write the logits of every generated position to this .npy file (float32 [tokens][n_vocab])");
  sub->callback([a, &exit_code] { exit_code = run(*a); });
}

}  // namespace kakeya::engine::cmd
