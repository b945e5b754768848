#include "engine/tokenizer_merge.h"

#include <algorithm>
#include <queue>

#include "engine/utf8.h"

namespace kakeya::engine {
namespace {

// One symbol of the merge chain: a byte range of the word, linked to its neighbours.
struct Symbol {
  size_t offset = 0;
  size_t length = 0;  // 0 once merged into its left neighbour
  int prev = -1;
  int next = -1;
};

// A candidate merge of symbols[left] and symbols[right]; `length` is their byte length when
// queued. Symbols only grow or merge away, so a changed length marks the entry stale.
struct Bigram {
  int left = 0;
  int right = 0;
  double priority = 0;
  size_t length = 0;
};

// Highest priority on top; among equal priorities the leftmost pair.
struct BigramBelow {
  bool operator()(const Bigram& l, const Bigram& r) const {
    return l.priority < r.priority || (l.priority == r.priority && l.left > r.left);
  }
};

}  // namespace

std::vector<size_t> merge_by_priority(std::string_view word, const PairPriority& priority) {
  std::vector<Symbol> symbols;
  symbols.reserve(word.size());
  for (size_t off = 0; off < word.size();) {
    Symbol s;
    s.offset = off;
    s.length = std::min(utf8_sequence_length(static_cast<unsigned char>(word[off])), word.size() - off);
    off += s.length;
    s.prev = static_cast<int>(symbols.size()) - 1;
    s.next = off == word.size() ? -1 : static_cast<int>(symbols.size()) + 1;
    symbols.push_back(s);
  }

  std::priority_queue<Bigram, std::vector<Bigram>, BigramBelow> queue;
  auto text = [&](int i) { return word.substr(symbols[i].offset, symbols[i].length); };
  auto try_add = [&](int left, int right) {
    if (left < 0 || right < 0) return;
    const std::optional<double> p = priority(text(left), text(right));
    if (!p) return;
    queue.push(Bigram{left, right, *p, symbols[left].length + symbols[right].length});
  };
  for (int i = 1; i < static_cast<int>(symbols.size()); ++i) try_add(i - 1, i);

  while (!queue.empty()) {
    const Bigram b = queue.top();
    queue.pop();
    Symbol& l = symbols[b.left];
    Symbol& r = symbols[b.right];
    if (l.length == 0 || r.length == 0 || l.length + r.length != b.length) continue;  // stale
    l.length += r.length;
    r.length = 0;
    l.next = r.next;
    if (r.next >= 0) symbols[r.next].prev = b.left;
    try_add(l.prev, b.left);
    try_add(b.left, l.next);
  }

  std::vector<size_t> out;
  for (int i = symbols.empty() ? -1 : 0; i != -1; i = symbols[i].next) out.push_back(symbols[i].length);
  return out;
}

}  // namespace kakeya::engine
