#include "bridge/json_fields.h"

#include <set>

#include "bridge/json_strict.h"
#include "bridge/utf8.h"

namespace kakeya::bridge {

using nlohmann::json;

const char* json_type_name(const json& v) {
  if (v.is_number_integer()) return "integer";
  if (v.is_number_float()) return "number";
  return v.type_name();
}

Error field_type_error(std::string_view field, std::string_view expected, const json& v) {
  return make_error(errc::kBadType, "`" + std::string(field) + "` must be " + std::string(expected) + ", got " +
                                    json_type_name(v) + " " + json_excerpt(v));
}

Error field_value_error(std::string_view field, const json& v, std::string_view why) {
  return make_error(errc::kBadValue,
                    "`" + std::string(field) + "` = " + json_excerpt(v) + " is invalid: " + std::string(why));
}

Status check_exact_keys(const json& obj, std::string_view path, std::initializer_list<const char*> keys) {
  const std::set<std::string> allowed(keys.begin(), keys.end());
  for (const auto& [k, _] : obj.items()) {
    if (!allowed.count(k)) return make_error(errc::kUnknownKey, "unknown key `" + json_path_append_key(path, k) + "`");
  }
  for (const char* k : keys) {
    if (!obj.contains(k)) return make_error(errc::kMissingKey, "missing key `" + json_path_append_key(path, k) + "`");
  }
  return ok_status();
}

Result<std::string> string_field(const json& obj, std::string_view path, const char* key) {
  const json& v = obj.at(key);
  if (!v.is_string()) return field_type_error(json_path_append_key(path, key), "a string", v);
  return v.get<std::string>();
}

Status check_info_string(std::string_view field, const std::string& s, std::size_t max_bytes) {
  if (!is_valid_utf8(s)) return field_value_error(field, json(s), "not well-formed UTF-8");
  if (s.size() > max_bytes) {
    return field_value_error(field, json(s), "longer than " + std::to_string(max_bytes) + " bytes");
  }
  for (char c : s) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      return field_value_error(field, json(s), "contains a control character");
    }
  }
  return ok_status();
}

Status check_document_size(std::string_view what, std::string_view text, std::size_t max_bytes) {
  if (text.size() <= max_bytes) return ok_status();
  return make_error(errc::kTooLarge, std::string(what) + " is " + std::to_string(text.size()) +
                                     " bytes, more than the limit of " + std::to_string(max_bytes));
}

}  // namespace kakeya::bridge
