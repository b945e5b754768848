#pragma once
// Needle-in-a-haystack workload generator (DESIGN.md §5), bit-compatible with the Python
// reference harness that uses `random.Random(seed)`.
//
// Prompt of one sample (n_lines haystack lines, needle before line insert_at):
//   "Note 0000: this paragraph is unrelated padding and does not contain the answer.\n"
//   ...
//   "\nIMPORTANT: the secret code is MAPLE-7890.\n"   (the needle, itself a line)
//   ...
//   "Note NNNN: ...answer." "\nQuestion: what is the secret code? Answer:"
// i.e. lines joined by "\n" with the needle "\nIMPORTANT: the secret code is PREFIX-NNNN.\n" as an
// extra line before line insert_at, then the question. Answer = "PREFIX-NNNN"; recall = the answer
// is a substring of the decoded continuation.

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "bridge/result.h"
#include "engine/tokenizer.h"

namespace kakeya::engine {

// CPython `random.Random` (Modules/_randommodule.c + Lib/random.py): MT19937 seeded by
// init_by_array with the key abs(seed) split into little-endian 32-bit words (seed 0 → key [0]).
// Same seed → same stream as Python's, for the operations below.
class PyRandom {
 public:
  explicit PyRandom(uint64_t seed);

  // Next 32-bit MT19937 output (genrand_uint32).
  uint32_t next_u32();
  // random.getrandbits(k), 0 <= k <= 64: for k <= 32 the top k bits of one output; otherwise
  // 32-bit words, least significant first, the last one shifted right to fit.
  uint64_t getrandbits(int k);
  // random._randbelow(n): k = bit_length(n), draw getrandbits(k) until < n. REQUIRES: n > 0.
  uint64_t randbelow(uint64_t n);
  // random.randint(a, b) = a + randbelow(b - a + 1). REQUIRES: a <= b.
  int64_t randint(int64_t a, int64_t b);
  // random.choice(seq) = seq[randbelow(len(seq))]. REQUIRES: !items.empty().
  template <typename T>
  const T& choice(const std::vector<T>& items) {
    return items[static_cast<size_t>(randbelow(items.size()))];
  }

 private:
  void init_genrand(uint32_t s);
  void init_by_array(const std::vector<uint32_t>& key);

  uint32_t mt_[624] = {};
  int index_ = 625;
};

// PREFIXES of DESIGN §5, in order (15 names).
const std::vector<std::string>& niah_prefixes();

struct NiahSample {
  int n_lines = 0;
  std::string prefix;  // one of niah_prefixes()
  int number = 0;      // 1000..9999
  int insert_at = 0;   // the needle sits before haystack line insert_at (4..n_lines-4)
  std::string prompt;  // full prompt text, no BOS
  std::string answer;  // "PREFIX-NNNN"; "" when the sample has no needle
  bool needle = true;  // false for needle-less (control) workloads: recall is not applicable
};

// Errors "bad_param" unless 8 <= min_lines <= max_lines <= 9999 and n_samples >= 0
// (insert_at = randint(4, n_lines - 4) needs n_lines >= 8).
Status check_niah_params(int min_lines, int max_lines, int n_samples);

// n_samples samples from one PyRandom(seed) stream; per sample, in this order:
// n_lines = randint(min_lines, max_lines), prefix = choice(PREFIXES), number = randint(1000, 9999),
// insert_at = randint(4, n_lines - 4). With with_needle = false the same numbers are drawn (so the
// haystacks match the needle run) but the needle line is left out and `answer` is "".
// Returns {} when check_niah_params fails.
std::vector<NiahSample> generate_niah(uint64_t seed, int min_lines, int max_lines, int n_samples,
                                      bool with_needle = true);

// Recall rule: the answer is a substring of the decoded continuation. False for an empty answer.
bool niah_recalled(std::string_view continuation, std::string_view answer);

// The continuation an answer is judged on: `ids` decoded up to, not including, the first
// end-of-generation token (Tokenizer::is_eog) — generate's stop rule: what a model emits after
// ending its turn is not its answer. Decoding itself runs the full budget, so every arm decodes
// the same number of tokens and the measured KV stays comparable.
std::string niah_continuation(const Tokenizer& tok, std::span<const int32_t> ids);

}  // namespace kakeya::engine
