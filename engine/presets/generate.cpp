#include "engine/presets/generate.h"

#include <chrono>
#include <cmath>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "engine/chat_template.h"
#include "engine/llama.h"
#include "engine/presets/logits_file.h"

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

Result<PromptTokens> tokenize_prompt(const LlamaModel& model, const Tokenizer& tok, const GenerateConfig& c) {
  PromptTokens out;
  std::string text = c.prompt;
  if (c.chat) {
    std::string tmpl = c.chat_template;
    if (tmpl.empty()) {
      KAKEYA_ASSIGN_OR_RETURN(tmpl, chat_template_from_gguf(model.gguf()));
    }
    KAKEYA_ASSIGN_OR_RETURN(const ChatTemplate family, detect_chat_template(tmpl));
    KAKEYA_ASSIGN_OR_RETURN(text, format_chat(family, {{"user", c.prompt}}, /*add_assistant=*/true));
    out.chat_template = std::string(chat_template_name(family));
  }
  // llama-cli: common_tokenize(ctx, prompt, add_special = true, parse_special = true).
  out.ids = tok.tokenize(text, /*add_special=*/true, /*parse_special=*/true);
  if (out.ids.empty()) {
    if (!tok.add_bos() || tok.bos() < 0) {
      return make_error("bad_param", "the prompt is empty and the vocabulary adds no BOS to start from");
    }
    out.ids.push_back(tok.bos());  // llama-cli starts an empty prompt from BOS
  }
  return out;
}

namespace {

// {id, piece, logprob} of `id` under log-probabilities logits − lse.
nlohmann::json logprob_entry(const Tokenizer& tok, std::span<const float> logits, double lse, int32_t id,
                             bool special) {
  return {{"id", id},
          {"piece", tok.token_to_piece(id, special)},
          {"logprob", static_cast<double>(logits[static_cast<size_t>(id)]) - lse}};
}

}  // namespace

Result<nlohmann::json> run_generate(const LlamaModel& model, const Tokenizer& tok, Backend& backend,
                                    const GenerateConfig& a, const std::function<void(const std::string&)>& on_text,
                                    const Progress& progress) {
  if (!valid_utf8(a.prompt)) return make_error("bad_param", "prompt is not valid UTF-8");
  if (a.max_new_tokens < 0) return make_error("bad_param", "--max-new-tokens must be >= 0");
  if (a.top_logprobs < 0) return make_error("bad_param", "--top-logprobs must be >= 0");
  KAKEYA_TRY(check_sampling_params(a.sampling));
  KAKEYA_ASSIGN_OR_RETURN(const PromptTokens prompt, tokenize_prompt(model, tok, a));
  KAKEYA_ASSIGN_OR_RETURN(std::unique_ptr<LlamaContext> context,
                          LlamaContext::create(model, backend, ContextOptions{a.n_ctx, a.n_batch}));
  LlamaContext& ctx = *context;
  const std::vector<int32_t>& prompt_ids = prompt.ids;
  std::optional<LogitsFile> logits_file;
  if (!a.logits_out.empty()) {
    KAKEYA_ASSIGN_OR_RETURN(LogitsFile f, LogitsFile::create(a.logits_out, model.hparams().n_vocab));
    logits_file.emplace(std::move(f));
  }

  if (on_text && a.display_prompt) {
    std::string echo;
    for (int32_t id : prompt_ids) echo += tok.token_to_piece(id, a.special);
    on_text(echo);
  }
  report_progress(progress, std::to_string(prompt_ids.size()) + " prompt tokens, up to " +
                                std::to_string(a.max_new_tokens) + " new, " +
                                std::to_string(backend.info().threads) + " threads");
  const auto t0 = std::chrono::steady_clock::now();
  KAKEYA_ASSIGN_OR_RETURN(std::vector<float> cur, ctx.eval(prompt_ids));
  const double prefill_s = seconds_since(t0);

  Sampler sampler(a.sampling);
  std::vector<int32_t> out_ids;
  std::string text;
  nlohmann::json logprobs = nlohmann::json::array();
  std::string stop_reason = "max_new_tokens";
  size_t decode_evals = 0;
  const auto t1 = std::chrono::steady_clock::now();
  while (static_cast<int>(out_ids.size()) < a.max_new_tokens) {
    const int32_t id = sampler.sample(cur);
    out_ids.push_back(id);
    if (logits_file) KAKEYA_TRY(logits_file->append(cur));
    if (a.top_logprobs > 0) {
      const double lse = log_sum_exp(cur);
      nlohmann::json entry = logprob_entry(tok, cur, lse, id, a.special);
      entry["top"] = nlohmann::json::array();
      for (int32_t alt : top_k_ids(cur, static_cast<size_t>(a.top_logprobs)))
        entry["top"].push_back(logprob_entry(tok, cur, lse, alt, a.special));
      logprobs.push_back(std::move(entry));
    }
    const std::string piece = tok.token_to_piece(id, a.special);
    text += piece;
    if (on_text && !piece.empty()) on_text(piece);
    if (tok.is_eog(id) && !a.ignore_eos) {
      stop_reason = "eos";  // an end-of-generation token (the name reports have always used)
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
  if (logits_file) KAKEYA_TRY(logits_file->finish());

  nlohmann::json r = report_envelope("generate", a.backend, backend, &model, &ctx.weights());
  r["config"] = {{"prompt", a.prompt},
                 {"max_new_tokens", a.max_new_tokens},
                 {"temperature", a.sampling.temperature},
                 {"top_k", a.sampling.top_k},
                 {"top_p", a.sampling.top_p},
                 {"seed", a.sampling.seed},
                 {"ignore_eos", a.ignore_eos},
                 {"special", a.special},
                 {"chat", a.chat},
                 {"display_prompt", a.display_prompt},
                 {"top_logprobs", a.top_logprobs},
                 {"n_ctx", ctx.n_ctx()},
                 {"n_batch", a.n_batch}};
  r["prompt_ids"] = prompt_ids;
  if (a.chat) r["chat"] = prompt.chat_template;
  r["token_ids"] = out_ids;
  r["text"] = text;
  r["stop_reason"] = stop_reason;
  if (a.top_logprobs > 0) r["logprobs"] = logprobs;
  if (logits_file) {
    r["logits_out"] = {{"path", a.logits_out},
                       {"rows", logits_file->rows()},
                       {"n_vocab", model.hparams().n_vocab},
                       {"format", "npy float32 [rows][n_vocab]: row k holds the raw logits token k was chosen from"}};
  }
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
