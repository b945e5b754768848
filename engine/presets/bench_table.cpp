#include "engine/presets/bench_table.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>

namespace kakeya::engine {
namespace {

double mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0.0 : s / static_cast<double>(v.size());
}

// Sample standard deviation (n − 1); 0 for fewer than two values (llama-bench's stdev).
double stddev(const std::vector<double>& v) {
  if (v.size() < 2) return 0.0;
  const double m = mean(v);
  double sq = 0;
  for (double x : v) sq += (x - m) * (x - m);
  return std::sqrt(sq / static_cast<double>(v.size() - 1));
}

std::string format(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

// "1.24B", "15.2M", "292K".
std::string params_label(uint64_t n) {
  const double d = static_cast<double>(n);
  if (d >= 1e9) return format("%.2fB", d / 1e9);
  if (d >= 1e6) return format("%.1fM", d / 1e6);
  return format("%.0fK", d / 1e3);
}

// The most common tensor type other than f32 (norms are always f32), else F32; upper case.
std::string main_type(const nlohmann::json& counts) {
  std::string best = "f32";
  int best_n = 0;
  for (const auto& [type, n] : counts.items()) {
    if (type != "f32" && n.get<int>() > best_n) {
      best = type;
      best_n = n.get<int>();
    }
  }
  std::transform(best.begin(), best.end(), best.begin(), [](unsigned char c) { return std::toupper(c); });
  return best;
}

std::string csv_quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

}  // namespace

nlohmann::json to_json(const BenchRow& r) {
  return {{"model", r.model},     {"size", r.size_bytes}, {"params", r.n_params},     {"backend", r.backend},
          {"threads", r.threads}, {"test", r.test},       {"n_prompt", r.n_prompt},   {"n_gen", r.n_gen},
          {"n_depth", r.n_depth}, {"avg_ts", r.avg_ts},   {"stddev_ts", r.stddev_ts}, {"samples_ts", r.samples_ts}};
}

Result<std::vector<BenchRow>> ar_bench_table(const nlohmann::json& report) {
  for (const char* key : {"model", "engine", "config", "samples"}) {
    if (!report.contains(key)) return make_error("missing_key", std::string("ar-bench report has no ") + key);
  }
  const nlohmann::json& m = report["model"];
  BenchRow base;
  base.size_bytes = m.value("tensor_bytes", uint64_t{0});
  base.n_params = m.value("n_params", uint64_t{0});
  base.model = m.value("architecture", std::string("?")) + " " + params_label(base.n_params) + " " +
               main_type(m.value("tensor_types", nlohmann::json::object()));
  base.backend = report["engine"].value("backend", std::string("?"));
  base.threads = report["engine"].value("threads", 0);
  const int gen = report["config"].value("gen_tokens", 0);
  std::vector<int> lengths;
  std::map<int, std::pair<std::vector<double>, std::vector<double>>> ts;  // length → (prefill, decode)
  for (const auto& s : report["samples"]) {
    const int len = s.value("prompt_tokens", 0);
    if (ts.find(len) == ts.end()) lengths.push_back(len);
    ts[len].first.push_back(s.value("prefill_tok_s", 0.0));
    ts[len].second.push_back(s.value("decode_tok_s", 0.0));
  }
  std::vector<BenchRow> rows;
  for (int len : lengths) {
    BenchRow pp = base;
    pp.test = "pp" + std::to_string(len);
    pp.n_prompt = len;
    pp.samples_ts = ts[len].first;
    BenchRow tg = base;
    tg.test = "tg" + std::to_string(gen) + " @ d" + std::to_string(len);
    tg.n_gen = gen;
    tg.n_depth = len;
    tg.samples_ts = ts[len].second;
    for (BenchRow* r : {&pp, &tg}) {
      r->avg_ts = mean(r->samples_ts);
      r->stddev_ts = stddev(r->samples_ts);
      rows.push_back(*r);
    }
  }
  return rows;
}

Result<std::string> format_bench_table(const std::vector<BenchRow>& rows, const std::string& fmt) {
  if (fmt == "json") {
    nlohmann::json a = nlohmann::json::array();
    for (const BenchRow& r : rows) a.push_back(to_json(r));
    return a.dump(2) + "\n";
  }
  if (fmt == "csv") {
    std::string out = "model,size,params,backend,threads,test,n_prompt,n_gen,n_depth,avg_ts,stddev_ts\n";
    for (const BenchRow& r : rows) {
      out += csv_quote(r.model) + "," + csv_quote(std::to_string(r.size_bytes)) + "," +
             csv_quote(std::to_string(r.n_params)) + "," + csv_quote(r.backend) + "," +
             csv_quote(std::to_string(r.threads)) + "," + csv_quote(r.test) + "," +
             csv_quote(std::to_string(r.n_prompt)) + "," + csv_quote(std::to_string(r.n_gen)) + "," +
             csv_quote(std::to_string(r.n_depth)) + "," + csv_quote(format("%.6f", r.avg_ts)) + "," +
             csv_quote(format("%.6f", r.stddev_ts)) + "\n";
    }
    return out;
  }
  if (fmt != "md") return make_error("bad_param", "output format \"" + fmt + "\" is not md, csv or json");
  // llama-bench's markdown printer: field widths (negative = left-aligned) and display names.
  const std::vector<std::pair<std::string, int>> fields = {{"model", -30},  {"size", 10},    {"params", 10},
                                                           {"backend", -10}, {"threads", 7}, {"test", 13},
                                                           {"t/s", 20}};
  std::string out = "|";
  char buf[256];
  for (const auto& [name, width] : fields) {
    std::snprintf(buf, sizeof buf, " %*s |", width, name.c_str());
    out += buf;
  }
  out += "\n|";
  for (const auto& [name, width] : fields) {
    out += " " + std::string(static_cast<size_t>(std::abs(width) - 1), '-') + (width > 0 ? ":" : "-") + " |";
  }
  out += "\n";
  for (const BenchRow& r : rows) {
    const double gib = static_cast<double>(r.size_bytes) / 1024.0 / 1024.0 / 1024.0;
    const std::string size = r.size_bytes < (uint64_t{1} << 30) ? format("%.2f MiB", gib * 1024.0)
                                                                 : format("%.2f GiB", gib);
    const double np = static_cast<double>(r.n_params);
    const std::string params = np < 1e9 ? format("%.2f M", np / 1e6) : format("%.2f B", np / 1e9);
    std::snprintf(buf, sizeof buf, "%.2f ± %.2f", r.avg_ts, r.stddev_ts);
    const std::string tps = buf;
    const std::vector<std::string> values = {r.model, size, params, r.backend, std::to_string(r.threads), r.test, tps};
    out += "|";
    for (size_t i = 0; i < fields.size(); ++i) {
      // "±" is two bytes for one column, as in llama-bench.
      const int width = fields[i].second + (fields[i].first == "t/s" ? 1 : 0);
      std::snprintf(buf, sizeof buf, " %*s |", width, values[i].c_str());
      out += buf;
    }
    out += "\n";
  }
  return out;
}

}  // namespace kakeya::engine
