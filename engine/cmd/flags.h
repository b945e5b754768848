#pragma once
// What every kakeya-engine command shares, declared once: the common flags and the rule of
// each, the comma-list parser, opening the backend, loading the model, reporting an error.
//
// Short and alternative names follow llama.cpp's tools (-m, -t, -c/--ctx-size, -b/--batch-size).
//   -m, --model PATH     the GGUF model (must exist)
//   --backend NAME       cpu | vulkan | vulkan:N (open_backend); a backend that cannot be opened
//                        is an error, never a fallback; reports record it beside what ran
//   -t, --threads N      host threads; 0 = every logical CPU; more than this machine has is
//                        refused (an oversubscribed pool only slows decode down)
//   -c, --n-ctx, --ctx, --ctx-size N
//                        context length in tokens (0 = the command's default, in its help)
//   -b, --n-batch, --batch-size N
//                        prefill chunk in tokens (>= 1)
//   --out DIR        directory for the command's report files (created if missing)
//   --json           print the report JSON on stdout instead of a human summary
#include <CLI/CLI.hpp>

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "bridge/result.h"
#include "engine/backend.h"
#include "engine/model.h"
#include "engine/presets/report.h"
#include "engine/tokenizer.h"

namespace kakeya::engine::cmd {

struct CommonFlags {
  std::string model;
  std::string backend = "cpu";
  int threads = 0;
  size_t n_ctx = 0;
  size_t n_batch = 512;
  std::string out;
  bool json = false;
};

// Which common flags a command takes (bitwise or).
enum CommonFlag : unsigned {
  kModelFlag = 1u << 0,
  kBackendFlag = 1u << 1,
  kThreadsFlag = 1u << 2,
  kNCtxFlag = 1u << 3,
  kNBatchFlag = 1u << 4,
  kOutFlag = 1u << 5,          // optional --out
  kOutRequiredFlag = 1u << 6,  // required --out
  kJsonFlag = 1u << 7,
};
// The flags of a command that runs a model on a backend.
inline constexpr unsigned kModelRunFlags = kModelFlag | kBackendFlag | kThreadsFlag;

// Declares the flags of `which` on `sub`, bound to `flags` (whose values are the defaults shown
// in --help). `n_ctx_default` describes what --n-ctx 0 means for this command.
void add_common_flags(CLI::App* sub, CommonFlags& flags, unsigned which,
                      const std::string& n_ctx_default = "the model's context length");

// The thread count for --threads `requested`. Errors: "bad_param" (negative, or more than the
// logical CPUs of this machine, naming both numbers).
Result<int> resolve_threads(int requested);

// The integers of a comma-separated list ("16,128,512"; empty items skipped), each >= min_value.
// Errors: "bad_param" naming the flag and the item.
Result<std::vector<int>> parse_int_list(const std::string& flag, const std::string& text, int min_value);

// open_backend(flags.backend) with --threads resolved and the given CPU options.
Result<std::unique_ptr<Backend>> open_flag_backend(const CommonFlags& flags, BackendOptions options = {});

// A model and its tokenizer.
struct LoadedModel {
  LlamaModel model;
  Tokenizer tok;
};
Result<std::unique_ptr<LoadedModel>> load_model(const std::string& path);

// Prints "<command>: <error>" to stderr; returns the exit code 1.
int fail(const std::string& command, const Error& error);
// Progress lines to stderr, each prefixed "<command>: ".
Progress stderr_progress(const std::string& command);
// Writes flags.out/report.json when --out was given (saying so on stderr), and prints the report
// on stdout when --json. Errors: write_report's.
Status emit_report(const std::string& command, const CommonFlags& flags, const nlohmann::json& report);

}  // namespace kakeya::engine::cmd
