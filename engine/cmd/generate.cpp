// kakeya-engine generate: prefill a prompt, then decode token by token (greedy or sampled),
// streaming the text to stdout; writes DIR/report.json with provenance and timings.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "engine/cmd/cli_threads.h"
#include "engine/cmd/commands.h"
#include "engine/llama.h"
#include "engine/presets/report.h"
#include "engine/sampling.h"
#include "engine/tokenizer.h"

namespace kakeya::engine::cmd {
namespace {

struct GenerateArgs {
  std::string model;
  std::string prompt;             // --prompt
  std::string prompt_positional;  // after `--` (a prompt starting with '-' is still a value)
  int max_new_tokens = 64;
  SamplingParams sampling;
  int threads = 0;  // 0 = every logical CPU
  size_t n_ctx = 0;
  size_t n_batch = 512;
  bool ignore_eos = false;
  std::string out;
  bool json = false;
};

// True when `s` is well-formed UTF-8 (RFC 3629: no overlongs, no surrogates, <= U+10FFFF).
bool valid_utf8(const std::string& s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    int len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (len == 0 || i + static_cast<size_t>(len) > s.size()) return false;
    uint32_t cp = len == 1 ? c : len == 2 ? (c & 0x1F) : len == 3 ? (c & 0x0F) : (c & 0x07);
    for (int k = 1; k < len; ++k) {
      const auto cc = static_cast<unsigned char>(s[i + static_cast<size_t>(k)]);
      if ((cc >> 6) != 2) return false;
      cp = (cp << 6) | (cc & 0x3F);
    }
    static constexpr uint32_t kMin[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMin[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += static_cast<size_t>(len);
  }
  return true;
}

int run_generate(GenerateArgs a) {
  auto fail = [](const Error& e) {
    std::cerr << "generate: " << e.str() << "\n";
    return 1;
  };
  if (!a.prompt.empty() && !a.prompt_positional.empty())
    return fail(make_error("bad_param", "give the prompt either with --prompt or after --, not both"));
  if (!a.prompt_positional.empty()) a.prompt = a.prompt_positional;
  if (!valid_utf8(a.prompt)) return fail(make_error("bad_param", "prompt is not valid UTF-8"));
  auto threads = resolve_threads(a.threads);
  if (!threads.ok()) return fail(threads.error());
  a.threads = threads.value();
  if (a.max_new_tokens < 0) return fail(make_error("bad_param", "--max-new-tokens must be >= 0"));
  if (Status st = check_sampling_params(a.sampling); !st.ok()) return fail(st.error());
  auto model = LlamaModel::load(a.model);
  if (!model.ok()) return fail(model.error());
  auto tok = Tokenizer::from_gguf(model->gguf());
  if (!tok.ok()) return fail(tok.error());
  LlamaContext ctx(model.value(), ContextOptions{a.n_ctx, a.threads, a.n_batch});
  const std::vector<int32_t> prompt_ids = tok->encode(a.prompt, tok->add_bos());
  if (prompt_ids.empty()) return fail(make_error("bad_param", "--prompt encodes to no tokens"));

  std::cerr << "generate: " << prompt_ids.size() << " prompt tokens, up to " << a.max_new_tokens
            << " new, " << a.threads << " threads\n";
  const auto t0 = std::chrono::steady_clock::now();
  auto logits = ctx.eval(prompt_ids);
  if (!logits.ok()) return fail(logits.error());
  const double prefill_s = seconds_since(t0);

  Sampler sampler(a.sampling);
  std::vector<int32_t> out_ids;
  std::string printed;
  std::string stop_reason = "max_new_tokens";
  size_t decode_evals = 0;
  const auto t1 = std::chrono::steady_clock::now();
  std::vector<float> cur = std::move(logits).value();
  while (static_cast<int>(out_ids.size()) < a.max_new_tokens) {
    const int32_t id = sampler.sample(cur);
    out_ids.push_back(id);
    if (!a.json) {  // stream: print what the decoded text gained
      const std::string text = tok->decode(out_ids);
      if (text.size() > printed.size() && text.compare(0, printed.size(), printed) == 0) {
        std::cout << text.substr(printed.size()) << std::flush;
        printed = text;
      }
    }
    if (id == tok->eos() && !a.ignore_eos) {
      stop_reason = "eos";
      break;
    }
    if (static_cast<int>(out_ids.size()) == a.max_new_tokens) break;
    if (ctx.n_past() >= ctx.n_ctx()) {
      stop_reason = "context_full";
      break;
    }
    const int32_t one[1] = {id};
    auto next = ctx.eval(one);
    if (!next.ok()) return fail(next.error());
    ++decode_evals;
    cur = std::move(next).value();
  }
  const double decode_s = seconds_since(t1);
  if (!a.json) std::cout << "\n";
  const std::string text = tok->decode(out_ids);

  nlohmann::json r;
  r["kind"] = "generate";
  r["schema_version"] = 1;
  r["created_at"] = utc_now_rfc3339();
  r["config"] = {{"prompt", a.prompt},
                 {"max_new_tokens", a.max_new_tokens},
                 {"temperature", a.sampling.temperature},
                 {"top_k", a.sampling.top_k},
                 {"top_p", a.sampling.top_p},
                 {"seed", a.sampling.seed},
                 {"ignore_eos", a.ignore_eos},
                 {"n_ctx", ctx.n_ctx()},
                 {"n_batch", a.n_batch}};
  r["model"] = model_provenance(model.value());
  r["engine"] = engine_info(a.threads);
  r["env"] = env_summary();
  r["synthetic"] = model->synthetic();
  r["prompt_ids"] = prompt_ids;
  r["token_ids"] = out_ids;
  r["text"] = text;
  r["stop_reason"] = stop_reason;
  r["kv"] = {{"policy", ctx.kv().layer(0).policy()},
             {"n_tokens", ctx.n_past()},
             {"resident_bytes", ctx.kv().resident_bytes()}};
  r["timings"] = {{"prefill_s", prefill_s},
                  {"prefill_tokens", prompt_ids.size()},
                  {"prefill_tok_s", static_cast<double>(prompt_ids.size()) / prefill_s},
                  {"decode_s", decode_s},
                  {"decode_tokens", decode_evals},
                  {"decode_tok_s", decode_evals > 0 ? static_cast<double>(decode_evals) / decode_s : 0.0}};
  if (!a.out.empty()) {
    if (Status st = write_report(a.out, r); !st.ok()) return fail(st.error());
    std::cerr << "generate: wrote " << (std::filesystem::path(a.out) / "report.json").string() << "\n";
  }
  if (a.json) {
    std::cout << report_json_text(r) << "\n";
  } else {
    std::fprintf(stderr, "generate: prefill %zu tok in %.3f s (%.1f tok/s), decode %zu tok in %.3f s (%.1f tok/s), stop: %s\n",
                 prompt_ids.size(), prefill_s, static_cast<double>(prompt_ids.size()) / prefill_s,
                 decode_evals, decode_s, decode_evals ? static_cast<double>(decode_evals) / decode_s : 0.0,
                 stop_reason.c_str());
  }
  return 0;
}

}  // namespace

void add_generate(CLI::App& app, int& exit_code) {
  auto* sub = app.add_subcommand("generate", "Generate text from a prompt (greedy or sampled), streaming to stdout");
  auto a = std::make_shared<GenerateArgs>();
  sub->add_option("--model", a->model, "GGUF model file")->required()->check(CLI::ExistingFile);
  sub->add_option("--prompt", a->prompt, "Prompt text (or give it after --, e.g. `-- -x`)");
  sub->add_option("prompt", a->prompt_positional, "Prompt text as the last argument, after --");
  sub->add_option("--max-new-tokens", a->max_new_tokens, "Tokens to generate")->capture_default_str();
  sub->add_option("--temperature", a->sampling.temperature, "0 = greedy")->capture_default_str();
  sub->add_option("--top-k", a->sampling.top_k, "0 = all")->capture_default_str();
  sub->add_option("--top-p", a->sampling.top_p, "1 = all")->capture_default_str();
  sub->add_option("--seed", a->sampling.seed, "Sampling seed")->capture_default_str();
  sub->add_option("--threads", a->threads, "CPU threads (0 = all; more than the machine has is an error)")
      ->capture_default_str()
      ->check(CLI::Range(0, 1024));
  sub->add_option("--n-ctx", a->n_ctx, "Context length (0 = the model's)")->capture_default_str();
  sub->add_option("--n-batch", a->n_batch, "Prefill chunk in tokens")->capture_default_str()->check(CLI::Range(1, 65536));
  sub->add_flag("--ignore-eos", a->ignore_eos, "Do not stop at the end-of-sequence token");
  sub->add_option("--out", a->out, "Directory for report.json (created if missing)");
  sub->add_flag("--json", a->json, "Print the report JSON on stdout instead of streaming text");
  sub->callback([a, &exit_code] { exit_code = run_generate(*a); });
}

}  // namespace kakeya::engine::cmd
