#include "engine/pretokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <algorithm>
#include <cstdint>
#include <utility>

#include "engine/utf8.h"

namespace kakeya::engine {
namespace {

// --- the rule sets (llama.cpp c392e50, src/llama-vocab.cpp, llm_tokenizer_bpe) -----------------

struct RuleSet {
  std::vector<std::string_view> names;    // tokenizer.ggml.pre values selecting this set
  std::vector<std::string_view> regexes;  // applied in order
  bool ignore_merges = false;
  bool add_bos = false;
};

// GPT-2's rule (also the second rule of several sets below).
constexpr std::string_view kGpt2Rule =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S))";

const std::vector<RuleSet>& rule_sets() {
  static const std::vector<RuleSet> kSets = {
      {{"llama3", "llama-v3", "llama-bpe", "falcon3"},
       {R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD]))"
        R"(|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)"},
       /*ignore_merges=*/true,
       /*add_bos=*/true},
      {{"qwen2", "deepseek-r1-qwen", "megrez", "stablelm2"},
       {R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD]))"
        R"(|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)"}},
      {{"gpt-2", "phi-2", "gigachat", "roberta-bpe", "mpt", "olmo", "jais"}, {kGpt2Rule}},
      {{"starcoder", "smollm", "refact", "command-r", "codeshell", "exaone", "minerva-7b"},
       {R"(\p{N})", kGpt2Rule}},
      {{"falcon"}, {R"([\p{P}\$\+<=>\^~\|`]+)", kGpt2Rule, R"([0-9][0-9][0-9])"}},
      // deepseek-llm: the non-ASCII characters of llama.cpp's rules as \x{…} escapes.
      {{"deepseek-llm"},
       {R"([\r\n])",
        R"(\s?[A-Za-z\x{B5}\x{C0}-\x{D6}\x{D8}-\x{F6}\x{F8}-\x{1BA}\x{1BC}-\x{1BF}\x{1C4}-\x{293})"
        R"(\x{295}-\x{2AF}\x{370}-\x{373}\x{376}\x{377}\x{37B}-\x{37D}\x{37F}\x{386}\x{388}-\x{38A})"
        R"(\x{38C}\x{38E}-\x{3A1}\x{3A3}-\x{3F5}\x{3F7}-\x{481}\x{48A}-\x{52F}\x{531}-\x{556})"
        R"(\x{10A0}-\x{10C5}\x{13A0}-\x{13F5}\x{13F8}-\x{13FD}\x{1C90}-\x{1CBA}\x{1CBD}-\x{1CBF})"
        R"(\x{1D00}-\x{1D2B}\x{1D6B}-\x{1D77}\x{1D79}-\x{1D9A}\x{1E00}-\x{1F15}\x{1F18}-\x{1F1D})"
        R"(\x{1F20}-\x{1F45}\x{1F48}-\x{1F4D}\x{1F50}-\x{1F57}\x{1F59}\x{1F5B}\x{1F5D}\x{1F5F}-\x{1F7D})"
        R"(\x{1F80}-\x{1FB4}\x{1FB6}-\x{1FBC}\x{1FBE}\x{1FC2}-\x{1FC4}\x{1FC6}-\x{1FCC}\x{1FD0}-\x{1FD3})"
        R"(\x{1FD6}-\x{1FDB}\x{1FE0}-\x{1FEC}\x{1FF2}-\x{1FF4}\x{1FF6}-\x{1FFC}\x{2102}\x{2107})"
        R"(\x{210A}-\x{2113}\x{2115}\x{2119}-\x{211D}\x{2124}\x{2126}\x{2128}\x{212A}-\x{212D})"
        R"(\x{212F}-\x{2134}\x{2139}\x{213C}-\x{213F}\x{2145}-\x{2149}\x{214E}\x{2183}\x{2184})"
        R"(\x{2C00}-\x{2C7B}\x{2C7E}-\x{2CE4}\x{2CEB}-\x{2CEE}\x{2CF2}\x{2CF3}\x{A640}-\x{A66D})"
        R"(\x{A680}-\x{A69B}\x{A722}-\x{A76F}\x{A771}-\x{A787}\x{A78B}-\x{A78E}\x{AB70}-\x{ABBF})"
        R"(\x{FB00}-\x{FB06}\x{FB13}-\x{FB17}\x{FF21}-\x{FF3A}\x{FF41}-\x{FF5A}\x{10400}-\x{1044F})"
        R"(\x{104B0}-\x{104D3}\x{104D8}-\x{104FB}\x{10C80}-\x{10CB2}\x{10CC0}-\x{10CF2})"
        R"(\x{118A0}-\x{118DF}\x{1E900}-\x{1E943}]+)",
        R"(\s?[!-/:-~\x{FF01}-\x{FF0F}\x{FF1A}-\x{FF5E}\x{2018}-\x{201F}\x{3000}-\x{3002}]+)",
        R"(\s+$)",
        R"([\x{4E00}-\x{9FA5}\x{800}-\x{4E00}\x{AC00}-\x{D7FF}]+)",
        R"(\p{N}+)"}},
      {{"deepseek-coder"},
       {R"([\r\n])", R"(\s?\p{L}+)", R"(\s?\p{P}+)",
        R"([\x{4E00}-\x{9FA5}\x{800}-\x{4E00}\x{AC00}-\x{D7FF}]+)", R"(\p{N})"}},
      // llama.cpp's fallback when a gpt2 vocabulary names no pre-tokenizer.
      {{"default"}, {R"([\p{P}\$\+<=>\^~\|]+)", kGpt2Rule, R"(\p{N}+)", R"([0-9][0-9][0-9])"}},
  };
  return kSets;
}

// --- adjusting the text so that PCRE2 sees what llama.cpp's matchers see ------------------------

// Non-ASCII White_Space code points; llama.cpp matches each of them as U+000B.
bool is_non_ascii_space(uint32_t cp) {
  return cp == 0x85 || cp == 0xA0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) ||
         cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

// Stand-ins PCRE2 10.42 classifies like llama.cpp's tables classify the code points they replace.
constexpr uint32_t kLetter = 0x00AA;       // ª, Lo
constexpr uint32_t kMark = 0x0300;         // combining grave accent, Mn
constexpr uint32_t kNumber = 0x00B2;       // ², No
constexpr uint32_t kPunctuation = 0x00A1;  // ¡, Po
constexpr uint32_t kSymbol = 0x00A6;       // ¦, So
constexpr uint32_t kOther = 0xE000;        // private use, Co (llama.cpp: control)

// Code points assigned in Unicode 15.0 and 15.1 (llama.cpp's tables) that PCRE2 10.42 (Unicode
// 14.0) reads as unassigned, with their category; found by comparing the two over every code
// point. Sorted, disjoint.
struct CategoryRange {
  uint32_t first;
  uint32_t last;
  uint32_t stand_in;
};
constexpr CategoryRange kNewerThanPcre2[] = {
    {0x0CF3, 0x0CF3, kMark},          {0x0ECE, 0x0ECE, kMark},
    {0x2FFC, 0x2FFF, kSymbol},        {0x31EF, 0x31EF, kSymbol},
    {0x10EFD, 0x10EFF, kMark},        {0x1123F, 0x11240, kLetter},
    {0x11241, 0x11241, kMark},        {0x11B00, 0x11B09, kPunctuation},
    {0x11F00, 0x11F01, kMark},        {0x11F02, 0x11F02, kLetter},
    {0x11F03, 0x11F03, kMark},        {0x11F04, 0x11F10, kLetter},
    {0x11F12, 0x11F33, kLetter},      {0x11F34, 0x11F3A, kMark},
    {0x11F3E, 0x11F42, kMark},        {0x11F43, 0x11F4F, kPunctuation},
    {0x11F50, 0x11F59, kNumber},      {0x1342F, 0x1342F, kLetter},
    {0x13439, 0x1343F, kOther},       {0x13440, 0x13440, kMark},
    {0x13441, 0x13446, kLetter},      {0x13447, 0x13455, kMark},
    {0x1B132, 0x1B132, kLetter},      {0x1B155, 0x1B155, kLetter},
    {0x1D2C0, 0x1D2D3, kNumber},      {0x1DF25, 0x1DF2A, kLetter},
    {0x1E030, 0x1E06D, kLetter},      {0x1E08F, 0x1E08F, kMark},
    {0x1E4D0, 0x1E4EB, kLetter},      {0x1E4EC, 0x1E4EF, kMark},
    {0x1E4F0, 0x1E4F9, kNumber},      {0x1F6DC, 0x1F6DC, kSymbol},
    {0x1F774, 0x1F776, kSymbol},      {0x1F77B, 0x1F77F, kSymbol},
    {0x1F7D9, 0x1F7D9, kSymbol},      {0x1FA75, 0x1FA77, kSymbol},
    {0x1FA87, 0x1FA88, kSymbol},      {0x1FAAD, 0x1FAAF, kSymbol},
    {0x1FABB, 0x1FABD, kSymbol},      {0x1FABF, 0x1FABF, kSymbol},
    {0x1FACE, 0x1FACF, kSymbol},      {0x1FADA, 0x1FADB, kSymbol},
    {0x1FAE8, 0x1FAE8, kSymbol},      {0x1FAF7, 0x1FAF8, kSymbol},
    {0x2B739, 0x2B739, kLetter},      {0x2EBF0, 0x2EE5D, kLetter},
    {0x31350, 0x323AF, kLetter},
};

// The code point PCRE2 matches in place of `cp`. `by_category`: the rule uses \p{…} (so only the
// category of a non-ASCII code point matters, as in llama.cpp's collapsed text); otherwise the
// rule compares code points literally and only white space and surrogates are replaced.
uint32_t matched_as(uint32_t cp, bool by_category) {
  if (cp < 0x80) return cp;
  if (is_non_ascii_space(cp)) return 0x0B;
  if (cp >= 0xD800 && cp <= 0xDFFF) return kOther;  // PCRE2 refuses surrogates in UTF mode
  if (by_category && cp >= kNewerThanPcre2[0].first) {
    const auto* end = std::end(kNewerThanPcre2);
    const auto* it = std::upper_bound(std::begin(kNewerThanPcre2), end, cp,
                                      [](uint32_t v, const CategoryRange& r) { return v < r.first; });
    if (it != std::begin(kNewerThanPcre2) && cp <= std::prev(it)->last) return std::prev(it)->stand_in;
  }
  return cp;
}

// llama.cpp's `\s` after its white-space mapping: ASCII white space (std::regex, "C" locale).
constexpr std::string_view kAsciiSpaceClass = "\\t-\\r ";

// The rule with `\s` and `\S` spelled as ASCII white-space classes (see kAsciiSpaceClass).
std::string translate_rule(std::string_view rule) {
  std::string out;
  bool in_class = false;
  for (size_t i = 0; i < rule.size(); ++i) {
    const char c = rule[i];
    if (c == '\\' && i + 1 < rule.size()) {
      const char e = rule[i + 1];
      ++i;
      if (e == 's') {
        out += in_class ? std::string(kAsciiSpaceClass) : "[" + std::string(kAsciiSpaceClass) + "]";
      } else if (e == 'S' && !in_class) {
        out += "[^" + std::string(kAsciiSpaceClass) + "]";
      } else {
        out += c;
        out += e;
      }
      continue;
    }
    if (!in_class && c == '[') {
      in_class = true;
      out += c;
      // A ']' right after '[' or '[^' is literal.
      if (i + 1 < rule.size() && rule[i + 1] == '^') out += rule[++i];
      if (i + 1 < rule.size() && rule[i + 1] == ']') out += rule[++i];
      continue;
    }
    if (in_class && c == ']') in_class = false;
    out += c;
  }
  return out;
}

std::string pcre2_message(int code) {
  PCRE2_UCHAR buf[256];
  const int n = pcre2_get_error_message(code, buf, sizeof buf);
  return n < 0 ? "PCRE2 error " + std::to_string(code) : std::string(reinterpret_cast<char*>(buf));
}

struct CompiledRule {
  std::string source;  // llama.cpp's spelling
  bool by_category = false;
  std::shared_ptr<pcre2_code> code;
};

// A text as PCRE2 sees it for one kind of rule: UTF-8 of the matched_as() code points, and
// the byte offset of each code point (plus the end).
struct Subject {
  std::string bytes;
  std::vector<size_t> offset;

  Subject(const std::vector<uint32_t>& cps, bool by_category) {
    offset.reserve(cps.size() + 1);
    for (const uint32_t cp : cps) {
      offset.push_back(bytes.size());
      utf8_append(matched_as(cp, by_category), bytes);
    }
    offset.push_back(bytes.size());
  }
  // The index of the code point starting at byte `b` (b is a code point boundary).
  size_t code_point_at(size_t b) const {
    return static_cast<size_t>(std::lower_bound(offset.begin(), offset.end(), b) - offset.begin());
  }
};

// Splits the word [first, first + length) (code point indices) by `rule`, appending the lengths
// of the resulting words to `out`. Matches are words; so is the text between two matches.
void split_word(const CompiledRule& rule, const Subject& subject, size_t first, size_t length,
                pcre2_match_data* md, std::vector<size_t>& out) {
  const size_t b0 = subject.offset[first];
  const size_t b1 = subject.offset[first + length];
  const auto* text = reinterpret_cast<PCRE2_SPTR>(subject.bytes.data() + b0);
  const size_t n = b1 - b0;
  size_t done = 0;  // bytes of the word already emitted
  size_t from = 0;  // where the next match may start
  auto emit = [&](size_t end_byte) {
    const size_t cps = subject.code_point_at(b0 + end_byte) - subject.code_point_at(b0 + done);
    if (cps > 0) out.push_back(cps);
    done = end_byte;
  };
  while (from < n) {
    int rc = pcre2_match(rule.code.get(), text, n, from, PCRE2_NO_UTF_CHECK, md, nullptr);
    if (rc == PCRE2_ERROR_JIT_STACKLIMIT) {  // a very long run: retry on the heap-based matcher
      rc = pcre2_match(rule.code.get(), text, n, from, PCRE2_NO_UTF_CHECK | PCRE2_NO_JIT, md, nullptr);
    }
    if (rc < 0) break;  // no further match (or a resource limit: the rest stays one word)
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
    const size_t start = ov[0];
    const size_t end = ov[1];
    if (end == start) {  // none of llama.cpp's rules matches empty; step over one code point
      from = start + utf8_sequence_length(static_cast<unsigned char>(text[start]));
      continue;
    }
    emit(start);  // the text before the match
    emit(end);
    from = end;
  }
  emit(n);
}

}  // namespace

struct PreTokenizer::Rules {
  const RuleSet* set = nullptr;
  std::vector<CompiledRule> rules;
};

Result<PreTokenizer> PreTokenizer::create(std::string_view name) {
  const RuleSet* found = nullptr;
  for (const RuleSet& s : rule_sets()) {
    if (std::find(s.names.begin(), s.names.end(), name) != s.names.end()) found = &s;
  }
  if (found == nullptr) {
    std::string known;
    for (const std::string& n : names()) known += (known.empty() ? "" : ", ") + n;
    return make_error("unknown_pretokenizer", "tokenizer.ggml.pre \"" + std::string(name) +
                                                  "\" is not a known pre-tokenizer (known: " + known + ")");
  }
  auto rules = std::make_shared<Rules>();
  rules->set = found;
  for (const std::string_view source : found->regexes) {
    const std::string pattern = translate_rule(source);
    int err = 0;
    PCRE2_SIZE err_offset = 0;
    pcre2_code* code =
        pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                      PCRE2_UTF | PCRE2_UCP | PCRE2_DOLLAR_ENDONLY, &err, &err_offset, nullptr);
    if (code == nullptr) {
      return make_error("bad_pretokenizer", "pre-tokenizer " + std::string(name) + " rule " +
                                                std::string(source) + ": " + pcre2_message(err) +
                                                " at offset " + std::to_string(err_offset));
    }
    pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);  // optional: matching falls back to the interpreter
    CompiledRule r;
    r.source = std::string(source);
    r.by_category = source.find("\\p{") != std::string_view::npos;
    r.code = std::shared_ptr<pcre2_code>(code, pcre2_code_free);
    rules->rules.push_back(std::move(r));
  }
  PreTokenizer p;
  p.name_ = std::string(name);
  p.rules_ = std::move(rules);
  return p;
}

std::vector<std::string> PreTokenizer::names() {
  std::vector<std::string> out;
  for (const RuleSet& s : rule_sets()) {
    for (const std::string_view n : s.names) out.emplace_back(n);
  }
  std::sort(out.begin(), out.end());
  return out;
}

bool PreTokenizer::ignore_merges() const { return rules_->set->ignore_merges; }
bool PreTokenizer::default_add_bos() const { return rules_->set->add_bos; }

std::vector<std::string> PreTokenizer::split(std::string_view text) const {
  const std::vector<uint32_t> cps = utf8_decode(text);
  if (cps.empty()) return {};
  std::unique_ptr<pcre2_match_data, decltype(&pcre2_match_data_free)> md(
      pcre2_match_data_create(1, nullptr), pcre2_match_data_free);
  std::unique_ptr<Subject> literal, by_category;  // built on first use
  std::vector<size_t> words = {cps.size()};       // word lengths in code points
  for (const CompiledRule& rule : rules_->rules) {
    auto& subject = rule.by_category ? by_category : literal;
    if (!subject) subject = std::make_unique<Subject>(cps, rule.by_category);
    std::vector<size_t> next;
    next.reserve(words.size());
    size_t first = 0;
    for (const size_t length : words) {
      split_word(rule, *subject, first, length, md.get(), next);
      first += length;
    }
    words = std::move(next);
  }
  std::vector<std::string> out;
  out.reserve(words.size());
  size_t first = 0;
  for (const size_t length : words) {
    std::string w;
    for (size_t i = first; i < first + length; ++i) utf8_append(cps[i], w);
    out.push_back(std::move(w));
    first += length;
  }
  return out;
}

}  // namespace kakeya::engine
