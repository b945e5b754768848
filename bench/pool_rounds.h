#pragma once
// Pooling kakeya_engine_bench rounds across result files (`kakeya_engine_bench --pool`): the
// decode cells of a memory-bound VM move by more than the goal's margin between runs, so one run's
// rounds are too few to say where a cell stands and several runs' rounds are counted together.
//
// A cell is (model type, thread count, arm, variant). Each round of each file gives one ratio:
//   rounds[].kakeya.<arm> / rounds[].llama.<arm>               arms pp<L>, tg<N>, tg<N>_after_pp<L>
//   rounds[].variants[].tg<N> / rounds[].llama.tg<N>           a --variant-env arm ({env, tg<N>})
//   rounds[].variant.tg<N> / rounds[].llama.tg<N>              the same in files written before
//                                                              --variant-env could repeat (env from
//                                                              config.variant_env)
// Rounds where either rate is missing, not a number or not above zero are left out of that cell.
// Per cell: n, min, max, the median of the ratios (the mean of the middle two for even n), and the
// distribution-free interval for the median [x_(k), x_(n+1-k)] (1-based order statistics), with k
// the largest rank whose coverage 1 - 2 P(Bin(n, 1/2) <= k - 1) is at least the confidence
// (Hollander & Wolfe, "Nonparametric Statistical Methods", the sign-test interval; the same rule as
// the README's pooled tables); null when even k = 1 falls short (n <= 4 at 0.9).
//
// Goals are the issue's: decode (tg<N> and variant arms) 1.1x, prefill (pp<L>) 1.0x; decode after a
// prompt (tg<N>_after_pp<L>) has none. `reached` counts the rounds at or above the goal.
//
// Files must be one machine class: env.cpu vendor, family, model and model_name all recorded and
// equal (files written before the bench recorded family and model are refused: Zen 4 and Zen 5
// both call themselves "AMD EPYC"), and one model shape (config.shape). Engine versions may differ;
// each cell lists the versions its rounds came from. A file given twice, or two files with the same
// created_at and engine versions (one run under two names), is refused. Errors name the file and the
// offending value; nothing here throws on a malformed file.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "bridge/result.h"

namespace kakeya::bench {

// Order-statistic ranks (1-based) of the median's interval for n samples and their coverage.
struct MedianInterval {
  size_t low_rank = 0;   // k
  size_t high_rank = 0;  // n + 1 - k
  double coverage = 0;   // 1 - 2 P(Bin(n, 1/2) <= k - 1), the probability the interval holds the median
};

// The narrowest sign-test interval with coverage >= `confidence` (0 < confidence < 1), or nullopt
// when n is too small for any (coverage of [x_(1), x_(n)] is 1 - 2^(1-n)).
inline std::optional<MedianInterval> median_interval_ranks(size_t n, double confidence) {
  if (n == 0) return std::nullopt;
  // P(Bin(n, 1/2) = i) in log space: lgamma keeps it finite for any n a bench can produce.
  const double ln2n = static_cast<double>(n) * std::log(2.0);
  auto pmf = [&](size_t i) {
    return std::exp(std::lgamma(n + 1.0) - std::lgamma(i + 1.0) - std::lgamma(static_cast<double>(n - i) + 1.0) - ln2n);
  };
  std::optional<MedianInterval> best;
  double cdf_below = 0;  // P(X <= k - 1)
  for (size_t k = 1; 2 * k <= n + 1; ++k) {
    cdf_below += pmf(k - 1);
    const double coverage = 1.0 - 2.0 * cdf_below;
    if (coverage < confidence) break;
    best = MedianInterval{k, n + 1 - k, coverage};
  }
  return best;
}

// Median of v (the mean of the middle two for even sizes); 0 for an empty v.
inline double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t h = v.size() / 2;
  return v.size() % 2 ? v[h] : 0.5 * (v[h - 1] + v[h]);
}

struct PoolInput {
  std::string path;    // as given, for messages and the output's files[]
  nlohmann::json doc;  // the parsed result file
};

struct PoolGoals {
  double decode = 1.1;   // tg<N> and variant arms: kakeya / llama.cpp at or above this
  double prefill = 1.0;  // pp<L>
};

namespace pool_detail {

using nlohmann::json;

inline const json* member(const json& o, const char* key) {
  if (!o.is_object()) return nullptr;
  auto it = o.find(key);
  return it == o.end() ? nullptr : &*it;
}

inline std::optional<std::string> string_at(const json& o, const char* key) {
  const json* v = member(o, key);
  if (v && v->is_string()) return v->get<std::string>();
  if (v && v->is_number_integer()) return std::to_string(v->get<long long>());
  return std::nullopt;
}

inline std::optional<double> rate_at(const json& o, const std::string& key) {
  if (!o.is_object()) return std::nullopt;
  auto it = o.find(key);
  if (it == o.end() || !it->is_number()) return std::nullopt;
  const double v = it->get<double>();
  if (!std::isfinite(v) || v <= 0) return std::nullopt;
  return v;
}

enum class ArmKind { kPrefill = 0, kDecode = 1, kDecodeAtDepth = 2 };

// pp<L> / tg<N> / tg<N>_after_pp<L>, with their numbers; nullopt for any other key ("load", ...).
struct ArmName {
  ArmKind kind;
  long first = 0;   // L or N
  long second = 0;  // the depth's L
};

inline std::optional<long> leading_number(const std::string& s, size_t& pos) {
  size_t end = pos;
  while (end < s.size() && end - pos < 9 && s[end] >= '0' && s[end] <= '9') ++end;
  if (end == pos || (end < s.size() && s[end] >= '0' && s[end] <= '9')) return std::nullopt;
  const long v = std::stol(s.substr(pos, end - pos));
  pos = end;
  return v;
}

inline std::optional<ArmName> parse_arm(const std::string& key) {
  size_t pos = 2;
  if (key.rfind("pp", 0) == 0) {
    auto l = leading_number(key, pos);
    if (!l || pos != key.size()) return std::nullopt;
    return ArmName{ArmKind::kPrefill, *l, 0};
  }
  if (key.rfind("tg", 0) != 0) return std::nullopt;
  auto n = leading_number(key, pos);
  if (!n) return std::nullopt;
  if (pos == key.size()) return ArmName{ArmKind::kDecode, *n, 0};
  static constexpr const char kAfter[] = "_after_pp";
  if (key.compare(pos, sizeof(kAfter) - 1, kAfter) != 0) return std::nullopt;
  pos += sizeof(kAfter) - 1;
  auto l = leading_number(key, pos);
  if (!l || pos != key.size()) return std::nullopt;
  return ArmName{ArmKind::kDecodeAtDepth, *n, *l};
}

struct CellKey {
  size_t type_order;  // first appearance of the type across the files
  std::string type;
  int threads;
  ArmKind kind;
  long first;
  long second;
  std::string variant_env;  // "" for kakeya as it is
  bool operator<(const CellKey& o) const {
    return std::tie(type_order, threads, variant_env, kind, first, second) <
           std::tie(o.type_order, o.threads, o.variant_env, o.kind, o.first, o.second);
  }
};

struct Cell {
  std::string arm;
  std::vector<double> ratios;
  std::set<std::string> files;
  std::set<std::string> engine_versions;
};

inline std::string machine_class(const json& cpu) {
  return fmt::format("{} family {} model {} \"{}\"", string_at(cpu, "vendor").value_or("?"),
                     string_at(cpu, "family").value_or("?"), string_at(cpu, "model").value_or("?"),
                     string_at(cpu, "model_name").value_or("?"));
}

}  // namespace pool_detail

// Pools the rounds of `files` (engine_bench result documents) into cells, as described above.
// Returns {kind: "engine-bench-pool", schema_version, confidence, goals: {decode, prefill},
// cpu: {vendor, family, model, model_name}, shape, files[]: {path, created_at, engine_versions[],
// rounds}, cells[]: {type, threads, arm, variant_env (variant arms only), goal (null: none), n,
// file_count (files its rounds came from), engine_versions[], median, min, max, interval: {low,
// high, low_rank, high_rank, coverage} | null, reached (with a goal), median_meets_goal,
// interval_above_goal (with a goal; false when interval is null)}}. Errors (errc::kBadValue): no
// files, a file that is not an engine-bench result or has no round with llama.cpp figures, a
// missing or different machine class or shape, a run given twice, a confidence outside (0, 1).
inline Result<nlohmann::json> pool_rounds(const std::vector<PoolInput>& files, double confidence,
                                          const PoolGoals& goals = {}) {
  using namespace pool_detail;
  if (files.empty()) return make_error(errc::kBadValue, "no result files to pool");
  if (!(confidence > 0 && confidence < 1))
    return make_error(errc::kBadValue, fmt::format("confidence {} is not between 0 and 1", confidence));

  std::optional<std::string> cls, shape;
  std::string cls_file;
  json cpu_out;
  std::map<std::string, size_t> type_order;
  std::map<CellKey, Cell> cells;
  std::set<std::string> paths;
  std::map<std::string, std::string> runs;  // created_at + versions -> path
  json files_out = json::array();

  for (const auto& f : files) {
    if (!paths.insert(f.path).second) return make_error(errc::kBadValue, f.path + " is given twice");
    const json& d = f.doc;
    if (string_at(d, "kind") != std::optional<std::string>("engine-bench"))
      return make_error(errc::kBadValue, f.path + " is not a kakeya_engine_bench result (kind \"" +
                                             string_at(d, "kind").value_or("") + "\")");
    const json* env = member(d, "env");
    const json* cpu = env ? member(*env, "cpu") : nullptr;
    if (!cpu || !string_at(*cpu, "vendor") || !string_at(*cpu, "family") || !string_at(*cpu, "model") ||
        !string_at(*cpu, "model_name"))
      return make_error(errc::kBadValue, f.path +
                                             " records no env.cpu vendor, family, model and model_name (written "
                                             "before the bench recorded them), so its machine class is unknown");
    const std::string c = machine_class(*cpu);
    if (!cls) {
      cls = c;
      cls_file = f.path;
      cpu_out = {{"vendor", *string_at(*cpu, "vendor")},
                 {"family", *string_at(*cpu, "family")},
                 {"model", *string_at(*cpu, "model")},
                 {"model_name", *string_at(*cpu, "model_name")}};
    } else if (c != *cls) {
      return make_error(errc::kBadValue, f.path + " was measured on " + c + ", " + cls_file + " on " + *cls +
                                             ": rounds of different machine classes are not pooled");
    }
    const json* config = member(d, "config");
    const std::string s = config ? string_at(*config, "shape").value_or("") : "";
    if (s.empty()) return make_error(errc::kBadValue, f.path + " records no config.shape");
    if (!shape) {
      shape = s;
    } else if (s != *shape) {
      return make_error(errc::kBadValue, f.path + " is shape \"" + s + "\", " + files.front().path + " is \"" + *shape +
                                             "\": rounds of different models are not pooled");
    }
    // Files written before --variant-env repeated hold one variant, its env in config.variant_env.
    std::string old_variant_env;
    if (const json* ve = config ? member(*config, "variant_env") : nullptr; ve && ve->is_string())
      old_variant_env = ve->get<std::string>();

    std::set<std::string> file_versions;
    size_t file_rounds = 0;
    const json* models = member(d, "models");
    if (models && models->is_array()) {
      for (const json& m : *models) {
        const auto type = string_at(m, "type");
        const json* model_runs = member(m, "runs");
        if (!type || !model_runs || !model_runs->is_array()) continue;
        type_order.emplace(*type, type_order.size());
        for (const json& run : *model_runs) {
          const json* th = member(run, "threads");
          const json* rounds = member(run, "rounds");
          if (!th || !th->is_number_integer() || !rounds || !rounds->is_array()) continue;
          const int threads = th->get<int>();
          const json* engine = member(run, "engine");
          const std::string version = engine ? string_at(*engine, "version").value_or("unknown") : "unknown";
          auto add = [&](const std::string& arm, const std::string& variant_env, double kakeya, double llama) {
            const auto name = parse_arm(arm);
            if (!name) return;
            CellKey key{type_order[*type], *type, threads, name->kind, name->first, name->second, variant_env};
            Cell& cell = cells[key];
            cell.arm = arm;
            cell.ratios.push_back(kakeya / llama);
            cell.files.insert(f.path);
            cell.engine_versions.insert(version);
          };
          for (const json& round : *rounds) {
            const json* k = member(round, "kakeya");
            const json* l = member(round, "llama");
            if (!k || !l || !l->is_object()) continue;
            bool counted = false;
            for (auto it = l->begin(); it != l->end(); ++it) {
              const auto lr = rate_at(*l, it.key());
              const auto kr = rate_at(*k, it.key());
              if (!lr || !kr || !parse_arm(it.key())) continue;
              add(it.key(), "", *kr, *lr);
              counted = true;
            }
            if (const json* vs = member(round, "variants"); vs && vs->is_array()) {
              for (const json& v : *vs) {
                const auto venv = string_at(v, "env");
                if (!venv || !v.is_object()) continue;
                for (auto it = v.begin(); it != v.end(); ++it) {
                  const auto name = parse_arm(it.key());
                  if (!name || name->kind != ArmKind::kDecode) continue;
                  const auto vr = rate_at(v, it.key());
                  const auto lr = rate_at(*l, it.key());
                  if (vr && lr) add(it.key(), *venv, *vr, *lr);
                }
              }
            } else if (const json* v = member(round, "variant"); v && v->is_object() && !old_variant_env.empty()) {
              for (auto it = v->begin(); it != v->end(); ++it) {
                const auto name = parse_arm(it.key());
                if (!name || name->kind != ArmKind::kDecode) continue;
                const auto vr = rate_at(*v, it.key());
                const auto lr = rate_at(*l, it.key());
                if (vr && lr) add(it.key(), old_variant_env, *vr, *lr);
              }
            }
            if (counted) {
              ++file_rounds;
              file_versions.insert(version);
            }
          }
        }
      }
    }
    if (file_rounds == 0)
      return make_error(errc::kBadValue,
                        f.path + " has no round with both engines' figures (run without --llama-bench?)");
    const std::string created = string_at(d, "created_at").value_or("");
    std::string run_id = created;
    for (const auto& v : file_versions) run_id += " " + v;
    if (auto [it, fresh] = runs.emplace(run_id, f.path); !fresh)
      return make_error(errc::kBadValue, f.path + " and " + it->second + " are the same run (created_at " + created +
                                             "): its rounds would count twice");
    files_out.push_back({{"path", f.path},
                         {"created_at", created},
                         {"engine_versions", std::vector<std::string>(file_versions.begin(), file_versions.end())},
                         {"rounds", file_rounds}});
  }

  json cells_out = json::array();
  for (auto& [key, cell] : cells) {
    std::vector<double> v = cell.ratios;
    std::sort(v.begin(), v.end());
    json c = {{"type", key.type}, {"threads", key.threads}, {"arm", cell.arm}};
    if (!key.variant_env.empty()) c["variant_env"] = key.variant_env;
    std::optional<double> goal;
    if (key.kind == ArmKind::kPrefill) goal = goals.prefill;
    if (key.kind == ArmKind::kDecode) goal = goals.decode;
    c["goal"] = goal ? json(*goal) : json(nullptr);
    c["n"] = v.size();
    c["file_count"] = cell.files.size();
    c["engine_versions"] = std::vector<std::string>(cell.engine_versions.begin(), cell.engine_versions.end());
    const double med = median_of(v);
    c["median"] = med;
    c["min"] = v.front();
    c["max"] = v.back();
    const auto iv = median_interval_ranks(v.size(), confidence);
    if (iv) {
      c["interval"] = {{"low", v[iv->low_rank - 1]},
                       {"high", v[iv->high_rank - 1]},
                       {"low_rank", iv->low_rank},
                       {"high_rank", iv->high_rank},
                       {"coverage", iv->coverage}};
    } else {
      c["interval"] = nullptr;
    }
    if (goal) {
      c["reached"] = std::count_if(v.begin(), v.end(), [&](double r) { return r >= *goal; });
      c["median_meets_goal"] = med >= *goal;
      c["interval_above_goal"] = iv.has_value() && v[iv->low_rank - 1] >= *goal;
    }
    cells_out.push_back(std::move(c));
  }
  return json{{"kind", "engine-bench-pool"},
              {"schema_version", 1},
              {"confidence", confidence},
              {"goals", {{"decode", goals.decode}, {"prefill", goals.prefill}}},
              {"cpu", cpu_out},
              {"shape", *shape},
              {"files", files_out},
              {"cells", cells_out}};
}

// The pooled cells as a text table, one line per cell: type, threads, arm, n, median, interval,
// reached/n, the goal, and the variant's KEY=VALUE for a --variant-env arm.
inline std::string pool_table(const nlohmann::json& pooled) {
  std::string out = fmt::format("{:<6} {:>2} {:<18} {:>4} {:>7}  {:<13} {:>7}  {:<4}  {}\n", "type", "t", "arm", "n",
                                "median", "interval", "reached", "goal", "variant");
  for (const auto& c : pooled.at("cells")) {
    const auto& iv = c.at("interval");
    const std::string interval =
        iv.is_null() ? "-" : fmt::format("[{:.2f}, {:.2f}]", iv.at("low").get<double>(), iv.at("high").get<double>());
    const bool has_goal = !c.at("goal").is_null();
    std::string line = fmt::format(
        "{:<6} {:>2} {:<18} {:>4} {:>7.2f}  {:<13} {:>7}  {:<4}  {}", c.at("type").get<std::string>(),
        c.at("threads").get<int>(), c.at("arm").get<std::string>(), c.at("n").get<size_t>(),
        c.at("median").get<double>(), interval,
        has_goal ? fmt::format("{}/{}", c.at("reached").get<long>(), c.at("n").get<size_t>()) : "-",
        has_goal ? fmt::format("{:.2f}", c.at("goal").get<double>()) : "-", c.value("variant_env", std::string()));
    line.erase(line.find_last_not_of(' ') + 1);  // no variant: no trailing blanks
    out += line + "\n";
  }
  return out;
}

}  // namespace kakeya::bench
