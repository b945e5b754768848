#pragma once
// Byte-level BPE (GGUF `tokenizer.ggml.model = "gpt2"`): GPT-2's byte↔unicode mapping and the
// merge ranks (the merge loop itself is engine/tokenizer_merge.h).
//
// Reference behaviour: llama.cpp c392e50 — src/unicode.cpp (`unicode_byte_to_utf8_map`,
// `unicode_utf8_to_byte`), src/llama-vocab.cpp (`llm_tokenizer_bpe_session::tokenize`,
// `llama_decode_text`), which follow GPT-2's encoder.py `bytes_to_unicode`.
//
// Byte-level text: every byte of the UTF-8 text is written as one printable code point. Bytes
// '!'..'~', 0xA1..0xAC and 0xAE..0xFF stand for themselves (as code points); the other 68 bytes
// (0x00..0x20, 0x7F..0xA0, 0xAD), in increasing order, are U+0100, U+0101, … (so ' ' is 'Ġ' =
// U+0120 and '\n' is 'Ċ' = U+010A). Vocabulary entries and merges are written in this alphabet.
//
// Thread safety: BpeMerges is immutable after construction.

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace kakeya::engine {

// The byte-level spelling of `bytes` (each byte → the UTF-8 of its stand-in code point).
std::string byte_level_encode(std::string_view bytes);

// The bytes a byte-level token spells (llama.cpp `llama_decode_text`): each code point that
// stands for a byte becomes that byte; any other code point c becomes
// "[UNK_BYTE_0x<hex of c's UTF-8>" + token + "]", as llama.cpp renders it.
std::string byte_level_decode(std::string_view token);

// Merge ranks from GGUF `tokenizer.ggml.merges`: entry i, "left right" (split at the first space
// after the first character), has rank i; lower ranks merge first; a repeated pair keeps its
// first rank; an entry without such a space is the pair ("", "") (llama.cpp's reading).
class BpeMerges {
 public:
  BpeMerges() = default;
  explicit BpeMerges(const std::vector<std::string>& merges);

  // The rank of merging `left` with `right`, or -1.
  int rank(std::string_view left, std::string_view right) const;
  size_t size() const { return ranks_.size(); }

 private:
  // Key of a pair: left, a NUL byte, right. Byte-level symbols never hold NUL (byte 0 is
  // U+0100), so a key looked up has exactly one NUL and matches only the entry of that pair.
  static std::string key(std::string_view left, std::string_view right);
  std::unordered_map<std::string, int> ranks_;
};

}  // namespace kakeya::engine
