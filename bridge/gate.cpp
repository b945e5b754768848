#include "bridge/gate.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string_view>
#include <utility>

namespace kakeya::bridge {
namespace {

using nlohmann::json;

constexpr size_t kMinSamples = 5;
constexpr double kMinDecodeTokens = 32;
constexpr double kMaxPrefillRatio = 3.0;
constexpr double kMaxRecallDelta = 0.05;
constexpr int kMinRepeats = 8;
constexpr size_t kMaxShortLine = 40;
constexpr size_t kMaxUnitChars = 8;

const std::vector<std::string> kAllRules = {
    "REPORT_SHAPE",   "SAMPLES",         "DECODE_TOKENS",         "WARMUP",
    "SELF_COMPARISON", "TIMING_SCOPE_MISMATCH", "PREFILL_VARIANCE", "RECALL_DELTA",
    "RECALL_NOT_APPLICABLE", "MEMORY_UNMEASURED", "NOT_LOSSLESS", "SPEC_NEVER_RAN",
    "SILENT_FALLBACK", "OUTPUT_DEGENERATE", "PROVENANCE"};

const std::map<std::string, std::vector<std::string>>& kind_rules() {
  static const std::map<std::string, std::vector<std::string>> table = [] {
    const std::vector<std::string> bench = {
        "SAMPLES",           "DECODE_TOKENS",   "WARMUP",           "SELF_COMPARISON",
        "TIMING_SCOPE_MISMATCH", "PREFILL_VARIANCE", "RECALL_NOT_APPLICABLE",
        "MEMORY_UNMEASURED", "SILENT_FALLBACK", "OUTPUT_DEGENERATE", "PROVENANCE"};
    std::vector<std::string> spec = bench;
    spec.insert(spec.end(), {"NOT_LOSSLESS", "SPEC_NEVER_RAN"});
    const std::vector<std::string> recall = {"SAMPLES",           "SELF_COMPARISON",
                                             "RECALL_DELTA",      "RECALL_NOT_APPLICABLE",
                                             "MEMORY_UNMEASURED", "SILENT_FALLBACK",
                                             "PROVENANCE"};
    return std::map<std::string, std::vector<std::string>>{
        {"ar-bench", bench},
        {"specdecode-bench", spec},
        {"niah-eval", recall},
        {"kv-quant-eval", recall},
        {"backend-parity", {"SELF_COMPARISON", "SILENT_FALLBACK", "PROVENANCE"}},
        {"generate", {"PROVENANCE"}},
        {"env-probe", {"PROVENANCE"}},
        {"perplexity", {"PROVENANCE"}},
    };
  }();
  return table;
}

// --- no-throw JSON access ------------------------------------------------------------------------

// The member `key` of an object, or nullptr when `obj` is not an object or has no such member.
const json* member(const json* obj, std::string_view key) {
  if (obj == nullptr || !obj->is_object()) return nullptr;
  const auto it = obj->find(key);
  return it == obj->end() ? nullptr : &*it;
}

std::optional<double> as_number(const json* v) {
  if (v == nullptr || !v->is_number()) return std::nullopt;
  return v->get<double>();
}

std::optional<bool> as_bool(const json* v) {
  if (v == nullptr || !v->is_boolean()) return std::nullopt;
  return v->get<bool>();
}

std::optional<std::string> as_string(const json* v) {
  if (v == nullptr || !v->is_string()) return std::nullopt;
  return v->get<std::string>();
}

std::string num(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

std::string show(const json* v) { return v == nullptr ? "missing" : v->dump(); }

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t m = v.size() / 2;
  return v.size() % 2 == 1 ? v[m] : (v[m - 1] + v[m]) / 2;
}

struct Arm {
  size_t index = 0;
  const json* obj = nullptr;
  std::string name;
  std::string path;  // "/arms/<i>"

  std::vector<std::pair<size_t, const json*>> samples() const {
    std::vector<std::pair<size_t, const json*>> out;
    const json* s = member(obj, "samples");
    if (s == nullptr || !s->is_array()) return out;
    for (size_t i = 0; i < s->size(); ++i) {
      if ((*s)[i].is_object()) out.emplace_back(i, &(*s)[i]);
    }
    return out;
  }
  std::string sample_path(size_t i, std::string_view field) const {
    return path + "/samples/" + std::to_string(i) + "/" + std::string(field);
  }
  const json* aggregate(std::string_view key) const { return member(member(obj, "aggregates"), key); }
};

struct Comparison {
  size_t index = 0;
  const json* obj = nullptr;
  std::string path;  // "/comparisons/<i>"
  const Arm* baseline = nullptr;
  const Arm* candidate = nullptr;
  std::string claim;
};

class Checker {
 public:
  explicit Checker(const json& report) : report_(report) { index(); }

  void run(const std::string& rule) {
    if (rule == "REPORT_SHAPE") return;  // produced by index()
    if (rule == "SAMPLES") return samples();
    if (rule == "DECODE_TOKENS") return decode_tokens();
    if (rule == "WARMUP") return warmup();
    if (rule == "SELF_COMPARISON") return self_comparison();
    if (rule == "TIMING_SCOPE_MISMATCH") return timing_scope();
    if (rule == "PREFILL_VARIANCE") return prefill_variance();
    if (rule == "RECALL_DELTA") return recall_delta();
    if (rule == "RECALL_NOT_APPLICABLE") return recall_not_applicable();
    if (rule == "MEMORY_UNMEASURED") return memory_unmeasured();
    if (rule == "NOT_LOSSLESS") return not_lossless();
    if (rule == "SPEC_NEVER_RAN") return spec_never_ran();
    if (rule == "SILENT_FALLBACK") return silent_fallback();
    if (rule == "OUTPUT_DEGENERATE") return output_degenerate();
    if (rule == "PROVENANCE") return provenance();
  }

  std::string kind() const { return kind_; }
  std::vector<GateViolation> take() { return std::move(violations_); }
  // Shape violations are found while indexing; they lead the list.
  std::vector<GateViolation> take_shape() { return std::move(shape_); }

 private:
  void add(std::string code, std::string message, std::string path) {
    violations_.push_back(GateViolation{std::move(code), std::move(message), std::move(path)});
  }
  void shape(std::string message, std::string path) {
    shape_.push_back(GateViolation{"REPORT_SHAPE", std::move(message), std::move(path)});
  }

  // REPORT_SHAPE, and the arm/comparison index every other rule walks.
  void index() {
    if (!report_.is_object()) {
      shape("report is " + std::string(report_.type_name()) + ", not a JSON object", "");
      return;
    }
    const json* version = member(&report_, "schema_version");
    if (!version || !version->is_number_integer() || version->get<int64_t>() != 1) {
      shape("schema_version is " + show(version) + ", expected 1", "/schema_version");
    }
    const auto kind = as_string(member(&report_, "kind"));
    kind_ = kind.value_or("");
    if (!kind || kind_rules().count(*kind) == 0) {
      shape("kind is " + show(member(&report_, "kind")) + ", not a known report kind", "/kind");
    }
    if (const json* arms = member(&report_, "arms"); arms != nullptr) {
      if (!arms->is_array()) {
        shape("arms is " + std::string(arms->type_name()) + ", not an array", "/arms");
      } else {
        std::set<std::string> names;
        for (size_t i = 0; i < arms->size(); ++i) {
          const std::string path = "/arms/" + std::to_string(i);
          const auto name = as_string(member(&(*arms)[i], "name"));
          if (!(*arms)[i].is_object() || !name || name->empty()) {
            shape("arm " + std::to_string(i) + " is not an object with a string name", path);
            continue;
          }
          if (!names.insert(*name).second) {
            shape("arm name \"" + *name + "\" is used twice", path + "/name");
            continue;
          }
          const json* samples = member(&(*arms)[i], "samples");
          if (samples != nullptr && !samples->is_array()) {
            shape("arm \"" + *name + "\" samples is not an array", path + "/samples");
          }
          arms_.push_back(Arm{i, &(*arms)[i], *name, path});
        }
      }
    }
    if (const json* comps = member(&report_, "comparisons"); comps != nullptr) {
      if (!comps->is_array()) {
        shape("comparisons is " + std::string(comps->type_name()) + ", not an array", "/comparisons");
        return;
      }
      for (size_t i = 0; i < comps->size(); ++i) {
        Comparison c;
        c.index = i;
        c.obj = &(*comps)[i];
        c.path = "/comparisons/" + std::to_string(i);
        c.claim = as_string(member(c.obj, "claim")).value_or("");
        const auto b = as_string(member(c.obj, "baseline"));
        const auto k = as_string(member(c.obj, "candidate"));
        c.baseline = find_arm(b.value_or(""));
        c.candidate = find_arm(k.value_or(""));
        if (c.baseline == nullptr || c.candidate == nullptr) {
          shape("comparison " + std::to_string(i) + " names arms " + show(member(c.obj, "baseline")) +
                    " and " + show(member(c.obj, "candidate")) + "; both must be arm names",
                c.path);
          continue;
        }
        comparisons_.push_back(c);
      }
    }
  }

  const Arm* find_arm(const std::string& name) const {
    for (const Arm& a : arms_) {
      if (a.name == name) return &a;
    }
    return nullptr;
  }

  void samples() {
    if (arms_.empty()) add("SAMPLES", "report has no arms, so no samples", "/arms");
    for (const Arm& a : arms_) {
      const size_t n = a.samples().size();
      if (n < kMinSamples) {
        add("SAMPLES", "arm \"" + a.name + "\" has " + std::to_string(n) + " samples, fewer than " +
                           std::to_string(kMinSamples),
            a.path + "/samples");
      }
    }
  }

  void decode_tokens() {
    for (const Arm& a : arms_) {
      std::vector<double> tokens;
      for (const auto& [i, s] : a.samples()) tokens.push_back(as_number(member(s, "decode_tokens")).value_or(0));
      const double m = median(tokens);
      if (m < kMinDecodeTokens) {
        add("DECODE_TOKENS", "arm \"" + a.name + "\" decodes a median of " + num(m) +
                                 " tokens per sample, fewer than " + num(kMinDecodeTokens),
            a.path + "/samples");
      }
    }
  }

  void warmup() {
    const json* w = member(&report_, "warmup");
    if (w == nullptr || !w->is_object()) {
      add("WARMUP", "report has no warmup object", "/warmup");
      return;
    }
    if (as_bool(member(w, "done")) != true) {
      add("WARMUP", "warmup.done is " + show(member(w, "done")) + ", expected true", "/warmup/done");
    }
    if (as_bool(member(w, "timed")) != false) {
      add("WARMUP", "warmup.timed is " + show(member(w, "timed")) + ": the warm-up must not be timed",
          "/warmup/timed");
    }
    const auto warm_id = as_string(member(w, "prompt_id"));
    if (!warm_id) return;
    for (const Arm& a : arms_) {
      for (const auto& [i, s] : a.samples()) {
        if (as_string(member(s, "prompt_id")) == warm_id) {
          add("WARMUP", "warm-up prompt \"" + *warm_id + "\" is also a timed sample of arm \"" +
                            a.name + "\"",
              a.sample_path(i, "prompt_id"));
        }
      }
    }
  }

  void self_comparison() {
    for (const Comparison& c : comparisons_) {
      if (c.baseline == c.candidate) {
        add("SELF_COMPARISON", "comparison " + std::to_string(c.index) + " compares arm \"" +
                                   c.baseline->name + "\" with itself",
            c.path);
        continue;
      }
      const json* bc = member(c.baseline->obj, "config");
      const json* kc = member(c.candidate->obj, "config");
      const bool equal = (bc == nullptr && kc == nullptr) || (bc != nullptr && kc != nullptr && *bc == *kc);
      if (equal) {
        add("SELF_COMPARISON", "arms \"" + c.baseline->name + "\" and \"" + c.candidate->name +
                                   "\" of comparison " + std::to_string(c.index) +
                                   " have identical config " + show(bc),
            c.path);
      }
    }
  }

  void timing_scope() {
    for (const Comparison& c : comparisons_) {
      if (c.claim != "speedup") continue;
      const auto bs = as_string(member(c.baseline->obj, "timing_scope"));
      const auto ks = as_string(member(c.candidate->obj, "timing_scope"));
      if (!bs || !ks || *bs != *ks) {
        add("TIMING_SCOPE_MISMATCH", "speedup comparison " + std::to_string(c.index) + ": arm \"" +
                                         c.baseline->name + "\" timing_scope " +
                                         show(member(c.baseline->obj, "timing_scope")) +
                                         ", arm \"" + c.candidate->name + "\" timing_scope " +
                                         show(member(c.candidate->obj, "timing_scope")),
            c.path);
        continue;
      }
      const std::string metric = as_string(member(c.obj, "metric")).value_or("");
      const bool decode_metric = metric.rfind("decode_", 0) == 0;
      const bool e2e_metric = metric.rfind("e2e_", 0) == 0;
      if ((decode_metric && *bs != "decode_only") || (e2e_metric && *bs != "e2e")) {
        add("TIMING_SCOPE_MISMATCH", "speedup comparison " + std::to_string(c.index) + " metric \"" +
                                         metric + "\" does not match timing_scope \"" + *bs + "\"",
            c.path + "/metric");
      }
    }
  }

  void prefill_variance() {
    for (const Arm& a : arms_) {
      double lo = 0, hi = 0;
      size_t n = 0;
      for (const auto& [i, s] : a.samples()) {
        const auto p = as_number(member(s, "prefill_s"));
        if (!p) continue;
        if (!(*p > 0)) {
          add("PREFILL_VARIANCE", "arm \"" + a.name + "\" sample " + std::to_string(i) +
                                      " has prefill_s = " + num(*p) + ", not a positive time",
              a.sample_path(i, "prefill_s"));
          continue;
        }
        lo = n == 0 ? *p : std::min(lo, *p);
        hi = n == 0 ? *p : std::max(hi, *p);
        ++n;
      }
      if (n >= 2 && hi / lo > kMaxPrefillRatio) {
        add("PREFILL_VARIANCE", "arm \"" + a.name + "\" prefill_s ranges " + num(lo) + " .. " +
                                    num(hi) + " s (ratio " + num(hi / lo) + " > " +
                                    num(kMaxPrefillRatio) + ")",
            a.path + "/samples");
      }
    }
  }

  static std::optional<double> arm_recall(const Arm& a) {
    size_t n = 0, hits = 0;
    for (const auto& [i, s] : a.samples()) {
      const auto r = as_bool(member(s, "recall"));
      if (!r) continue;
      ++n;
      hits += *r ? 1 : 0;
    }
    if (n > 0) return static_cast<double>(hits) / static_cast<double>(n);
    return as_number(a.aggregate("recall"));
  }

  void recall_delta() {
    for (const Comparison& c : comparisons_) {
      if (c.claim != "recall") continue;
      if (as_string(member(c.baseline->obj, "role")) != "oracle") {
        add("RECALL_DELTA", "recall comparison " + std::to_string(c.index) + " baseline arm \"" +
                                c.baseline->name + "\" has role " +
                                show(member(c.baseline->obj, "role")) + ", not \"oracle\"",
            c.baseline->path + "/role");
        continue;
      }
      const auto rb = arm_recall(*c.baseline);
      const auto rk = arm_recall(*c.candidate);
      if (!rb || !rk) {
        add("RECALL_DELTA", "recall comparison " + std::to_string(c.index) +
                                " lacks a measured recall for arm \"" +
                                (rb ? c.candidate->name : c.baseline->name) + "\"",
            c.path);
        continue;
      }
      if (std::fabs(*rk - *rb) > kMaxRecallDelta) {
        add("RECALL_DELTA", "arm \"" + c.candidate->name + "\" recall " + num(*rk) +
                                " differs from oracle \"" + c.baseline->name + "\" recall " +
                                num(*rb) + " by more than " + num(kMaxRecallDelta),
            c.path);
      }
    }
  }

  void recall_not_applicable() {
    for (const Arm& a : arms_) {
      const auto samples = a.samples();
      bool any_needle = false;
      for (const auto& [i, s] : samples) {
        const bool needle = as_bool(member(s, "needle")) == true;
        any_needle = any_needle || needle;
        const json* r = member(s, "recall");
        if (!needle && r != nullptr && !r->is_null()) {
          add("RECALL_NOT_APPLICABLE", "arm \"" + a.name + "\" sample " + std::to_string(i) +
                                           " reports recall " + r->dump() + " without a needle",
              a.sample_path(i, "recall"));
        }
      }
      const json* agg = a.aggregate("recall");
      if (!samples.empty() && !any_needle && agg != nullptr && !agg->is_null()) {
        add("RECALL_NOT_APPLICABLE", "arm \"" + a.name + "\" aggregates.recall is " + agg->dump() +
                                         " but none of its samples has a needle",
            a.path + "/aggregates/recall");
      }
    }
  }

  void memory_unmeasured() {
    for (const Comparison& c : comparisons_) {
      if (c.claim != "memory_saving") continue;
      for (const Arm* a : {c.baseline, c.candidate}) {
        if (as_bool(a->aggregate("resident_kv_bytes_measured")) != true) {
          add("MEMORY_UNMEASURED", "memory_saving comparison " + std::to_string(c.index) + ": arm \"" +
                                       a->name + "\" aggregates.resident_kv_bytes_measured is " +
                                       show(a->aggregate("resident_kv_bytes_measured")),
              a->path + "/aggregates/resident_kv_bytes_measured");
          continue;
        }
        for (const auto& [i, s] : a->samples()) {
          const auto bytes = as_number(member(s, "resident_kv_bytes"));
          if (!bytes || *bytes < 0) {
            add("MEMORY_UNMEASURED", "arm \"" + a->name + "\" sample " + std::to_string(i) +
                                         " resident_kv_bytes is " + show(member(s, "resident_kv_bytes")),
                a->sample_path(i, "resident_kv_bytes"));
            break;
          }
        }
      }
    }
  }

  void not_lossless() {
    const auto temperature = as_number(member(member(&report_, "config"), "temperature"));
    if (temperature && *temperature > 0) return;  // stochastic acceptance: outputs may differ
    const json* l = member(&report_, "lossless");
    if (as_bool(member(l, "checked")) != true) {
      add("NOT_LOSSLESS", "greedy speculative run without a lossless check (lossless.checked is " +
                              show(member(l, "checked")) + ")",
          "/lossless/checked");
      return;
    }
    if (as_bool(member(l, "equal")) != true) {
      add("NOT_LOSSLESS", "greedy speculative output differs from greedy autoregressive output "
                          "(lossless.equal is " + show(member(l, "equal")) + ")",
          "/lossless/equal");
    }
  }

  void spec_never_ran() {
    bool any_candidate = false;
    for (const Arm& a : arms_) {
      if (as_string(member(a.obj, "role")) != "candidate") continue;
      any_candidate = true;
      const auto blocks = as_number(a.aggregate("draft_blocks"));
      if (!blocks || *blocks <= 0) {
        add("SPEC_NEVER_RAN", "speculative arm \"" + a.name + "\" aggregates.draft_blocks is " +
                                  show(a.aggregate("draft_blocks")),
            a.path + "/aggregates/draft_blocks");
        continue;
      }
      double drafted = 0;
      bool any = false;
      for (const auto& [i, s] : a.samples()) {
        if (const auto d = as_number(member(s, "drafted"))) {
          drafted += *d;
          any = true;
        }
      }
      if (any && drafted <= 0) {
        add("SPEC_NEVER_RAN", "speculative arm \"" + a.name + "\" drafted no tokens in any sample",
            a.path + "/samples");
      }
    }
    if (!any_candidate) add("SPEC_NEVER_RAN", "speculative report has no candidate arm", "/arms");
  }

  void silent_fallback() {
    for (const Arm& a : arms_) {
      const auto req = as_string(member(a.obj, "backend_requested"));
      const auto used = as_string(member(a.obj, "backend_used"));
      if (!req || !used) {
        add("SILENT_FALLBACK", "arm \"" + a.name + "\" backend_requested is " +
                                   show(member(a.obj, "backend_requested")) + ", backend_used is " +
                                   show(member(a.obj, "backend_used")) + "; both are required",
            a.path);
        continue;
      }
      if (*req != "auto" && *req != *used) {
        add("SILENT_FALLBACK", "arm \"" + a.name + "\" requested backend \"" + *req +
                                   "\" but ran on \"" + *used + "\"",
            a.path + "/backend_used");
      }
    }
  }

  void output_degenerate() {
    for (const Arm& a : arms_) {
      for (const auto& [i, s] : a.samples()) {
        const auto text = as_string(member(s, "text"));
        if (!text) continue;
        if (auto why = output_degenerate_reason(*text)) {
          add("OUTPUT_DEGENERATE", "arm \"" + a.name + "\" sample " + std::to_string(i) + ": " + *why,
              a.sample_path(i, "text"));
        }
      }
    }
  }

  void provenance() {
    const json* model = member(&report_, "model");
    const bool model_required = kind_ != "env-probe" || model != nullptr;
    if (model_required) {
      const auto sha = as_string(member(model, "sha256"));
      const bool valid = sha && sha->size() == 64 &&
                         std::all_of(sha->begin(), sha->end(), [](char ch) {
                           return (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f');
                         });
      if (!valid) {
        add("PROVENANCE", "model.sha256 is " + show(member(model, "sha256")) +
                              ", expected 64 lowercase hex digits",
            "/model/sha256");
      }
    }
    const auto version = as_string(member(member(&report_, "engine"), "version"));
    if (!version || version->empty()) {
      add("PROVENANCE", "engine.version is " + show(member(member(&report_, "engine"), "version")) +
                            ", expected the engine's version string",
          "/engine/version");
    }
  }

  const json& report_;
  std::string kind_;
  std::vector<Arm> arms_;
  std::vector<Comparison> comparisons_;
  std::vector<GateViolation> shape_;
  std::vector<GateViolation> violations_;
};

}  // namespace

std::optional<std::string> output_degenerate_reason(std::string_view text) {
  // >= 8 identical short lines (trimmed of spaces, tabs and CR; 1..40 bytes).
  std::map<std::string_view, int> counts;
  for (size_t pos = 0; pos <= text.size();) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    while (!line.empty() && std::string_view(" \t\r").find(line.front()) != std::string_view::npos) {
      line.remove_prefix(1);
    }
    while (!line.empty() && std::string_view(" \t\r").find(line.back()) != std::string_view::npos) {
      line.remove_suffix(1);
    }
    if (!line.empty() && line.size() <= kMaxShortLine && ++counts[line] == kMinRepeats) {
      return "line \"" + std::string(line) + "\" repeats " + std::to_string(kMinRepeats) + " times";
    }
    pos = end + 1;
  }
  // A unit of 1..8 UTF-8 characters repeated >= 8 times at the end.
  std::vector<std::string_view> chars;
  for (size_t pos = 0; pos < text.size();) {
    const auto lead = static_cast<unsigned char>(text[pos]);
    size_t len = lead < 0xC0 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
    len = std::min(len, text.size() - pos);
    chars.push_back(text.substr(pos, len));
    pos += len;
  }
  for (size_t unit = 1; unit <= kMaxUnitChars; ++unit) {
    const size_t span = unit * static_cast<size_t>(kMinRepeats);
    if (chars.size() < span) break;
    const size_t start = chars.size() - span;
    bool periodic = true;
    for (size_t i = start + unit; i < chars.size() && periodic; ++i) periodic = chars[i] == chars[i - unit];
    if (periodic) {
      std::string u;
      for (size_t i = start; i < start + unit; ++i) u += chars[i];
      return "ends with \"" + u + "\" repeated " + std::to_string(kMinRepeats) + "+ times";
    }
  }
  return std::nullopt;
}

nlohmann::json GateVerdict::to_json() const {
  json v = json::array();
  for (const GateViolation& x : evidence_violations) {
    v.push_back({{"code", x.code}, {"message", x.message}, {"path", x.path}});
  }
  return {{"passed", passed},
          {"evidence_violations", v},
          {"rules_checked", rules_checked},
          {"rules_skipped", rules_skipped}};
}

std::vector<std::string> all_gate_rules() { return kAllRules; }

std::vector<std::string> gate_rules_for_kind(const std::string& kind) {
  const auto it = kind_rules().find(kind);
  std::vector<std::string> out = {"REPORT_SHAPE"};
  if (it == kind_rules().end()) return kAllRules;
  for (const std::string& r : kAllRules) {
    if (std::find(it->second.begin(), it->second.end(), r) != it->second.end()) out.push_back(r);
  }
  return out;
}

GateVerdict evaluate_gate(const nlohmann::json& report, const std::vector<std::string>& rules) {
  GateVerdict verdict;
  Checker checker(report);
  std::vector<GateViolation> unknown;
  std::set<std::string> selected;
  if (rules.empty()) {
    for (const std::string& r : gate_rules_for_kind(checker.kind())) selected.insert(r);
  } else {
    selected.insert("REPORT_SHAPE");
    for (const std::string& r : rules) {
      if (std::find(kAllRules.begin(), kAllRules.end(), r) == kAllRules.end()) {
        unknown.push_back(GateViolation{"UNKNOWN_RULE", "gate rule \"" + r + "\" does not exist", ""});
        continue;
      }
      selected.insert(r);
    }
  }
  for (const std::string& r : kAllRules) {
    if (selected.count(r) != 0) {
      checker.run(r);
      verdict.rules_checked.push_back(r);
    } else {
      verdict.rules_skipped.push_back(r);
    }
  }
  verdict.evidence_violations = std::move(unknown);
  for (auto& v : checker.take_shape()) verdict.evidence_violations.push_back(std::move(v));
  for (auto& v : checker.take()) verdict.evidence_violations.push_back(std::move(v));
  verdict.passed = verdict.evidence_violations.empty();
  return verdict;
}

}  // namespace kakeya::bridge
