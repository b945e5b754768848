#pragma once
// generate: prefill a prompt, then decode token by token (greedy or seeded sampling: temperature,
// top-k, top-p), the text handed out as it grows — llama-cli's one-shot mode (examples/main at
// llama.cpp c392e50) for what it shares:
//   * the prompt (with `chat`: first written in the model's chat template as one user message,
//     chat_template.h) is tokenized like llama-cli's: add_special (BOS/EOS as the file says) and
//     parse_special (control tokens in the text are tokens); an empty prompt is BOS alone when the
//     vocabulary adds one;
//   * display_prompt echoes the prompt's tokens before the continuation, each token as
//     token_to_piece(id, special) — what llama-cli prints unless --no-display-prompt;
//   * every generated token is handed out as token_to_piece(id, special) (`special`: control
//     tokens such as </s> or <|eot_id|> are rendered, as llama-cli's --special);
//   * generation stops after an end-of-generation token (Tokenizer::is_eog: EOS, EOT, EOM, …)
//     unless ignore_eos, after max_new_tokens, or when the context is full.
// For comparison with another engine: logits_out writes the logits each generated token was
// chosen from (presets/logits_file.h: row k for token k; raw logits, before temperature), and
// top_logprobs > 0 adds each token's log-probability and the k most likely alternatives.
//
// Report (kind "generate"): config, model, engine, env, synthetic, prompt_ids, token_ids (the
// end-of-generation token included when it stopped there), text (the continuation as rendered),
// stop_reason ("eos": an end-of-generation token, "max_new_tokens", "context_full"), chat (the template family, with chat),
// logprobs [{id, piece, logprob, top: [{id, piece, logprob}]}] (with top_logprobs; log-softmax of
// the raw logits, natural log), logits_out {path, rows, n_vocab, format} (with logits_out),
// kv {policy, n_tokens, resident_bytes measured}, timings {prefill_s, prefill_tokens,
// prefill_tok_s, decode_s, decode_tokens, decode_tok_s} (decode = the one-token evals after the
// prefill).
#include <cstddef>
#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "bridge/result.h"
#include "engine/backend.h"
#include "engine/model.h"
#include "engine/presets/report.h"
#include "engine/sampling.h"
#include "engine/tokenizer.h"

namespace kakeya::engine {

struct GenerateConfig {
  std::string prompt;
  int max_new_tokens = 64;
  SamplingParams sampling;
  bool ignore_eos = false;   // keep going past end-of-generation tokens
  bool special = false;      // render control tokens in the text (llama-cli --special)
  bool chat = false;         // the prompt is a user message in the model's chat template
  std::string chat_template; // with chat: a built-in name ("chatml", "llama3", …) or Jinja text
                             // instead of the model's tokenizer.chat_template
  bool display_prompt = true;  // echo the prompt's tokens through on_text first
  int top_logprobs = 0;      // > 0: per generated token, this many alternatives in the report
  std::string logits_out;    // non-empty: the .npy file of the generated positions' logits
  size_t n_ctx = 0;          // 0 = the model's context length
  size_t n_batch = 512;
  std::string backend = "cpu";  // as requested (--backend): reports compare it with what ran
};

// True when `s` is well-formed UTF-8 (RFC 3629: no overlongs, no surrogates, <= U+10FFFF).
bool valid_utf8(const std::string& s);

// The prompt's token ids as generate tokenizes them (see the header comment), and the chat
// family used (empty without chat). Errors: "bad_param" (an empty prompt and no BOS to start
// from), chat_template_from_gguf's and apply_chat_template's errors with chat.
struct PromptTokens {
  std::vector<int32_t> ids;
  std::string chat_template;  // llama.cpp's name of the family, e.g. "llama3"
};
Result<PromptTokens> tokenize_prompt(const LlamaModel& model, const Tokenizer& tok, const GenerateConfig& config);

// Runs on `backend`. `on_text` (may be empty) receives the echoed prompt (display_prompt) and
// then each generated token's text, in order; `progress` a line before decoding. Errors:
// "bad_param" (prompt not valid UTF-8, max_new_tokens < 0, top_logprobs < 0, bad sampling
// params), tokenize_prompt's, LogitsFile's "io", context errors.
Result<nlohmann::json> run_generate(const LlamaModel& model, const Tokenizer& tok, Backend& backend,
                                    const GenerateConfig& config,
                                    const std::function<void(const std::string& text)>& on_text = {},
                                    const Progress& progress = {});

}  // namespace kakeya::engine
