#include "bridge/units.h"

#include <charconv>
#include <cmath>
#include <string>

#include "bridge/error_codes.h"

namespace kakeya::bridge {

Result<std::size_t> parse_byte_size(std::string_view text) {
  std::size_t i = 0;
  while (i < text.size() && text[i] >= '0' && text[i] <= '9') ++i;
  if (i == 0 || i > 18) return make_error(errc::kBadValue, "'" + std::string(text) + "' is not a byte size like 8MiB");
  unsigned long long n = 0;
  std::from_chars(text.data(), text.data() + i, n);  // <= 18 digits: cannot overflow
  std::string_view unit = text.substr(i);
  if (!unit.empty() && unit[0] == ' ') unit.remove_prefix(1);
  unsigned long long mult = 0;
  if (unit.empty() || unit == "B") mult = 1;
  if (unit == "KiB") mult = 1ull << 10;
  if (unit == "MiB") mult = 1ull << 20;
  if (unit == "GiB") mult = 1ull << 30;
  if (mult == 0) {
    return make_error(errc::kBadValue, "'" + std::string(text) + "' has an unknown unit (use B, KiB, MiB or GiB)");
  }
  if (n > (1ull << 40) / mult) return make_error(errc::kBadValue, "'" + std::string(text) + "' is too large");
  return static_cast<std::size_t>(n * mult);
}

Result<double> parse_duration_s(std::string_view text) {
  auto bad = [&](std::string_view why) {
    return make_error(errc::kBadDuration, "duration '" + std::string(text) + "' " + std::string(why) +
                                              " (a number and a unit s, m, h or d, e.g. 30m, 12h, 7d)");
  };
  if (text.empty()) return bad("is empty");
  double mult = 0;
  switch (text.back()) {
    case 's': mult = 1; break;
    case 'm': mult = 60; break;
    case 'h': mult = 3600; break;
    case 'd': mult = 86400; break;
    default: break;
  }
  if (mult == 0) {
    const bool bare_number = text.find_first_not_of("0123456789.") == std::string_view::npos;
    return bad(bare_number ? "has no unit" : "is not a duration");
  }
  const std::string_view num = text.substr(0, text.size() - 1);
  if (num.empty() || num.find_first_not_of("0123456789.") != std::string_view::npos) return bad("is not a duration");
  double v = 0;
  const auto [end, ec] = std::from_chars(num.data(), num.data() + num.size(), v, std::chars_format::fixed);
  if (ec != std::errc() || end != num.data() + num.size() || !std::isfinite(v)) return bad("is not a duration");
  return v * mult;
}

}  // namespace kakeya::bridge
