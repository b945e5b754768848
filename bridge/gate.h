#pragma once
// Evidence gate (DESIGN.md §6): mechanical rules over one engine report JSON. Each rule has a
// stable code; a violation names the rule, what is wrong and where (a JSON pointer, RFC 6901).
// Any violation makes the run `gate_failed`. `kakeya gate FILE...` runs the same function.
// docs/evidence-gate.md is the user-facing version of this contract.
//
// Report shape read by the rules (schema_version 1; fields not listed are ignored):
//   kind            "ar-bench" | "specdecode-bench" | "niah-eval" | "kv-quant-eval" |
//                   "backend-parity" | "generate" | "env-probe" | "perplexity"
//   schema_version  1
//   config          {temperature?: number}                 (run-wide decoding config)
//   model           {sha256: 64 lowercase hex, path, ...}
//   engine          {version: non-empty string, backend, threads}
//   warmup          {done: bool, prompt_id: string, timed: bool}
//   arms[]          {name (unique), role: "baseline"|"candidate"|"oracle", backend_requested,
//                    backend_used, timing_scope: "decode_only"|"e2e"|..., config: {...},
//                    samples[]: {prompt_id, prefill_s, decode_s, e2e_s, decode_tokens, drafted,
//                                accepted, text, needle: bool, recall: bool|null,
//                                resident_kv_bytes},
//                    aggregates: {decode_tok_s_median, decode_tokens_median, recall,
//                                 resident_kv_bytes_measured: bool, draft_blocks}}
//   comparisons[]   {baseline: arm name, candidate: arm name, metric, ratio,
//                    claim: "speedup"|"memory_saving"|"recall"}
//   lossless        {checked: bool, equal: bool}
//
// Rules (code: what trips it; fields read):
//   REPORT_SHAPE          always checked: the report is not an object, schema_version != 1, kind
//                         missing/unknown, arms/comparisons not arrays of objects, an arm without a
//                         unique string name, a comparison naming an arm that does not exist.
//   SAMPLES               an arm has < 5 samples, or a report of this kind has no arms.
//   DECODE_TOKENS         median of samples[].decode_tokens < 32 in an arm (missing counts as 0).
//   WARMUP                warmup missing, warmup.done != true, warmup.timed != false, or
//                         warmup.prompt_id equal to the prompt_id of a timed sample.
//   SELF_COMPARISON       a comparison whose baseline and candidate are the same arm name, or two
//                         arms whose `config` objects are equal (both missing counts as equal).
//   TIMING_SCOPE_MISMATCH a "speedup" comparison whose arms' timing_scope differ or are missing,
//                         or whose metric "decode_*" / "e2e_*" disagrees with that scope
//                         ("decode_only" / "e2e").
//   PREFILL_VARIANCE      within an arm, max/min of samples[].prefill_s > 3.0, or a prefill_s <= 0.
//   RECALL_DELTA          a "recall" comparison where |recall(candidate) − recall(baseline)| > 0.05,
//                         either recall is unknown, or the baseline arm's role is not "oracle".
//                         recall(arm) = mean of samples[].recall booleans, else aggregates.recall.
//   RECALL_NOT_APPLICABLE a sample with recall != null but needle != true; an arm whose samples
//                         all lack a needle but whose aggregates.recall != null.
//   MEMORY_UNMEASURED     a "memory_saving" comparison where an arm's
//                         aggregates.resident_kv_bytes_measured != true or a sample lacks a
//                         non-negative resident_kv_bytes.
//   NOT_LOSSLESS          greedy run (config.temperature missing or 0): lossless.checked != true
//                         or lossless.equal != true.
//   SPEC_NEVER_RAN        no "candidate" arm, or a candidate arm with aggregates.draft_blocks
//                         missing or 0, or whose samples drafted nothing (sum of drafted == 0).
//   SILENT_FALLBACK       an arm whose backend_used differs from backend_requested (unless
//                         backend_requested is "auto"), or either field is missing.
//   OUTPUT_DEGENERATE     a sample text with >= 8 identical short lines (trimmed, 1..40 bytes), or
//                         ending in a 1..8 character unit repeated >= 8 times.
//   PROVENANCE            model.sha256 not 64 lowercase hex, or engine.version missing/empty.
//                         env-probe reports need model.sha256 only when they have a `model`.
//
// Rules applied per kind (when `rules` is empty):
//   ar-bench          SAMPLES DECODE_TOKENS WARMUP SELF_COMPARISON TIMING_SCOPE_MISMATCH
//                     PREFILL_VARIANCE RECALL_NOT_APPLICABLE MEMORY_UNMEASURED SILENT_FALLBACK
//                     OUTPUT_DEGENERATE PROVENANCE
//   specdecode-bench  ar-bench's rules + NOT_LOSSLESS SPEC_NEVER_RAN
//   niah-eval,        SAMPLES SELF_COMPARISON RECALL_DELTA RECALL_NOT_APPLICABLE MEMORY_UNMEASURED
//   kv-quant-eval     SILENT_FALLBACK PROVENANCE
//   backend-parity    SELF_COMPARISON SILENT_FALLBACK PROVENANCE
//   generate,         PROVENANCE
//   env-probe,
//   perplexity
//   unknown kind      every rule (REPORT_SHAPE already fails it)
// OUTPUT_DEGENERATE guards timing claims (a degenerate loop inflates speculative acceptance); in
// recall evaluations a broken continuation is a measured outcome, so it is not applied there.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace kakeya::bridge {

struct GateViolation {
  std::string code;     // a rule code from all_gate_rules(), or "UNKNOWN_RULE"
  std::string message;  // one line naming the arm/sample and the offending values
  std::string path;     // JSON pointer into the report, e.g. "/arms/1/samples/3/prefill_s"
};

struct GateVerdict {
  bool passed = false;  // no violations
  std::vector<GateViolation> evidence_violations;
  std::vector<std::string> rules_checked;  // in all_gate_rules() order
  std::vector<std::string> rules_skipped;  // not applicable to the report's kind

  // {"passed", "evidence_violations": [{"code","message","path"}], "rules_checked",
  //  "rules_skipped"}: the `gate` object of a report and the content of .kakeya/run/gate.json.
  nlohmann::json to_json() const;
};

// Every rule code, in evaluation order (REPORT_SHAPE first).
std::vector<std::string> all_gate_rules();

// The rules applied to a report of `kind` when no explicit list is given (table above).
std::vector<std::string> gate_rules_for_kind(const std::string& kind);

// Why `text` is degenerate (the OUTPUT_DEGENERATE test), or nullopt: >= 8 identical lines of
// 1..40 bytes after trimming spaces/tabs/CR, or a unit of 1..8 UTF-8 characters repeated >= 8
// times at the very end. Returns a short description such as `ends with "ab" repeated 8+ times`.
std::optional<std::string> output_degenerate_reason(std::string_view text);

// Evaluates `report`. `rules` empty = the rules of the report's kind; otherwise exactly the listed
// rules (as a preset declares them) plus REPORT_SHAPE; an unknown name is a violation with code
// "UNKNOWN_RULE" (fail closed). Never throws.
GateVerdict evaluate_gate(const nlohmann::json& report, const std::vector<std::string>& rules);

}  // namespace kakeya::bridge
