#include "bridge/cancel_request.h"

#include "bridge/json_fields.h"
#include "bridge/json_strict.h"
#include "bridge/layout.h"
#include "bridge/limits.h"
#include "bridge/request.h"

namespace kakeya::bridge {

using nlohmann::json;

namespace {
constexpr std::size_t kMaxRequestedByBytes = 256;
}  // namespace

Status validate_cancel(const CancelRequest& c) {
  KAKEYA_TRY(check_info_string("requested_by", c.requested_by, kMaxRequestedByBytes));
  if (!is_rfc3339(c.created_at)) {
    return field_value_error("created_at", json(c.created_at), "not an RFC 3339 date-time (e.g. 2024-05-01T12:00:00Z)");
  }
  if (c.reason.size() > kMaxCancelReasonBytes) {
    return field_value_error("reason", json(c.reason), "longer than " + std::to_string(kMaxCancelReasonBytes) + " bytes");
  }
  return ok_status();
}

Result<CancelRequest> parse_cancel(std::string_view json_text) {
  KAKEYA_TRY(check_document_size(kCancelPath, json_text, kMaxCancelBytes));
  KAKEYA_ASSIGN_OR_RETURN(json doc, parse_json_strict(json_text));
  if (!doc.is_object()) return field_type_error("<root>", "an object", doc);
  KAKEYA_TRY(check_exact_keys(doc, "", {"requested_by", "created_at", "reason"}));
  CancelRequest c;
  KAKEYA_ASSIGN_OR_RETURN(c.requested_by, string_field(doc, "", "requested_by"));
  KAKEYA_ASSIGN_OR_RETURN(c.created_at, string_field(doc, "", "created_at"));
  KAKEYA_ASSIGN_OR_RETURN(c.reason, string_field(doc, "", "reason"));
  KAKEYA_TRY(validate_cancel(c));
  return c;
}

json to_json(const CancelRequest& c) {
  return json{{"requested_by", c.requested_by}, {"created_at", c.created_at}, {"reason", c.reason}};
}

}  // namespace kakeya::bridge
