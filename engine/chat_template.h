#pragma once
// Chat prompts: which chat format a model's `tokenizer.chat_template` asks for, and the prompt
// text of a conversation in that format.
//
// Reference behaviour: llama.cpp c392e50, src/llama-chat.cpp — `llm_chat_detect_template` (a
// built-in name, else substrings of the Jinja text, tested in llama.cpp's order) and
// `llm_chat_apply_template` (the prompt each family's formatter writes). Like llama.cpp's
// built-in formatter this does not run Jinja; unlike llama.cpp, which falls back to ChatML when a
// model has no template, a template that is absent or not recognised is an error.
//
// Detected, as llama.cpp detects them: every llama.cpp family (ChatTemplate). Formatted: ChatML
// (Qwen), Llama-3, Llama-2 and its three variants, Mistral v1/v3/v3-tekken/v7, Gemma, Phi-3.
// The other families are detected (so a Zephyr template is never taken for something else) and
// refused by name.
//
// The prompt carries no BOS: llama-cli tokenizes it with add_special = true (BOS when the
// vocabulary adds one) and parse_special = true (the template's control tokens as tokens).

#include <string>
#include <string_view>
#include <vector>

#include "bridge/result.h"

namespace kakeya::engine {

class GgufFile;

// llama.cpp's chat formats (llm_chat_template), one per built-in name.
enum class ChatTemplate {
  kChatml,
  kLlama2,
  kLlama2Sys,
  kLlama2SysBos,
  kLlama2SysStrip,
  kMistralV1,
  kMistralV3,
  kMistralV3Tekken,
  kMistralV7,
  kPhi3,
  kPhi4,
  kFalcon3,
  kZephyr,
  kMonarch,
  kGemma,
  kOrion,
  kOpenchat,
  kVicuna,
  kVicunaOrca,
  kDeepseek,
  kDeepseek2,
  kDeepseek3,
  kCommandR,
  kLlama3,
  kChatglm3,
  kChatglm4,
  kGlmedge,
  kMinicpm,
  kExaone3,
  kRwkvWorld,
  kGranite,
  kGigachat,
  kMegrez,
};

struct ChatMessage {
  std::string role;  // "system", "user", "assistant" (others pass through where the format allows)
  std::string content;
};

// llama.cpp's built-in name of a family ("chatml", "llama3", "mistral-v7", …).
std::string_view chat_template_name(ChatTemplate family);

// Whether format_chat() writes this family.
bool chat_template_supported(ChatTemplate family);

// The family of `tmpl`: a built-in name, or a Jinja template recognised by llama.cpp's
// substrings. Errors: "unknown_chat_template" quoting (the start of) the template.
Result<ChatTemplate> detect_chat_template(std::string_view tmpl);

// The prompt of `messages` in `family`'s format; with `add_assistant`, followed by the opening of
// the assistant's turn where the format has one (ChatML, Llama-3, Gemma, Phi-3; Llama-2 and
// Mistral prompts end in "[/INST]" either way). Errors: "unsupported_chat_template" naming the
// family and listing the supported ones.
Result<std::string> format_chat(ChatTemplate family, const std::vector<ChatMessage>& messages,
                                bool add_assistant);

// detect_chat_template + format_chat: (template, messages, add_assistant) → prompt text.
Result<std::string> apply_chat_template(std::string_view tmpl, const std::vector<ChatMessage>& messages,
                                        bool add_assistant);

// The GGUF's `tokenizer.chat_template`. Errors: "no_chat_template" when the key is absent; GGUF
// read errors.
Result<std::string> chat_template_from_gguf(const GgufFile& gguf);

}  // namespace kakeya::engine
