#include "bridge/report_envelope.h"

#include <algorithm>

#include <gtest/gtest.h>

#include "bridge/error_codes.h"
#include "bridge/gate.h"
#include "bridge/json_schema.h"

namespace kakeya::bridge {
namespace {

using nlohmann::json;

ReportEnvelope generate_envelope() {
  ReportEnvelope e;
  e.kind = "generate";
  e.created_at = "2026-01-02T03:04:05Z";
  e.engine = ReportEngine{"0.1.0+abc", "cpu", 4, "avx2", "GNU 12.2.0 Release"};
  e.model = ReportModel{"/models/stories260K.gguf", std::string(64, 'a'), 1185376, "llama", false};
  return e;
}

TEST(ReportEnvelope, RoundTripsWithKindSpecificKeysAround) {
  json report = to_json(generate_envelope());
  report["token_ids"] = json::array({1, 2, 3});  // a writer's own keys are not the envelope's business
  report["timings"] = {{"decode_s", 0.5}};
  auto back = read_report_envelope(report);
  ASSERT_TRUE(back.ok()) << back.error().str();
  EXPECT_EQ(to_json(*back), to_json(generate_envelope()));
  ReportEnvelope probe;  // env-probe: no model, no threads
  probe.kind = "env-probe";
  probe.created_at = "2026-01-02T03:04:05Z";
  probe.engine = ReportEngine{"0.1.0+abc", "cpu", std::nullopt, "", ""};
  auto p = read_report_envelope(to_json(probe));
  ASSERT_TRUE(p.ok()) << p.error().str();
  EXPECT_FALSE(p->model.has_value());
  EXPECT_FALSE(p->engine.threads.has_value());
}

void expect_invalid(const json& report, ErrorCode code, const std::string& needle) {
  auto r = read_report_envelope(report);
  ASSERT_FALSE(r.ok()) << report.dump();
  EXPECT_EQ(r.error().code, code) << r.error().str();
  EXPECT_NE(r.error().message.find(needle), std::string::npos) << r.error().str();
}

TEST(ReportEnvelope, WhatTheRunnerRefusesBeforeTheGate) {
  json r = to_json(generate_envelope());
  r["kind"] = "benchmark";
  expect_invalid(r, errc::kSchemaViolation, "/kind");
  r = to_json(generate_envelope());
  r["model"]["sha256"] = "ABC";
  expect_invalid(r, errc::kSchemaViolation, "/model/sha256");
  r = to_json(generate_envelope());
  r["engine"].erase("version");
  expect_invalid(r, errc::kSchemaViolation, "/engine");
  r = to_json(generate_envelope());
  r["schema_version"] = 2;
  expect_invalid(r, errc::kSchemaViolation, "/schema_version");
  r = to_json(generate_envelope());
  r.erase("created_at");
  expect_invalid(r, errc::kSchemaViolation, "report.schema.json");
  r = to_json(generate_envelope());
  r["created_at"] = "yesterday";
  expect_invalid(r, errc::kSchemaViolation, "/created_at");
  r["created_at"] = "2026-02-30T00:00:00Z";
  expect_invalid(r, errc::kBadValue, "created_at");
  expect_invalid(json::array(), errc::kSchemaViolation, "report.schema.json: /:");
}

TEST(ReportEnvelope, KindsAgreeWithTheSchemaAndTheGate) {
  const json schema = json::parse(schema_text(JsonSchema::kReport));
  std::vector<std::string> schema_kinds = schema["properties"]["kind"]["enum"].get<std::vector<std::string>>();
  EXPECT_EQ(schema_kinds, report_kinds());
  const auto all_rules = all_gate_rules();
  for (const std::string& kind : report_kinds()) {
    // The gate has a rule set for every kind (an unknown kind gets every rule).
    EXPECT_NE(gate_rules_for_kind(kind), all_rules) << kind;
  }
}

}  // namespace
}  // namespace kakeya::bridge
