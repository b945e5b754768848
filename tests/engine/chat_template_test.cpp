// Chat templates against llama.cpp c392e50, src/llama-chat.cpp: detection as
// llm_chat_detect_template decides it, prompts as llm_chat_apply_template writes them. Every
// expected prompt below was derived by reading that function's branch for the family (named in
// each test) on the conversation kChat.
#include "engine/chat_template.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "engine/gguf.h"
#include "tests/engine/tokenizer_vectors.h"
#include "tests/harness/paths.h"

namespace kakeya::engine {
namespace {

// A system prompt, two user turns and an assistant reply with white space around it (which
// some formats trim).
const std::vector<ChatMessage> kChat = {
    {"system", "You are a helpful assistant"},
    {"user", "Hello"},
    {"assistant", "  Hi there  "},
    {"user", "Who are you?"},
};

std::string format(ChatTemplate t, bool add_assistant = true, const std::vector<ChatMessage>& chat = kChat) {
  auto r = format_chat(t, chat, add_assistant);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().str());
  return r.ok() ? *r : "";
}

ChatTemplate detect(const std::string& tmpl) {
  auto r = detect_chat_template(tmpl);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().str());
  return r.ok() ? *r : ChatTemplate::kMegrez;
}

// --- formatting --------------------------------------------------------------------------------

TEST(ChatTemplateFormat, Chatml) {  // branch LLM_CHAT_TEMPLATE_CHATML
  EXPECT_EQ(format(ChatTemplate::kChatml),
            "<|im_start|>system\nYou are a helpful assistant<|im_end|>\n"
            "<|im_start|>user\nHello<|im_end|>\n"
            "<|im_start|>assistant\n  Hi there  <|im_end|>\n"
            "<|im_start|>user\nWho are you?<|im_end|>\n"
            "<|im_start|>assistant\n");
  EXPECT_EQ(format(ChatTemplate::kChatml, false, {{"user", "Hi"}}), "<|im_start|>user\nHi<|im_end|>\n");
}

TEST(ChatTemplateFormat, Llama3TrimsContent) {  // branch LLM_CHAT_TEMPLATE_LLAMA_3
  EXPECT_EQ(format(ChatTemplate::kLlama3),
            "<|start_header_id|>system<|end_header_id|>\n\nYou are a helpful assistant<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\nHello<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\nHi there<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\nWho are you?<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n");
  EXPECT_EQ(format(ChatTemplate::kLlama3, false, {{"user", " Hi\n"}}),
            "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>");
}

TEST(ChatTemplateFormat, Phi3) {  // branch LLM_CHAT_TEMPLATE_PHI_3
  EXPECT_EQ(format(ChatTemplate::kPhi3),
            "<|system|>\nYou are a helpful assistant<|end|>\n"
            "<|user|>\nHello<|end|>\n"
            "<|assistant|>\n  Hi there  <|end|>\n"
            "<|user|>\nWho are you?<|end|>\n"
            "<|assistant|>\n");
  EXPECT_EQ(format(ChatTemplate::kPhi3, false, {{"user", "Hi"}}), "<|user|>\nHi<|end|>\n");
}

TEST(ChatTemplateFormat, GemmaFoldsTheSystemPromptIntoTheFirstUserTurn) {  // LLM_CHAT_TEMPLATE_GEMMA
  EXPECT_EQ(format(ChatTemplate::kGemma),
            "<start_of_turn>user\nYou are a helpful assistant\n\nHello<end_of_turn>\n"
            "<start_of_turn>model\nHi there<end_of_turn>\n"
            "<start_of_turn>user\nWho are you?<end_of_turn>\n"
            "<start_of_turn>model\n");
  EXPECT_EQ(format(ChatTemplate::kGemma, false, {{"user", "Hi"}}), "<start_of_turn>user\nHi<end_of_turn>\n");
}

TEST(ChatTemplateFormat, Llama2Variants) {  // branch LLM_CHAT_TEMPLATE_LLAMA_2*
  // No <<SYS>> block: the system text leads the first user message.
  EXPECT_EQ(format(ChatTemplate::kLlama2),
            "[INST] You are a helpful assistant\nHello [/INST]  Hi there  </s>[INST] Who are you? [/INST]");
  EXPECT_EQ(format(ChatTemplate::kLlama2Sys),
            "[INST] <<SYS>>\nYou are a helpful assistant\n<</SYS>>\n\nHello [/INST]  Hi there  </s>"
            "[INST] Who are you? [/INST]");
  EXPECT_EQ(format(ChatTemplate::kLlama2SysBos),
            "[INST] <<SYS>>\nYou are a helpful assistant\n<</SYS>>\n\nHello [/INST]  Hi there  </s>"
            "<s>[INST] Who are you? [/INST]");
  EXPECT_EQ(format(ChatTemplate::kLlama2SysStrip),
            "[INST] <<SYS>>\nYou are a helpful assistant\n<</SYS>>\n\nHello [/INST]Hi there</s>"
            "[INST] Who are you? [/INST]");
  // add_assistant changes nothing: the prompt already ends where the reply starts.
  EXPECT_EQ(format(ChatTemplate::kLlama2, false), format(ChatTemplate::kLlama2, true));
}

TEST(ChatTemplateFormat, MistralVariants) {  // branches LLM_CHAT_TEMPLATE_MISTRAL_V1/V3/V3_TEKKEN, V7
  EXPECT_EQ(format(ChatTemplate::kMistralV1),
            " [INST] You are a helpful assistant\n\nHello [/INST]   Hi there  </s> [INST] Who are you? [/INST]");
  EXPECT_EQ(format(ChatTemplate::kMistralV3),
            "[INST] You are a helpful assistant\n\nHello[/INST] Hi there</s>[INST] Who are you?[/INST]");
  EXPECT_EQ(format(ChatTemplate::kMistralV3Tekken),
            "[INST]You are a helpful assistant\n\nHello[/INST]  Hi there  </s>[INST]Who are you?[/INST]");
  EXPECT_EQ(format(ChatTemplate::kMistralV7),
            "[SYSTEM_PROMPT] You are a helpful assistant[/SYSTEM_PROMPT][INST] Hello[/INST]   Hi there  </s>"
            "[INST] Who are you?[/INST]");
}

TEST(ChatTemplateFormat, OtherFamiliesAreRefusedByName) {
  auto r = format_chat(ChatTemplate::kZephyr, kChat, true);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, "unsupported_chat_template");
  EXPECT_NE(r.error().message.find("\"zephyr\""), std::string::npos);
  EXPECT_NE(r.error().message.find("llama3"), std::string::npos);  // lists what is supported
  EXPECT_FALSE(chat_template_supported(ChatTemplate::kPhi4));
  EXPECT_TRUE(chat_template_supported(ChatTemplate::kGemma));
}

// --- detection --------------------------------------------------------------------------------

// Templates in the style of the models' tokenizer_config.json, reduced to the parts
// llm_chat_detect_template looks at plus enough Jinja to read as a template.
const std::string kLlama3Jinja =
    "{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = "
    "'<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n'+ message['content'] | trim + "
    "'<|eot_id|>' %}{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif %}{{ content }}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}"
    "{% endif %}";
const std::string kQwenJinja =
    "{%- for message in messages %}{{- '<|im_start|>' + message.role + '\\n' + message.content + "
    "'<|im_end|>' + '\\n' }}{%- endfor %}{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}"
    "{%- endif %}";
const std::string kGemmaJinja =
    "{{ bos_token }}{% for message in messages %}{% if (message['role'] == 'assistant') %}{% set role = "
    "'model' %}{% else %}{% set role = message['role'] %}{% endif %}{{ '<start_of_turn>' + role + '\\n' + "
    "message['content'] | trim + '<end_of_turn>\\n' }}{% endfor %}{% if add_generation_prompt %}"
    "{{'<start_of_turn>model\\n'}}{% endif %}";
const std::string kPhi3Jinja =
    "{% for message in messages %}{% if message['role'] == 'user' %}{{'<|user|>\\n' + message['content'] + "
    "'<|end|>\\n' + '<|assistant|>\\n'}}{% elif message['role'] == 'assistant' %}{{message['content'] + "
    "'<|end|>\\n'}}{% endif %}{% endfor %}";

TEST(ChatTemplateDetect, CommonFamilies) {
  EXPECT_EQ(detect(kLlama3Jinja), ChatTemplate::kLlama3);
  EXPECT_EQ(detect(kQwenJinja), ChatTemplate::kChatml);
  EXPECT_EQ(detect(kGemmaJinja), ChatTemplate::kGemma);
  EXPECT_EQ(detect(kPhi3Jinja), ChatTemplate::kPhi3);
}

TEST(ChatTemplateDetect, InstVariantsByTheirMarkers) {
  EXPECT_EQ(detect("{{ '[INST] ' + message['content'] + ' [/INST]' }}"), ChatTemplate::kLlama2);
  EXPECT_EQ(detect("{{ '[INST] <<SYS>>\\n' + system + '\\n<</SYS>>\\n\\n' }}"), ChatTemplate::kLlama2Sys);
  EXPECT_EQ(detect("{{ bos_token + '[INST] ' + m }}{{ '<<SYS>>' }}"), ChatTemplate::kLlama2SysBos);
  EXPECT_EQ(detect("{{ bos_token + '[INST] ' + content.strip() + ' [/INST]' }}{{ '<<SYS>>' }}"),
            ChatTemplate::kLlama2SysStrip);  // content.strip() is tested before bos_token + '[INST]
  EXPECT_EQ(detect("{{ bos_token + ' [INST] ' + system_message + '\\n\\n' + m + ' [/INST]' }}"),
            ChatTemplate::kMistralV1);
  EXPECT_EQ(detect("{{ '[AVAILABLE_TOOLS]' + tools }}{{ '[INST]' + m + '[/INST]' }}"), ChatTemplate::kMistralV3);
  EXPECT_EQ(detect("{{ '[AVAILABLE_TOOLS]' + tools }}{{ \"[INST]\" + m + \"[/INST]\" }}"),
            ChatTemplate::kMistralV3Tekken);
  EXPECT_EQ(detect("{{ '[SYSTEM_PROMPT] ' + s + '[/SYSTEM_PROMPT]' }}{{ '[INST] ' + m + '[/INST]' }}"),
            ChatTemplate::kMistralV7);
  // A text starting with "mistral" that is no built-in name enters the same branch.
  EXPECT_EQ(detect("mistral-ish"), ChatTemplate::kLlama2);
}

TEST(ChatTemplateDetect, OrderDecidesOverlappingMarkers) {
  // <|im_start|> is tested first: with <|im_sep|> it is Phi-4, not ChatML.
  EXPECT_EQ(detect("<|im_start|>x<|im_sep|>"), ChatTemplate::kPhi4);
  // <|assistant|> and <|user|> without <|end|>: Falcon 3 with </s>, else GLM-Edge.
  EXPECT_EQ(detect("<|user|>\n{{m}}<|assistant|>\n{{r}}</s>"), ChatTemplate::kFalcon3);
  EXPECT_EQ(detect("<|user|>\n{{m}}<|assistant|>\n"), ChatTemplate::kGlmedge);
  // Zephyr: <|user|> and <|endoftext|>; detected, then refused by format_chat.
  EXPECT_EQ(detect("<|user|>\n{{m}}<|endoftext|>"), ChatTemplate::kZephyr);
  auto z = apply_chat_template("<|user|>\n{{m}}<|endoftext|>", kChat, true);
  ASSERT_FALSE(z.ok());
  EXPECT_EQ(z.error().code, "unsupported_chat_template");
}

TEST(ChatTemplateDetect, BuiltInNames) {
  for (const ChatTemplate t : {ChatTemplate::kChatml, ChatTemplate::kLlama3, ChatTemplate::kGemma,
                               ChatTemplate::kPhi3, ChatTemplate::kMistralV7, ChatTemplate::kLlama2SysBos,
                               ChatTemplate::kMegrez}) {
    EXPECT_EQ(detect(std::string(chat_template_name(t))), t) << chat_template_name(t);
  }
  EXPECT_EQ(chat_template_name(ChatTemplate::kMistralV3Tekken), "mistral-v3-tekken");
}

TEST(ChatTemplateDetect, UnrecognisedTemplatesAreErrorsNotGuesses) {
  for (const std::string& t : {std::string(), std::string("{% for m in messages %}{{ m.content }}{% endfor %}")}) {
    auto r = detect_chat_template(t);
    ASSERT_FALSE(r.ok()) << t;
    EXPECT_EQ(r.error().code, "unknown_chat_template");
    EXPECT_NE(r.error().message.find(t), std::string::npos);  // quotes the template
    EXPECT_FALSE(apply_chat_template(t, kChat, true).ok());
  }
}

TEST(ChatTemplateApply, DetectsThenFormats) {
  auto r = apply_chat_template(kLlama3Jinja, {{"user", "Hi"}}, true);
  ASSERT_TRUE(r.ok()) << r.error().str();
  EXPECT_EQ(*r, "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
                "<|start_header_id|>assistant<|end_header_id|>\n\n");
}

TEST(ChatTemplateGguf, ReadsThePhi3TemplateAndFormatsIt) {
  const auto path = tokenizer_testing::bpe_vocab("phi-3");
  const std::string why = kakeya::testing::shared_dir_missing(path);
  if (!why.empty()) GTEST_SKIP() << why;
  auto gguf = GgufFile::open(path.string());
  ASSERT_TRUE(gguf.ok()) << gguf.error().str();
  auto tmpl = chat_template_from_gguf(*gguf);
  ASSERT_TRUE(tmpl.ok()) << tmpl.error().str();
  auto prompt = apply_chat_template(*tmpl, {{"user", "Hi"}}, true);
  ASSERT_TRUE(prompt.ok()) << prompt.error().str();
  EXPECT_EQ(*prompt, "<|user|>\nHi<|end|>\n<|assistant|>\n");
}

TEST(ChatTemplateGguf, AbsentTemplateIsAnError) {
  const auto path = tokenizer_testing::bpe_vocab("gpt-2");
  const std::string why = kakeya::testing::shared_dir_missing(path);
  if (!why.empty()) GTEST_SKIP() << why;
  auto gguf = GgufFile::open(path.string());
  ASSERT_TRUE(gguf.ok()) << gguf.error().str();
  auto tmpl = chat_template_from_gguf(*gguf);
  ASSERT_FALSE(tmpl.ok());
  EXPECT_EQ(tmpl.error().code, "no_chat_template");
}

}  // namespace
}  // namespace kakeya::engine
