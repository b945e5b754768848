#include "bridge/json_text.h"

#include "bridge/utf8.h"

namespace kakeya::bridge {
namespace {

template <typename Json>
bool all_valid(const Json& v) {
  if (v.is_string()) return is_valid_utf8(v.template get_ref<const std::string&>());
  if (v.is_object()) {
    for (auto it = v.begin(); it != v.end(); ++it) {
      if (!is_valid_utf8(it.key()) || !all_valid(it.value())) return false;
    }
  } else if (v.is_array()) {
    for (const auto& e : v) {
      if (!all_valid(e)) return false;
    }
  }
  return true;
}

template <typename Json>
Json escaped_copy(const Json& v) {
  if (v.is_string()) return Json(escape_invalid_utf8(v.template get_ref<const std::string&>()));
  if (v.is_object()) {
    Json out = Json::object();
    for (auto it = v.begin(); it != v.end(); ++it) out[escape_invalid_utf8(it.key())] = escaped_copy(it.value());
    return out;
  }
  if (v.is_array()) {
    Json out = Json::array();
    for (const auto& e : v) out.push_back(escaped_copy(e));
    return out;
  }
  return v;
}

template <typename Json>
std::string dump_escaped(const Json& doc, int indent) {
  // The replace handler is a second guard only: after escaping, no string is ill-formed.
  constexpr auto kReplace = Json::error_handler_t::replace;
  if (all_valid(doc)) return doc.dump(indent, ' ', /*ensure_ascii=*/false, kReplace);
  return escaped_copy(doc).dump(indent, ' ', /*ensure_ascii=*/false, kReplace);
}

}  // namespace

std::string to_json_text(const nlohmann::json& doc, int indent) { return dump_escaped(doc, indent); }
std::string to_json_text(const nlohmann::ordered_json& doc, int indent) { return dump_escaped(doc, indent); }
std::string to_json_file(const nlohmann::json& doc) { return dump_escaped(doc, 2) + "\n"; }

}  // namespace kakeya::bridge
