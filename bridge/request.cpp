#include "bridge/request.h"

#include <ctime>
#include <random>

#include "bridge/json_fields.h"
#include "bridge/json_schema.h"
#include "bridge/json_strict.h"
#include "bridge/json_text.h"
#include "bridge/layout.h"
#include "bridge/limits.h"
#include "bridge/utf8.h"

namespace kakeya::bridge {
namespace {

using nlohmann::json;

constexpr std::size_t kMaxInfoLength = 256;

bool is_lower_alnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }
bool is_digit(char c) { return c >= '0' && c <= '9'; }

Error bad_type(std::string_view field, std::string_view expected, const json& v) {
  return field_type_error(field, expected, v);
}

Error bad_value(std::string_view field, const json& v, std::string_view why) {
  return field_value_error(field, v, why);
}

int parse_2(std::string_view s, std::size_t at) { return (s[at] - '0') * 10 + (s[at + 1] - '0'); }

bool digits_at(std::string_view s, std::size_t at, std::size_t n) {
  if (at + n > s.size()) return false;
  for (std::size_t i = 0; i < n; ++i) {
    if (!is_digit(s[at + i])) return false;
  }
  return true;
}

}  // namespace

bool is_valid_nonce(std::string_view nonce) {
  if (nonce.size() < 4 || nonce.size() > 64) return false;
  if (!is_lower_alnum(nonce[0])) return false;
  for (char c : nonce.substr(1)) {
    if (!is_lower_alnum(c) && c != '-') return false;
  }
  return true;
}

bool is_valid_preset_name(std::string_view name) {
  if (name.size() < 2 || name.size() > 41) return false;
  if (!(name[0] >= 'a' && name[0] <= 'z')) return false;
  for (char c : name.substr(1)) {
    if (!is_lower_alnum(c) && c != '-') return false;
  }
  return true;
}

bool is_rfc3339(std::string_view s) {
  // 0123456789012345678
  // YYYY-MM-DDTHH:MM:SS
  if (s.size() < 20) return false;
  if (!digits_at(s, 0, 4) || s[4] != '-' || !digits_at(s, 5, 2) || s[7] != '-' || !digits_at(s, 8, 2)) return false;
  if (s[10] != 'T' && s[10] != 't') return false;
  if (!digits_at(s, 11, 2) || s[13] != ':' || !digits_at(s, 14, 2) || s[16] != ':' || !digits_at(s, 17, 2)) {
    return false;
  }
  int year = (s[0] - '0') * 1000 + (s[1] - '0') * 100 + parse_2(s, 2);
  int month = parse_2(s, 5), day = parse_2(s, 8);
  int hour = parse_2(s, 11), minute = parse_2(s, 14), second = parse_2(s, 17);
  if (month < 1 || month > 12 || day < 1) return false;
  static constexpr int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
  int max_day = kDays[month - 1] + (month == 2 && leap ? 1 : 0);
  if (day > max_day || hour > 23 || minute > 59 || second > 60) return false;
  std::size_t i = 19;
  if (s[i] == '.') {
    ++i;
    std::size_t start = i;
    while (i < s.size() && is_digit(s[i])) ++i;
    if (i == start || i - start > 9) return false;  // 1..9 digits: down to nanoseconds
  }
  if (i >= s.size()) return false;
  if (s[i] == 'Z' || s[i] == 'z') return i + 1 == s.size();
  if (s[i] != '+' && s[i] != '-') return false;
  if (i + 6 != s.size() || !digits_at(s, i + 1, 2) || s[i + 3] != ':' || !digits_at(s, i + 4, 2)) return false;
  return parse_2(s, i + 1) <= 23 && parse_2(s, i + 4) <= 59;
}

Status validate_request(const RequestManifest& m) {
  if (m.schema_version != kRequestSchemaVersion) {
    return bad_value("schema_version", json(m.schema_version), "only schema_version 1 is supported");
  }
  if (!is_valid_preset_name(m.preset)) {
    return bad_value("preset", json(m.preset), "must match ^[a-z][a-z0-9-]{1,40}$");
  }
  if (!m.params.is_object()) return bad_type("params", "an object", m.params);
  for (const auto& [k, v] : m.params.items()) {
    std::string field = json_path_append_key("params", k);
    if (k.empty()) return bad_value(field, v, "parameter names must not be empty");
    if (!is_valid_utf8(k)) return bad_value(field, v, "the parameter name is not well-formed UTF-8");
    if (v.is_string() && !is_valid_utf8(v.get_ref<const std::string&>())) {
      return bad_value(field, v, "not well-formed UTF-8");
    }
    if (v.is_null()) return bad_value(field, v, "null is not a parameter value (omit the key to use the default)");
    if (v.is_object() || v.is_array()) return bad_type(field, "a string, number or boolean", v);
  }
  if (!is_valid_nonce(m.nonce)) return bad_value("nonce", json(m.nonce), "must match ^[a-z0-9][a-z0-9-]{3,63}$");
  KAKEYA_TRY(check_info_string("requested_by", m.requested_by, kMaxInfoLength));
  if (!is_rfc3339(m.created_at)) {
    return bad_value("created_at", json(m.created_at), "not an RFC 3339 date-time (e.g. 2024-05-01T12:00:00Z)");
  }
  if (m.client.name.empty()) return bad_value("client.name", json(m.client.name), "must not be empty");
  KAKEYA_TRY(check_info_string("client.name", m.client.name, kMaxInfoLength));
  KAKEYA_TRY(check_info_string("client.version", m.client.version, kMaxInfoLength));
  return ok_status();
}

Result<RequestManifest> parse_request(std::string_view json_text) {
  KAKEYA_TRY(check_document_size(kRequestPath, json_text, kMaxRequestBytes));
  KAKEYA_ASSIGN_OR_RETURN(json doc, parse_json_strict(json_text));
  if (!doc.is_object()) return bad_type("<root>", "an object", doc);
  KAKEYA_TRY(check_exact_keys(doc, "",
                        {"schema_version", "preset", "params", "nonce", "requested_by", "created_at", "client"}));

  RequestManifest m;
  const json& sv = doc.at("schema_version");
  // JSON integer only: 1.0 (float), "1" (string) and true (boolean) are all rejected.
  if (!sv.is_number_integer()) return bad_type("schema_version", "the JSON integer 1", sv);
  if (sv.get<std::int64_t>() != kRequestSchemaVersion) {
    return bad_value("schema_version", sv, "only schema_version 1 is supported");
  }
  m.schema_version = kRequestSchemaVersion;

  KAKEYA_ASSIGN_OR_RETURN(m.preset, string_field(doc, "", "preset"));
  const json& params = doc.at("params");
  if (!params.is_object()) return bad_type("params", "an object", params);
  m.params = params;
  KAKEYA_ASSIGN_OR_RETURN(m.nonce, string_field(doc, "", "nonce"));
  KAKEYA_ASSIGN_OR_RETURN(m.requested_by, string_field(doc, "", "requested_by"));
  KAKEYA_ASSIGN_OR_RETURN(m.created_at, string_field(doc, "", "created_at"));

  const json& client = doc.at("client");
  if (!client.is_object()) return bad_type("client", "an object", client);
  KAKEYA_TRY(check_exact_keys(client, "client", {"name", "version"}));
  KAKEYA_ASSIGN_OR_RETURN(m.client.name, string_field(client, "client", "name"));
  KAKEYA_ASSIGN_OR_RETURN(m.client.version, string_field(client, "client", "version"));

  KAKEYA_TRY(validate_request(m));
  KAKEYA_TRY(validate_against_schema(JsonSchema::kRequest, doc));
  return m;
}

std::string serialize_request(const RequestManifest& m) {
  nlohmann::ordered_json out;
  out["schema_version"] = m.schema_version;
  out["preset"] = m.preset;
  // nlohmann::json objects are std::map-backed, so params come out sorted by key.
  out["params"] = nlohmann::ordered_json::parse(m.params.is_object() ? to_json_text(m.params) : "{}");
  out["nonce"] = m.nonce;
  out["requested_by"] = m.requested_by;
  out["created_at"] = m.created_at;
  out["client"]["name"] = m.client.name;
  out["client"]["version"] = m.client.version;
  return to_json_text(out, 2) + "\n";
}

std::string new_nonce() {
  static constexpr char kAlphabet[] = "abcdefghijklmnopqrstuvwxyz0123456789";
  std::random_device rd;
  std::uniform_int_distribution<int> pick(0, 35);
  std::string nonce(12, '0');
  for (char& c : nonce) c = kAlphabet[pick(rd)];
  return nonce;
}

std::string now_rfc3339() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace kakeya::bridge
