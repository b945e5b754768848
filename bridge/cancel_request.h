#pragma once
// The cancel request: `.kakeya/run/cancel.json`, pushed by a client (`kakeya cancel`) on top of a
// request branch (DESIGN.md §2). Its presence asks the runner to cancel; its content says who asked
// and why.
//
// Shape (every key required, no others; duplicate keys rejected):
//   {
//     "requested_by": "alice@example.com",     string, <= 256 bytes, no control characters
//     "created_at": "2024-05-01T12:00:00Z",    RFC 3339 date-time
//     "reason": "wrong model"                  string, <= 4096 bytes (may span lines)
//   }

#include <cstddef>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "bridge/result.h"

namespace kakeya::bridge {

inline constexpr std::size_t kMaxCancelReasonBytes = 4096;

struct CancelRequest {
  std::string requested_by;
  std::string created_at;  // RFC 3339
  std::string reason;
};

// Strict parse of cancel.json text. Errors: `too_large` (more than kMaxCancelBytes, checked before
// parsing), parse_error / duplicate_key / too_deep (parse_json_strict), unknown_key, missing_key,
// bad_type, bad_value; messages name the field and show the value escaped.
Result<CancelRequest> parse_cancel(std::string_view json_text);

// Same checks on an in-memory request (what a client validates before pushing).
Status validate_cancel(const CancelRequest& cancel);

// The cancel.json object (keys as above).
nlohmann::json to_json(const CancelRequest& cancel);

}  // namespace kakeya::bridge
