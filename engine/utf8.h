#pragma once
// UTF-8 as the tokenizers see it: lenient decoding that never fails, the way llama.cpp (c392e50,
// src/unicode.cpp `unicode_cpt_from_utf8` / `unicode_cpts_from_utf8`) reads text, so that a
// tokenizer given invalid UTF-8 produces the tokens llama.cpp produces.
//
// Decoding rule, per sequence starting at byte b0:
//   b0 < 0x80                      → b0 (1 byte)
//   b0 in 0xC0..0xDF + 1 continuation, 0xE0..0xEF + 2, 0xF0..0xF7 + 3
//                                  → the code point those bits spell (no overlong or surrogate
//                                    check: C0 80 reads as U+0000, ED A0 80 as U+D800)
//   anything else (a stray continuation byte, 0xF8..0xFF, a truncated sequence)
//                                  → U+FFFD, consuming ONE byte.
// One deviation: a 4-byte sequence spelling a value above U+10FFFF reads as U+FFFD consuming one
// byte; llama.cpp decodes it and later throws when re-encoding it.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kakeya::engine {

inline constexpr uint32_t kReplacementCharacter = 0xFFFD;

// Byte length of the sequence a lead byte announces (llama.cpp `unicode_len_utf8`): 2..4 for
// 0xC0..0xFF lead bytes, 1 for ASCII and for continuation bytes. The text may be shorter.
size_t utf8_sequence_length(unsigned char lead);

// Code points of `text` under the lenient rule above. Never fails.
std::vector<uint32_t> utf8_decode(std::string_view text);

// Appends the UTF-8 encoding of `cp` (1..4 bytes; surrogates are encoded like any other value).
// REQUIRES: cp <= 0x10FFFF.
void utf8_append(uint32_t cp, std::string& out);

}  // namespace kakeya::engine
