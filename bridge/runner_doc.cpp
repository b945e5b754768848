#include "bridge/runner_doc.h"

#include <algorithm>

#include "bridge/json_fields.h"
#include "bridge/json_strict.h"
#include "bridge/json_text.h"
#include "bridge/limits.h"
#include "bridge/sha256.h"

namespace kakeya::bridge {

using nlohmann::json;

namespace {

Result<std::vector<std::string>> string_list(const json& doc, const char* key) {
  std::vector<std::string> out;
  if (!doc.contains(key)) return out;
  const json& v = doc.at(key);
  if (!v.is_array()) return field_type_error(key, "an array of strings", v);
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (!v[i].is_string()) return field_type_error(json_path_append_index(key, i), "a string", v[i]);
    out.push_back(v[i].get<std::string>());
  }
  return out;
}

Result<std::string> optional_string(const json& doc, const char* key) {
  if (!doc.contains(key)) return std::string();
  return string_field(doc, "", key);
}

}  // namespace

bool RunnerDoc::offers(std::string_view preset) const {
  return std::find(presets.begin(), presets.end(), preset) != presets.end();
}

json to_json(const RunnerDoc& d) {
  return json{{"schema_version", 1},       {"id", d.id},
              {"labels", d.labels},         {"version", d.version},
              {"max_jobs", d.max_jobs},     {"running", d.running},
              {"state", d.state},           {"heartbeat_s", d.heartbeat_s},
              {"updated_at", d.updated_at}, {"presets", d.presets},
              {"catalog_digest", d.catalog_digest}};
}

Result<RunnerDoc> parse_runner_doc(std::string_view text) {
  KAKEYA_TRY(check_document_size(kRunnerDocFile, text, kMaxRunnerDocBytes));
  KAKEYA_ASSIGN_OR_RETURN(json doc, parse_json_strict(text));
  if (!doc.is_object()) return field_type_error("<root>", "an object", doc);
  RunnerDoc d;
  for (const char* key : {"id", "state"}) {
    if (!doc.contains(key)) return make_error(errc::kMissingKey, std::string(kRunnerDocFile) + " is missing key `" + key + "`");
  }
  KAKEYA_ASSIGN_OR_RETURN(d.id, string_field(doc, "", "id"));
  KAKEYA_ASSIGN_OR_RETURN(d.state, string_field(doc, "", "state"));
  KAKEYA_ASSIGN_OR_RETURN(d.version, optional_string(doc, "version"));
  KAKEYA_ASSIGN_OR_RETURN(d.updated_at, optional_string(doc, "updated_at"));
  KAKEYA_ASSIGN_OR_RETURN(d.catalog_digest, optional_string(doc, "catalog_digest"));
  KAKEYA_ASSIGN_OR_RETURN(d.labels, string_list(doc, "labels"));
  KAKEYA_ASSIGN_OR_RETURN(d.running, string_list(doc, "running"));
  KAKEYA_ASSIGN_OR_RETURN(d.presets, string_list(doc, "presets"));
  if (doc.contains("max_jobs")) {
    if (!doc["max_jobs"].is_number_integer()) return field_type_error("max_jobs", "an integer", doc["max_jobs"]);
    d.max_jobs = doc["max_jobs"].get<int64_t>();
  }
  if (doc.contains("heartbeat_s")) {
    if (!doc["heartbeat_s"].is_number()) return field_type_error("heartbeat_s", "a number", doc["heartbeat_s"]);
    d.heartbeat_s = doc["heartbeat_s"].get<double>();
  }
  return d;
}

std::string catalog_digest(const PresetCatalog& catalog) {
  json arr = json::array();
  for (const auto& p : catalog.presets()) arr.push_back(to_json(p));
  return sha256_hex(to_json_text(arr));
}

}  // namespace kakeya::bridge
