// Text → token ids (Tokenizer::tokenize / encode): special tokens matched whole, then SPM or BPE
// on the text between them. llama.cpp c392e50, src/llama-vocab.cpp `impl::tokenize` and
// `tokenizer_st_partition`.
#include "engine/tokenizer.h"
#include "engine/tokenizer_merge.h"

namespace kakeya::engine {
namespace {

// C isspace in the "C" locale, which llama.cpp's lstrip/rstrip use on bytes.
bool is_ascii_space(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

}  // namespace

std::vector<Tokenizer::Fragment> Tokenizer::partition(std::string_view text, bool parse_special) const {
  std::vector<Fragment> fragments;
  if (!text.empty()) fragments.push_back({-1, 0, text.size()});
  for (const int32_t id : special_tokens_) {
    const TokenType type = types_[static_cast<size_t>(id)];
    if (!parse_special && (type == TokenType::kControl || type == TokenType::kUnknown)) continue;
    const std::string& special = tokens_[static_cast<size_t>(id)];
    const uint8_t strip = strip_[static_cast<size_t>(id)];
    std::vector<Fragment> next;
    next.reserve(fragments.size());
    for (const Fragment& f : fragments) {
      if (f.token >= 0) {
        next.push_back(f);
        continue;
      }
      size_t offset = f.offset;
      size_t length = f.length;
      while (length > 0) {
        const size_t hit = text.find(special, offset);
        if (hit == std::string_view::npos || hit + special.size() > offset + length) break;
        size_t left = hit - offset;
        if (strip & kLstrip) {
          while (left > 0 && is_ascii_space(text[offset + left - 1])) --left;
        }
        if (left > 0) next.push_back({-1, offset, left});
        next.push_back({id, 0, 0});
        const size_t end = offset + length;
        offset = hit + special.size();
        if (strip & kRstrip) {
          while (offset < end && is_ascii_space(text[offset])) ++offset;
        }
        length = end - offset;
      }
      if (length > 0) next.push_back({-1, offset, length});
    }
    fragments = std::move(next);
  }
  return fragments;
}

void Tokenizer::append_spm(std::string_view text, std::vector<int32_t>& out) const {
  std::string escaped;
  escaped.reserve(text.size() + text.size() / 2);
  for (const char c : text) {
    if (c == ' ') {
      escaped += kSpaceMarker;
    } else {
      escaped += c;
    }
  }
  std::string scratch;
  const auto score = [&](std::string_view left, std::string_view right) -> std::optional<double> {
    scratch.assign(left.data(), left.size() + right.size());  // adjacent in `escaped`
    const auto it = token_to_id_.find(scratch);
    if (it == token_to_id_.end()) return std::nullopt;
    return scores_[static_cast<size_t>(it->second)];
  };
  size_t at = 0;
  for (const size_t length : merge_by_priority(escaped, score)) {
    const std::string_view symbol = std::string_view(escaped).substr(at, length);
    at += length;
    scratch.assign(symbol);
    const auto it = token_to_id_.find(scratch);
    if (it != token_to_id_.end()) {
      out.push_back(it->second);
      continue;
    }
    for (const char c : symbol) {  // byte fallback
      const int32_t id = byte_to_id_[static_cast<unsigned char>(c)];
      if (id >= 0) {
        out.push_back(id);
      } else if (ids_.unk >= 0) {
        out.push_back(ids_.unk);
      }
    }
  }
}

void Tokenizer::append_bpe(std::string_view text, std::vector<int32_t>& out) const {
  const auto rank = [&](std::string_view left, std::string_view right) -> std::optional<double> {
    const int r = merges_->rank(left, right);
    if (r < 0) return std::nullopt;
    return -static_cast<double>(r);  // lower rank merges first
  };
  for (const std::string& word : pre_->split(text)) {
    const std::string encoded = byte_level_encode(word);
    if (pre_->ignore_merges()) {
      if (const int32_t id = find_token(encoded); id >= 0) {
        out.push_back(id);
        continue;
      }
    }
    size_t at = 0;
    for (const size_t length : merge_by_priority(encoded, rank)) {
      const std::string_view symbol = std::string_view(encoded).substr(at, length);
      at += length;
      if (const int32_t id = find_token(symbol); id >= 0) {
        out.push_back(id);
        continue;
      }
      for (const char c : symbol) {  // the single bytes of the symbol's spelling that are tokens
        if (const int32_t id = find_token(std::string_view(&c, 1)); id >= 0) out.push_back(id);
      }
    }
  }
}

void Tokenizer::append_fragments(std::string_view text, const std::vector<Fragment>& fragments,
                                 std::vector<int32_t>& out) const {
  bool after_special = true;  // SPM: the first text fragment gets the space prefix too
  for (const Fragment& f : fragments) {
    if (f.token >= 0) {
      out.push_back(f.token);
      after_special = true;
      continue;
    }
    const std::string_view piece = text.substr(f.offset, f.length);
    if (kind_ == VocabKind::kBpe) {
      append_bpe(piece, out);
    } else if (add_space_prefix_ && after_special) {
      append_spm(" " + std::string(piece), out);
    } else {
      append_spm(piece, out);
    }
    after_special = false;
  }
}

std::vector<int32_t> Tokenizer::tokenize(std::string_view text, bool add_special, bool parse_special) const {
  std::vector<int32_t> out;
  if (add_special && add_bos_ && ids_.bos >= 0) out.push_back(ids_.bos);
  append_fragments(text, partition(text, parse_special), out);
  if (add_special && add_eos_ && ids_.eos >= 0) out.push_back(ids_.eos);
  return out;
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_bos) const {
  std::vector<int32_t> out;
  if (add_bos && ids_.bos >= 0) out.push_back(ids_.bos);
  append_fragments(text, partition(text, false), out);
  return out;
}

}  // namespace kakeya::engine
