#include "engine/presets/report.h"

#include <algorithm>
#include <ctime>
#include <fstream>
#include <numeric>
#include <system_error>

#include "bridge/version.h"
#include "engine/presets/env_probe.h"

namespace kakeya::engine {

nlohmann::json model_provenance(const LlamaModel& model) {
  const LlamaHparams& hp = model.hparams();
  nlohmann::json types = nlohmann::json::object();
  for (const auto& [name, count] : model.tensor_type_counts()) types[name] = count;
  uint64_t n_params = 0, tensor_bytes = 0;  // as llama_model_n_params / llama_model_size count them
  for (const TensorInfo& t : model.gguf().tensors()) {
    n_params += static_cast<uint64_t>(t.nelements());
    tensor_bytes += t.nbytes;
  }
  return {{"path", model.path()},
          {"sha256", model.gguf().sha256()},
          {"file_size_bytes", model.gguf().file_size()},
          {"architecture", hp.architecture},
          {"hparams",
           {{"n_vocab", hp.n_vocab},
            {"n_ctx_train", hp.n_ctx_train},
            {"n_embd", hp.n_embd},
            {"n_ff", hp.n_ff},
            {"n_layer", hp.n_layer},
            {"n_head", hp.n_head},
            {"n_head_kv", hp.n_head_kv},
            {"head_dim", hp.head_dim},
            {"rope", to_json(hp.rope)},
            {"rms_eps", hp.rms_eps}}},
          {"tensor_types", types},
          {"n_params", n_params},
          {"tensor_bytes", tensor_bytes},
          {"output_tied", model.weights().output_tied},
          {"synthetic", model.synthetic()}};
}

nlohmann::json engine_info(const std::string& backend_requested, const Backend& backend,
                           const ModelWeights* weights) {
  const BackendInfo& info = backend.info();
  nlohmann::json j = {{"version", engine_version()},
                      {"build", build_info()},
                      {"backend", info.name},
                      {"backend_requested", backend_requested},
                      {"device", info.device},
                      {"driver", info.driver},
                      {"kernel_isa", info.kernel_set},
                      {"threads", info.threads},
                      {"options", info.options},
                      {"memory", backend.memory_report()}};
  if (weights != nullptr) j["weights"] = weights->layout;
  return j;
}

nlohmann::json report_envelope(const std::string& kind, const std::string& backend_requested, const Backend& backend,
                               const LlamaModel* model, const ModelWeights* weights) {
  nlohmann::json r;
  r["kind"] = kind;
  r["schema_version"] = 1;
  r["created_at"] = utc_now_rfc3339();
  r["env"] = env_summary();
  r["engine"] = engine_info(backend_requested, backend, weights);
  if (model != nullptr) {
    r["model"] = model_provenance(*model);
    r["synthetic"] = model->synthetic();
  }
  return r;
}

nlohmann::json arm_backend(const std::string& backend_requested, const Backend& backend) {
  return {{"backend_requested", backend_requested}, {"backend_used", backend.info().name}};
}

nlohmann::json env_summary() {
  const nlohmann::json b = probe_build();
  return {{"cpu", probe_cpu()},
          {"memory", probe_memory()},
          {"openblas", probe_openblas()},
          {"os", b["os"]}};
}

std::string utc_now_rfc3339() {
  char buf[32];
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

SampleStats summarize(std::vector<double> v) {
  SampleStats s;
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  s.n = v.size();
  s.min = v.front();
  s.max = v.back();
  s.median = v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
  s.mean = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
  return s;
}

nlohmann::json to_json(const SampleStats& s) {
  return {{"n", s.n}, {"median", s.median}, {"min", s.min}, {"max", s.max}, {"mean", s.mean}};
}

size_t peak_rss_bytes() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return static_cast<size_t>(std::stoull(line.substr(6))) * 1024;
  }
  return 0;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

std::string report_json_text(const nlohmann::json& report) {
  return report.dump(2, ' ', /*ensure_ascii=*/false, nlohmann::json::error_handler_t::replace);
}

Status write_report(const std::filesystem::path& dir, const nlohmann::json& report) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return make_error("io", "cannot create " + dir.string() + ": " + ec.message());
  const auto final_path = dir / "report.json";
  const auto tmp = dir / "report.json.tmp";
  {
    std::ofstream out(tmp);
    if (!out) return make_error("io", "cannot write " + tmp.string());
    out << report_json_text(report) << "\n";
    if (!out) return make_error("io", "write failed: " + tmp.string());
  }
  std::filesystem::rename(tmp, final_path, ec);
  if (ec) return make_error("io", "cannot rename to " + final_path.string() + ": " + ec.message());
  return ok_status();
}

}  // namespace kakeya::engine
