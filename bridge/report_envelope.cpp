#include "bridge/report_envelope.h"

#include "bridge/error_codes.h"
#include "bridge/json_schema.h"
#include "bridge/json_strict.h"
#include "bridge/request.h"

namespace kakeya::bridge {
namespace {

using nlohmann::json;

std::string string_or_empty(const json& obj, const char* key) {
  const auto it = obj.find(key);
  return it != obj.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// REQUIRES: `report` passed the report schema.
Result<ReportEnvelope> typed_envelope(const json& report) {
  ReportEnvelope e;
  e.kind = report.at("kind").get<std::string>();
  e.created_at = report.at("created_at").get<std::string>();
  if (!is_rfc3339(e.created_at)) {
    return make_error(errc::kBadValue, "report `created_at` = " + json_excerpt(report.at("created_at")) +
                                           " is not an RFC 3339 date-time");
  }
  const json& engine = report.at("engine");
  e.engine.version = engine.at("version").get<std::string>();
  e.engine.backend = engine.at("backend").get<std::string>();
  if (engine.contains("threads")) e.engine.threads = engine.at("threads").get<int64_t>();
  e.engine.kernel_isa = string_or_empty(engine, "kernel_isa");
  e.engine.build = string_or_empty(engine, "build");
  if (report.contains("model")) {
    const json& m = report.at("model");
    ReportModel model;
    model.path = m.at("path").get<std::string>();
    model.sha256 = m.at("sha256").get<std::string>();
    model.file_size_bytes = m.at("file_size_bytes").get<uint64_t>();
    model.architecture = m.at("architecture").get<std::string>();
    model.synthetic = m.value("synthetic", false);
    e.model = std::move(model);
  }
  return e;
}

}  // namespace

const std::vector<std::string>& report_kinds() {
  static const std::vector<std::string> kinds = {"env-probe",  "generate",      "ar-bench",      "specdecode-bench",
                                                 "niah-eval", "kv-quant-eval", "backend-parity", "perplexity"};
  return kinds;
}

nlohmann::json to_json(const ReportEnvelope& e) {
  json engine = {{"version", e.engine.version}, {"backend", e.engine.backend}};
  if (e.engine.threads) engine["threads"] = *e.engine.threads;
  if (!e.engine.kernel_isa.empty()) engine["kernel_isa"] = e.engine.kernel_isa;
  if (!e.engine.build.empty()) engine["build"] = e.engine.build;
  json out = {{"kind", e.kind}, {"schema_version", kReportSchemaVersion}, {"created_at", e.created_at},
              {"engine", std::move(engine)}};
  if (e.model) {
    out["model"] = {{"path", e.model->path},
                    {"sha256", e.model->sha256},
                    {"file_size_bytes", e.model->file_size_bytes},
                    {"architecture", e.model->architecture},
                    {"synthetic", e.model->synthetic}};
  }
  return out;
}

Result<ReportEnvelope> read_report_envelope(const nlohmann::json& report) {
  KAKEYA_TRY(validate_against_schema(JsonSchema::kReport, report));
  try {
    return typed_envelope(report);
  } catch (const json::exception& e) {  // the schema let through what the type cannot hold
    return make_error(errc::kSchemaViolation, std::string("report envelope does not fit ReportEnvelope: ") + e.what());
  }
}

}  // namespace kakeya::bridge
