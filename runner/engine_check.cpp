#include "runner/engine_check.h"

#include <fstream>

#include "bridge/json_strict.h"
#include "bridge/utf8.h"
#include "runner/process.h"

namespace kakeya::runner {

Result<std::filesystem::path> find_engine(const RunnerConfig& config) {
  std::vector<std::filesystem::path> dirs = config.tool_dirs;
  dirs.push_back(self_exe_dir());
  return resolve_program("kakeya-engine", dirs);
}

bool looks_like_gguf(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  char magic[4] = {};
  return in.read(magic, 4) && std::string_view(magic, 4) == "GGUF";
}

Result<nlohmann::json> check_model_with_engine(const RunnerConfig& config, const std::filesystem::path& model,
                                               double timeout_s) {
  KAKEYA_ASSIGN_OR_RETURN(auto engine, find_engine(config));
  ProcessSpec spec;
  spec.argv = {engine.string(), "check-model", "-m", model.string(), "--json"};
  spec.env = build_job_environment({}, {});
  spec.timeout_s = timeout_s;
  std::string out, err;
  auto p = Process::spawn(spec, [&out, &err](int stream, std::string_view data) {
    std::string& to = stream == 1 ? out : err;
    if (to.size() < 65536) to.append(data);
  });
  if (!p.ok()) return make_error(errc::kChildFailed, "cannot run " + engine.string() + ": " + p.error().message);
  const ProcessResult r = p.value()->wait();
  auto doc = bridge::parse_json_strict(out);
  if (doc.ok() && doc->is_object() && doc->contains("ok")) {
    if ((*doc)["ok"] == true && r.exit_code == 0) return doc;
    const auto& e = (*doc)["error"];
    if (e.is_object() && e["code"].is_string() && e["message"].is_string()) {
      const auto code = ErrorCode::from_string(e["code"].get<std::string>());
      return make_error(code.value_or(errc::kChildFailed), e["message"].get<std::string>());
    }
  }
  const std::string tail = err.size() > 400 ? err.substr(err.size() - 400) : err;
  return make_error(errc::kChildFailed, engine.string() + " check-model exited " + std::to_string(r.exit_code) +
                                            (tail.empty() ? "" : ": " + bridge::printable(tail)));
}

}  // namespace kakeya::runner
