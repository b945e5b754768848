#include "engine/presets/generate.h"

#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

#include "engine/llama.h"

namespace kakeya::engine {

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

Result<nlohmann::json> run_generate(const LlamaModel& model, const Tokenizer& tok, Backend& backend,
                                    const GenerateConfig& a, const std::function<void(const std::string&)>& on_text,
                                    const Progress& progress) {
  if (!valid_utf8(a.prompt)) return make_error("bad_param", "prompt is not valid UTF-8");
  if (a.max_new_tokens < 0) return make_error("bad_param", "--max-new-tokens must be >= 0");
  KAKEYA_TRY(check_sampling_params(a.sampling));
  KAKEYA_ASSIGN_OR_RETURN(std::unique_ptr<LlamaContext> context,
                          LlamaContext::create(model, backend, ContextOptions{a.n_ctx, a.n_batch}));
  LlamaContext& ctx = *context;
  const std::vector<int32_t> prompt_ids = tok.encode(a.prompt, tok.add_bos());
  if (prompt_ids.empty()) return make_error("bad_param", "--prompt encodes to no tokens");

  report_progress(progress, std::to_string(prompt_ids.size()) + " prompt tokens, up to " +
                                std::to_string(a.max_new_tokens) + " new, " +
                                std::to_string(backend.info().threads) + " threads");
  const auto t0 = std::chrono::steady_clock::now();
  KAKEYA_ASSIGN_OR_RETURN(std::vector<float> cur, ctx.eval(prompt_ids));
  const double prefill_s = seconds_since(t0);

  Sampler sampler(a.sampling);
  std::vector<int32_t> out_ids;
  std::string printed;
  std::string stop_reason = "max_new_tokens";
  size_t decode_evals = 0;
  const auto t1 = std::chrono::steady_clock::now();
  while (static_cast<int>(out_ids.size()) < a.max_new_tokens) {
    const int32_t id = sampler.sample(cur);
    out_ids.push_back(id);
    if (on_text) {  // stream: hand out what the decoded text gained
      const std::string text = tok.decode(out_ids);
      if (text.size() > printed.size() && text.compare(0, printed.size(), printed) == 0) {
        on_text(text.substr(printed.size()));
        printed = text;
      }
    }
    if (id == tok.eos() && !a.ignore_eos) {
      stop_reason = "eos";
      break;
    }
    if (static_cast<int>(out_ids.size()) == a.max_new_tokens) break;
    if (ctx.n_past() >= ctx.n_ctx()) {
      stop_reason = "context_full";
      break;
    }
    const int32_t one[1] = {id};
    KAKEYA_ASSIGN_OR_RETURN(cur, ctx.eval(one));
    ++decode_evals;
  }
  const double decode_s = seconds_since(t1);
  const std::string text = tok.decode(out_ids);

  nlohmann::json r = report_envelope("generate", a.backend, backend, &model, &ctx.weights());
  r["config"] = {{"prompt", a.prompt},
                 {"max_new_tokens", a.max_new_tokens},
                 {"temperature", a.sampling.temperature},
                 {"top_k", a.sampling.top_k},
                 {"top_p", a.sampling.top_p},
                 {"seed", a.sampling.seed},
                 {"ignore_eos", a.ignore_eos},
                 {"n_ctx", ctx.n_ctx()},
                 {"n_batch", a.n_batch}};
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
  return r;
}

}  // namespace kakeya::engine
