#pragma once
// Whole-value patterns for catalog string parameters (`pattern:` in manifests/presets.yaml).
//
// Syntax: PCRE2 (Perl-compatible), matched against the value's BYTES (no UTF mode), anchored at
// both ends: `[a-z]{1,8}` accepts "abc" and refuses "abc!". The ECMAScript subset the presets
// use (classes, \xHH escapes, {m,n}, groups, alternation) means the same in both.
//
// Why PCRE2 and not std::regex: libstdc++'s std::regex matches recursively, one stack frame per
// character for `[...]*`, and overflowed the stack on an 8 KiB prompt (under ASan, and with a
// 1 MiB thread stack without it). PCRE2 keeps backtracking state on the heap, bounded by
// kHeapLimitKiB and kMatchLimit, so a hostile value ends in an error, never a crash.
#include <memory>
#include <string>
#include <string_view>

#include "bridge/result.h"

namespace kakeya::bridge {

class Pattern {
 public:
  static constexpr uint32_t kHeapLimitKiB = 16 * 1024;  // backtracking memory per match
  static constexpr uint32_t kMatchLimit = 10'000'000;   // backtracking steps per match

  // Errors: "bad_pattern" with PCRE2's message and the offset in the pattern.
  static Result<Pattern> compile(const std::string& pattern);

  // Whether all of `value` matches. Errors: "pattern_limit" when the match ran out of its heap
  // or step budget (catastrophic backtracking), naming the pattern.
  Result<bool> full_match(std::string_view value) const;

  const std::string& source() const { return source_; }

 private:
  struct Code;
  std::string source_;
  std::shared_ptr<const Code> code_;
};

}  // namespace kakeya::bridge
