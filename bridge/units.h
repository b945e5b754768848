#pragma once
// Quantities written as text by people: byte sizes in configuration files and durations on the
// command line. One parser per quantity, shared by every place that reads one.

#include <cstddef>
#include <string_view>

#include "bridge/result.h"

namespace kakeya::bridge {

// A byte size: a non-negative decimal integer, optionally followed by B, KiB, MiB or GiB (powers
// of 1024; one optional space), e.g. "8MiB", "512 KiB", "4096". At most 2^40 bytes (1 TiB).
// Error "bad_value" naming the text (no digits, an unknown unit such as "MB", too large).
Result<std::size_t> parse_byte_size(std::string_view text);

// A duration in seconds: a non-negative decimal number followed by its unit, s, m, h or d
// (e.g. "30s", "1.5h", "7d"). A bare number is refused: "7" could mean seconds or days, and
// `kakeya gc --older-than 7` once deleted everything older than 7 seconds.
// Error "bad_duration" naming the text (and saying a unit is required when it lacks one).
Result<double> parse_duration_s(std::string_view text);

}  // namespace kakeya::bridge
