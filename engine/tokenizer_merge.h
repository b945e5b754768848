#pragma once
// The merge loop both BPE flavours share: start from the UTF-8 characters of a word and
// repeatedly merge the adjacent pair of highest priority, the leftmost among equal priorities,
// until no adjacent pair merges. SentencePiece BPE (tokenizer.ggml.model "llama") ranks a pair by
// the score of the token the pair spells; byte-level BPE ("gpt2") by the pair's merge rank.
//
// Reference behaviour: llama.cpp c392e50, src/llama-vocab.cpp `llm_tokenizer_spm_session` and
// `llm_tokenizer_bpe_session` (a priority queue of candidate bigrams, stale entries skipped;
// characters split by lead byte, a stray continuation byte being a 1-byte symbol).

#include <functional>
#include <optional>
#include <string_view>
#include <vector>

namespace kakeya::engine {

// The priority of merging the adjacent symbols `left` and `right` (higher merges first), or
// nullopt when they do not merge.
using PairPriority = std::function<std::optional<double>(std::string_view left, std::string_view right)>;

// Byte lengths of the symbols `word` merges into, in order, summing to word.size().
// Cost O(n log n) calls of `priority` in the characters of `word`.
std::vector<size_t> merge_by_priority(std::string_view word, const PairPriority& priority);

}  // namespace kakeya::engine
