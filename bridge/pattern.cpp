#include "bridge/pattern.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

namespace kakeya::bridge {

struct Pattern::Code {
  pcre2_code* code = nullptr;
  ~Code() { pcre2_code_free(code); }
};

namespace {

std::string pcre2_message(int code) {
  PCRE2_UCHAR buf[256];
  const int n = pcre2_get_error_message(code, buf, sizeof buf);
  return n < 0 ? "PCRE2 error " + std::to_string(code) : std::string(reinterpret_cast<const char*>(buf));
}

}  // namespace

Result<Pattern> Pattern::compile(const std::string& pattern) {
  int err = 0;
  PCRE2_SIZE at = 0;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                   PCRE2_ANCHORED | PCRE2_ENDANCHORED, &err, &at, nullptr);
  if (code == nullptr) {
    return make_error(errc::kBadPattern, "invalid pattern " + pattern + ": " + pcre2_message(err) + " at offset " +
                                         std::to_string(at));
  }
  auto owned = std::make_shared<Code>();
  owned->code = code;
  Pattern p;
  p.source_ = pattern;
  p.code_ = std::move(owned);
  return p;
}

Result<bool> Pattern::full_match(std::string_view value) const {
  std::unique_ptr<pcre2_match_context, decltype(&pcre2_match_context_free)> ctx(
      pcre2_match_context_create(nullptr), pcre2_match_context_free);
  std::unique_ptr<pcre2_match_data, decltype(&pcre2_match_data_free)> md(
      pcre2_match_data_create_from_pattern(code_->code, nullptr), pcre2_match_data_free);
  if (!ctx || !md) return make_error(errc::kPatternLimit, "out of memory matching pattern " + source_);
  pcre2_set_heap_limit(ctx.get(), kHeapLimitKiB);
  pcre2_set_match_limit(ctx.get(), kMatchLimit);
  const int rc = pcre2_match(code_->code, reinterpret_cast<PCRE2_SPTR>(value.data()), value.size(), 0, 0, md.get(),
                             ctx.get());
  if (rc >= 0) return true;
  if (rc == PCRE2_ERROR_NOMATCH) return false;
  return make_error(errc::kPatternLimit, "matching pattern " + source_ + " gave up: " + pcre2_message(rc));
}

}  // namespace kakeya::bridge
