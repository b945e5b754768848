#include "client/fleet.h"

#include <algorithm>
#include <cmath>
#include <ctime>

#include "bridge/json_strict.h"
#include "bridge/layout.h"
#include "bridge/limits.h"
#include "bridge/run_state.h"
#include "client/list.h"

namespace kakeya::client {

bool gc_is_dry_run(bool dry_run_flag, bool yes_flag, bool stdin_is_tty) {
  if (dry_run_flag) return true;
  if (yes_flag) return false;
  return stdin_is_tty;
}

std::optional<double> rfc3339_to_epoch(std::string_view t) {
  auto digits = [&](size_t pos, size_t n) -> std::optional<int> {
    if (pos + n > t.size()) return std::nullopt;
    int v = 0;
    for (size_t i = pos; i < pos + n; ++i) {
      if (t[i] < '0' || t[i] > '9') return std::nullopt;
      v = v * 10 + (t[i] - '0');
    }
    return v;
  };
  auto Y = digits(0, 4), M = digits(5, 2), D = digits(8, 2), h = digits(11, 2), m = digits(14, 2), s = digits(17, 2);
  if (!Y || !M || !D || !h || !m || !s || t[4] != '-' || t[7] != '-' || (t[10] != 'T' && t[10] != 't') ||
      t[13] != ':' || t[16] != ':') {
    return std::nullopt;
  }
  std::tm tm{};
  tm.tm_year = *Y - 1900;
  tm.tm_mon = *M - 1;
  tm.tm_mday = *D;
  tm.tm_hour = *h;
  tm.tm_min = *m;
  tm.tm_sec = *s;
  double epoch = static_cast<double>(timegm(&tm));
  size_t pos = 19;
  if (pos < t.size() && t[pos] == '.') {
    double scale = 0.1;
    for (++pos; pos < t.size() && t[pos] >= '0' && t[pos] <= '9'; ++pos, scale /= 10) epoch += (t[pos] - '0') * scale;
  }
  if (pos == t.size()) return std::nullopt;
  if ((t[pos] == 'Z' || t[pos] == 'z') && pos + 1 == t.size()) return epoch;
  if ((t[pos] == '+' || t[pos] == '-') && pos + 6 == t.size() && t[pos + 3] == ':') {
    auto oh = digits(pos + 1, 2), om = digits(pos + 4, 2);
    if (!oh || !om) return std::nullopt;
    const double off = *oh * 3600.0 + *om * 60.0;
    return t[pos] == '+' ? epoch - off : epoch + off;
  }
  return std::nullopt;
}

namespace {
double now_epoch() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}
}  // namespace

Result<std::vector<RunnerEntry>> list_runners(bridge::GitBus& bus) {
  const std::string prefix = std::string(bridge::kRefsHeadsPrefix) + std::string(bridge::kRunnerBranchPrefix);
  KAKEYA_ASSIGN_OR_RETURN(auto refs, bus.ls_remote(prefix));
  std::vector<std::string> names;
  for (const auto& r : refs) names.push_back(r.name);
  std::map<std::string, std::string> oids;
  if (!names.empty()) {
    KAKEYA_ASSIGN_OR_RETURN(oids, bus.fetch(names));
  }
  std::vector<RunnerEntry> out;
  for (const auto& [ref, oid] : oids) {
    RunnerEntry e;
    e.id = ref.substr(prefix.size());
    e.commit = oid;
    auto f = bus.read_file(oid, bridge::kRunnerDocFile, bridge::kMaxRunnerDocBytes);
    if (!f.ok()) {
      e.error = f.error().str();
    } else if (!f.value()) {
      e.error = "no runner.json on " + ref;
    } else {
      auto doc = bridge::parse_json_strict(**f);
      if (!doc.ok() || !doc->is_object()) {
        e.error = "runner.json is not a JSON object" + (doc.ok() ? std::string() : ": " + doc.error().message);
      } else {
        e.doc = std::move(doc).value();
        if (auto typed = bridge::parse_runner_doc(**f); typed.ok()) {
          e.runner = std::move(typed).value();
        } else {
          e.error = typed.error().message;
        }
        const auto& d = e.doc;
        if (d.contains("updated_at") && d["updated_at"].is_string()) {
          if (auto t = rfc3339_to_epoch(d["updated_at"].get<std::string>())) e.age_s = now_epoch() - *t;
        }
      }
    }
    out.push_back(std::move(e));
  }
  std::sort(out.begin(), out.end(), [](const RunnerEntry& a, const RunnerEntry& b) { return a.id < b.id; });
  return out;
}

Result<GcReport> gc_requests(bridge::GitBus& bus, const std::string& branch_prefix, double older_than_s,
                             bool dry_run) {
  KAKEYA_ASSIGN_OR_RETURN(auto entries, list_requests(bus, branch_prefix, std::nullopt));
  GcReport report;
  const double now = now_epoch();
  for (const auto& e : entries) {
    const auto state = bridge::parse_run_state(e.state);
    const auto t = rfc3339_to_epoch(e.updated_at);
    if (!state || !bridge::is_terminal(*state) || !t || now - *t < older_than_s) {
      ++report.kept;
      continue;
    }
    report.candidates.push_back(
        GcEntry{e.branch, e.commit, e.state, e.updated_at, now - *t, dry_run ? "would_delete" : ""});
  }
  if (dry_run) return report;
  for (std::size_t start = 0; start < report.candidates.size(); start += kGcBatchRefs) {
    const std::size_t end = std::min(report.candidates.size(), start + kGcBatchRefs);
    std::vector<bridge::RefExpectation> batch;
    for (std::size_t i = start; i < end; ++i) {
      const GcEntry& g = report.candidates[i];
      batch.push_back({std::string(bridge::kRefsHeadsPrefix) + g.branch, g.commit});
    }
    auto outcomes = bus.delete_cas_many(batch);
    for (std::size_t i = start; i < end; ++i) {
      GcEntry& g = report.candidates[i];
      if (!outcomes.ok()) {
        g.outcome = "error: " + outcomes.error().str();
      } else {
        g.outcome = (*outcomes)[i - start] == bridge::PushOutcome::Won ? "deleted" : "lost";
      }
    }
  }
  return report;
}

}  // namespace kakeya::client
