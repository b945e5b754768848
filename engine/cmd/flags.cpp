#include "engine/cmd/flags.h"

#include <iostream>
#include <sstream>
#include <thread>

namespace kakeya::engine::cmd {

void add_common_flags(CLI::App* sub, CommonFlags& f, unsigned which, const std::string& n_ctx_default) {
  if (which & kModelFlag) sub->add_option("-m,--model", f.model, "GGUF model file")->required()->check(CLI::ExistingFile);
  if (which & kBackendFlag) {
    sub->add_option("--backend", f.backend, "Backend: cpu, vulkan or vulkan:N (never a silent fallback)")
        ->capture_default_str();
  }
  if (which & kThreadsFlag) {
    sub->add_option("-t,--threads", f.threads, "Host threads (0 = every logical CPU; more than the machine has is an error)")
        ->capture_default_str()
        ->check(CLI::Range(0, 1024));
  }
  if (which & kNCtxFlag) {
    sub->add_option("-c,--n-ctx,--ctx,--ctx-size", f.n_ctx, "Context length (0 = " + n_ctx_default + ")")
        ->capture_default_str();
  }
  if (which & kNBatchFlag) {
    sub->add_option("-b,--n-batch,--batch-size", f.n_batch, "Prefill chunk in tokens")->capture_default_str()->check(CLI::Range(1, 65536));
  }
  if (which & (kOutFlag | kOutRequiredFlag)) {
    auto* out = sub->add_option("--out", f.out, "Directory for the report files (created if missing)");
    if (which & kOutRequiredFlag) out->required();
  }
  if (which & kJsonFlag) sub->add_flag("--json", f.json, "Print the report JSON on stdout instead of a summary");
}

Result<int> resolve_threads(int requested) {
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (requested < 0) return make_error("bad_param", "--threads " + std::to_string(requested) + " is negative");
  if (requested == 0) return cores;
  if (requested > cores) {
    return make_error("bad_param", "--threads " + std::to_string(requested) + " exceeds the " +
                                       std::to_string(cores) + " logical CPUs of this machine");
  }
  return requested;
}

Result<std::vector<int>> parse_int_list(const std::string& flag, const std::string& text, int min_value) {
  const std::string want = min_value == 1 ? "a positive integer" : min_value == 0 ? "a non-negative integer"
                                                                                  : "an integer >= " + std::to_string(min_value);
  std::vector<int> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (item.empty()) continue;
    int v = 0;
    try {
      size_t used = 0;
      v = std::stoi(item, &used);
      if (used != item.size()) throw std::invalid_argument(item);
    } catch (const std::exception&) {
      return make_error("bad_param", flag + ": \"" + item + "\" is not " + want);
    }
    if (v < min_value) return make_error("bad_param", flag + ": \"" + item + "\" is not " + want);
    out.push_back(v);
  }
  return out;
}

Result<std::unique_ptr<Backend>> open_flag_backend(const CommonFlags& flags, BackendOptions options) {
  KAKEYA_ASSIGN_OR_RETURN(options.threads, resolve_threads(flags.threads));
  return open_backend(flags.backend, options);
}

Result<std::unique_ptr<LoadedModel>> load_model(const std::string& path) {
  KAKEYA_ASSIGN_OR_RETURN(LlamaModel model, LlamaModel::load(path));
  KAKEYA_ASSIGN_OR_RETURN(Tokenizer tok, Tokenizer::from_gguf(model.gguf()));
  return std::unique_ptr<LoadedModel>(new LoadedModel{std::move(model), std::move(tok)});
}

int fail(const std::string& command, const Error& error) {
  std::cerr << command << ": " << error.str() << "\n";
  return 1;
}

Progress stderr_progress(const std::string& command) {
  return [command](const std::string& line) { std::cerr << command << ": " << line << "\n"; };
}

Status emit_report(const std::string& command, const CommonFlags& flags, const nlohmann::json& report) {
  if (!flags.out.empty()) {
    KAKEYA_TRY(write_report(flags.out, report));
    std::cerr << command << ": wrote " << (std::filesystem::path(flags.out) / "report.json").string() << "\n";
  }
  if (flags.json) std::cout << report_json_text(report) << "\n";
  return ok_status();
}

}  // namespace kakeya::engine::cmd
