#include "engine/chat_template.h"

#include <optional>
#include <sstream>

#include "engine/gguf.h"

namespace kakeya::engine {
namespace {

struct Family {
  ChatTemplate family;
  std::string_view name;  // llama.cpp's LLM_CHAT_TEMPLATES key
  bool supported;         // format_chat() writes it
};

constexpr Family kFamilies[] = {
    {ChatTemplate::kChatml, "chatml", true},
    {ChatTemplate::kLlama2, "llama2", true},
    {ChatTemplate::kLlama2Sys, "llama2-sys", true},
    {ChatTemplate::kLlama2SysBos, "llama2-sys-bos", true},
    {ChatTemplate::kLlama2SysStrip, "llama2-sys-strip", true},
    {ChatTemplate::kMistralV1, "mistral-v1", true},
    {ChatTemplate::kMistralV3, "mistral-v3", true},
    {ChatTemplate::kMistralV3Tekken, "mistral-v3-tekken", true},
    {ChatTemplate::kMistralV7, "mistral-v7", true},
    {ChatTemplate::kPhi3, "phi3", true},
    {ChatTemplate::kPhi4, "phi4", false},
    {ChatTemplate::kFalcon3, "falcon3", false},
    {ChatTemplate::kZephyr, "zephyr", false},
    {ChatTemplate::kMonarch, "monarch", false},
    {ChatTemplate::kGemma, "gemma", true},
    {ChatTemplate::kOrion, "orion", false},
    {ChatTemplate::kOpenchat, "openchat", false},
    {ChatTemplate::kVicuna, "vicuna", false},
    {ChatTemplate::kVicunaOrca, "vicuna-orca", false},
    {ChatTemplate::kDeepseek, "deepseek", false},
    {ChatTemplate::kDeepseek2, "deepseek2", false},
    {ChatTemplate::kDeepseek3, "deepseek3", false},
    {ChatTemplate::kCommandR, "command-r", false},
    {ChatTemplate::kLlama3, "llama3", true},
    {ChatTemplate::kChatglm3, "chatglm3", false},
    {ChatTemplate::kChatglm4, "chatglm4", false},
    {ChatTemplate::kGlmedge, "glmedge", false},
    {ChatTemplate::kMinicpm, "minicpm", false},
    {ChatTemplate::kExaone3, "exaone3", false},
    {ChatTemplate::kRwkvWorld, "rwkv-world", false},
    {ChatTemplate::kGranite, "granite", false},
    {ChatTemplate::kGigachat, "gigachat", false},
    {ChatTemplate::kMegrez, "megrez", false},
};

const Family& family_of(ChatTemplate t) {
  for (const Family& f : kFamilies) {
    if (f.family == t) return f;
  }
  return kFamilies[0];  // unreachable: every enumerator is in the table
}

// llama-chat.cpp's trim: C isspace ("C" locale) at both ends.
std::string trim(std::string_view s) {
  auto space = [](char c) { return c == ' ' || (c >= '\t' && c <= '\r'); };
  size_t b = 0;
  size_t e = s.size();
  while (b < e && space(s[b])) ++b;
  while (e > b && space(s[e - 1])) --e;
  return std::string(s.substr(b, e - b));
}

// The family of a Jinja template by llama.cpp's substring tests, in its order; nullopt when none
// matches.
std::optional<ChatTemplate> detect_by_content(std::string_view tmpl) {
  auto has = [&](std::string_view s) { return tmpl.find(s) != std::string_view::npos; };
  using T = ChatTemplate;
  if (has("<|im_start|>")) return has("<|im_sep|>") ? T::kPhi4 : T::kChatml;
  if (tmpl.substr(0, 7) == "mistral" || has("[INST]")) {
    if (has("[SYSTEM_PROMPT]")) return T::kMistralV7;
    if (has("' [INST] ' + system_message") || has("[AVAILABLE_TOOLS]")) {
      if (has(" [INST]")) return T::kMistralV1;
      if (has("\"[INST]\"")) return T::kMistralV3Tekken;
      return T::kMistralV3;
    }
    if (has("content.strip()")) return T::kLlama2SysStrip;
    if (has("bos_token + '[INST]")) return T::kLlama2SysBos;
    if (has("<<SYS>>")) return T::kLlama2Sys;
    return T::kLlama2;
  }
  if (has("<|assistant|>") && has("<|end|>")) return T::kPhi3;
  if (has("<|assistant|>") && has("<|user|>")) return has("</s>") ? T::kFalcon3 : T::kGlmedge;
  if (has("<|user|>") && has("<|endoftext|>")) return T::kZephyr;
  if (has("bos_token + message['role']")) return T::kMonarch;
  if (has("<start_of_turn>")) return T::kGemma;
  if (has("'\\n\\nAssistant: ' + eos_token")) return T::kOrion;
  if (has("GPT4 Correct ")) return T::kOpenchat;
  if (has("USER: ") && has("ASSISTANT: ")) return has("SYSTEM: ") ? T::kVicunaOrca : T::kVicuna;
  if (has("### Instruction:") && has("<|EOT|>")) return T::kDeepseek;
  if (has("<|START_OF_TURN_TOKEN|>") && has("<|USER_TOKEN|>")) return T::kCommandR;
  if (has("<|start_header_id|>") && has("<|end_header_id|>")) return T::kLlama3;
  if (has("[gMASK]sop")) return T::kChatglm3;
  if (has("[gMASK]<sop>")) return T::kChatglm4;
  if (has("<\xe7\x94\xa8\xe6\x88\xb7>")) return T::kMinicpm;  // <用户>
  if (has("'Assistant: ' + message['content'] + eos_token")) return T::kDeepseek2;
  if (has("<\xef\xbd\x9c" "Assistant\xef\xbd\x9c>") && has("<\xef\xbd\x9c" "User\xef\xbd\x9c>") &&
      has("<\xef\xbd\x9c" "end\xe2\x96\x81of\xe2\x96\x81sentence\xef\xbd\x9c>")) {
    return T::kDeepseek3;  // <｜Assistant｜> <｜User｜> <｜end▁of▁sentence｜>
  }
  if (has("[|system|]") && has("[|assistant|]") && has("[|endofturn|]")) return T::kExaone3;
  if (has("rwkv-world")) return T::kRwkvWorld;
  if (has("<|start_of_role|>")) return T::kGranite;
  if (has("message['role'] + additional_special_tokens[0] + message['content'] + "
          "additional_special_tokens[1]")) {
    return T::kGigachat;
  }
  if (has("<|role_start|>")) return T::kMegrez;
  return std::nullopt;
}

std::string supported_names() {
  std::string out;
  for (const Family& f : kFamilies) {
    if (f.supported) out += (out.empty() ? "" : ", ") + std::string(f.name);
  }
  return out;
}

// Llama-2 and its variants (llama-chat.cpp, the LLM_CHAT_TEMPLATE_LLAMA_2* branch).
void format_llama2(ChatTemplate t, const std::vector<ChatMessage>& messages, std::ostringstream& ss) {
  const bool system_block = t != ChatTemplate::kLlama2;
  const bool bos_in_history = t == ChatTemplate::kLlama2SysBos;
  const bool strip = t == ChatTemplate::kLlama2SysStrip;
  bool inside_turn = true;  // the first "[INST] " is written up front, without BOS
  ss << "[INST] ";
  for (const ChatMessage& m : messages) {
    const std::string content = strip ? trim(m.content) : m.content;
    if (!inside_turn) {
      inside_turn = true;
      ss << (bos_in_history ? "<s>[INST] " : "[INST] ");
    }
    if (m.role == "system") {
      if (system_block) {
        ss << "<<SYS>>\n" << content << "\n<</SYS>>\n\n";
      } else {
        ss << content << "\n";  // no system turn: the text leads the first user message
      }
    } else if (m.role == "user") {
      ss << content << " [/INST]";
    } else {
      ss << content << "</s>";
      inside_turn = false;
    }
  }
}

// Mistral v1, v3 and v3-tekken (one llama-chat.cpp branch, three spacings).
void format_mistral(ChatTemplate t, const std::vector<ChatMessage>& messages, std::ostringstream& ss) {
  const std::string leading = t == ChatTemplate::kMistralV1 ? " " : "";
  const std::string trailing = t == ChatTemplate::kMistralV3Tekken ? "" : " ";
  const bool trim_assistant = t == ChatTemplate::kMistralV3;
  bool inside_turn = false;
  for (const ChatMessage& m : messages) {
    if (!inside_turn) {
      ss << leading << "[INST]" << trailing;
      inside_turn = true;
    }
    if (m.role == "system") {
      ss << m.content << "\n\n";
    } else if (m.role == "user") {
      ss << m.content << leading << "[/INST]";
    } else {
      ss << trailing << (trim_assistant ? trim(m.content) : m.content) << "</s>";
      inside_turn = false;
    }
  }
}

}  // namespace

std::string_view chat_template_name(ChatTemplate family) { return family_of(family).name; }

bool chat_template_supported(ChatTemplate family) { return family_of(family).supported; }

Result<ChatTemplate> detect_chat_template(std::string_view tmpl) {
  for (const Family& f : kFamilies) {
    if (tmpl == f.name) return f.family;
  }
  if (const auto t = detect_by_content(tmpl)) return *t;
  const std::string shown = tmpl.size() > 80 ? std::string(tmpl.substr(0, 80)) + "…" : std::string(tmpl);
  return make_error("unknown_chat_template",
                    "chat template \"" + shown + "\" (" + std::to_string(tmpl.size()) +
                        " bytes) is not one llama.cpp's built-in formatter recognises; "
                        "name a format instead (" + supported_names() + ")");
}

Result<std::string> format_chat(ChatTemplate family, const std::vector<ChatMessage>& messages,
                                bool add_assistant) {
  using T = ChatTemplate;
  std::ostringstream ss;
  switch (family) {
    case T::kChatml:
      for (const ChatMessage& m : messages) {
        ss << "<|im_start|>" << m.role << "\n" << m.content << "<|im_end|>\n";
      }
      if (add_assistant) ss << "<|im_start|>assistant\n";
      break;
    case T::kLlama3:
      for (const ChatMessage& m : messages) {
        ss << "<|start_header_id|>" << m.role << "<|end_header_id|>\n\n" << trim(m.content) << "<|eot_id|>";
      }
      if (add_assistant) ss << "<|start_header_id|>assistant<|end_header_id|>\n\n";
      break;
    case T::kPhi3:
      for (const ChatMessage& m : messages) ss << "<|" << m.role << "|>\n" << m.content << "<|end|>\n";
      if (add_assistant) ss << "<|assistant|>\n";
      break;
    case T::kGemma: {
      std::string system;  // Gemma has no system turn: it leads the next user turn
      for (const ChatMessage& m : messages) {
        if (m.role == "system") {
          system = trim(m.content);
          continue;
        }
        const std::string role = m.role == "assistant" ? "model" : m.role;
        ss << "<start_of_turn>" << role << "\n";
        if (!system.empty() && role != "model") {
          ss << system << "\n\n";
          system.clear();
        }
        ss << trim(m.content) << "<end_of_turn>\n";
      }
      if (add_assistant) ss << "<start_of_turn>model\n";
      break;
    }
    case T::kMistralV7:
      for (const ChatMessage& m : messages) {
        if (m.role == "system") {
          ss << "[SYSTEM_PROMPT] " << m.content << "[/SYSTEM_PROMPT]";
        } else if (m.role == "user") {
          ss << "[INST] " << m.content << "[/INST]";
        } else {
          ss << " " << m.content << "</s>";
        }
      }
      break;
    case T::kMistralV1:
    case T::kMistralV3:
    case T::kMistralV3Tekken:
      format_mistral(family, messages, ss);
      break;
    case T::kLlama2:
    case T::kLlama2Sys:
    case T::kLlama2SysBos:
    case T::kLlama2SysStrip:
      format_llama2(family, messages, ss);
      break;
    default:
      return make_error("unsupported_chat_template",
                        "chat template is llama.cpp's \"" + std::string(chat_template_name(family)) +
                            "\" format, which kakeya does not write (supported: " + supported_names() + ")");
  }
  return ss.str();
}

Result<std::string> apply_chat_template(std::string_view tmpl, const std::vector<ChatMessage>& messages,
                                        bool add_assistant) {
  KAKEYA_ASSIGN_OR_RETURN(const ChatTemplate family, detect_chat_template(tmpl));
  return format_chat(family, messages, add_assistant);
}

Result<std::string> chat_template_from_gguf(const GgufFile& gguf) {
  if (!gguf.has("tokenizer.chat_template")) {
    return make_error("no_chat_template",
                      "GGUF has no tokenizer.chat_template; name a chat format instead (" + supported_names() + ")");
  }
  return gguf.get_string("tokenizer.chat_template");
}

}  // namespace kakeya::engine
