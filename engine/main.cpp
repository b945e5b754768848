// kakeya-engine: the inference engine's presets as subcommands. Thin: the library is the product.
#include <CLI/CLI.hpp>

#include "bridge/cli_parse.h"
#include "bridge/version.h"
#include "engine/cmd/commands.h"

#if defined(__SANITIZE_ADDRESS__)
// Sanitizer builds of the engine run without leak detection unless ASAN_OPTIONS says otherwise,
// as the test suite runs every binary (scripts/test.sh: ASAN_OPTIONS=detect_leaks=0). A runner
// starts the engine with a scrubbed environment (its device probe, catalogs without ASAN_OPTIONS
// in a preset's env), and Mesa's Vulkan ICD (lavapipe, LLVM) leaves allocations at exit whose
// fast-unwound stacks stop in libstdc++ (no frame pointers) and so miss the libvulkan suppression
// (bridge/version.cpp) on some hosts: on the 2-core AMD EPYC VM, env-probe exited 1 with 256 bytes
// "leaked" there, at 13135ed as after it. ASAN_OPTIONS=detect_leaks=1 turns detection back on.
extern "C" const char* __asan_default_options() { return "detect_leaks=0"; }
#endif

int main(int argc, char** argv) {
  CLI::App app{"kakeya-engine — GGUF Llama inference presets on a backend (--backend cpu | vulkan[:N])",
               "kakeya-engine"};
  app.set_version_flag("--version", kakeya::engine_version());
  app.require_subcommand(1);
  int exit_code = 0;
  kakeya::engine::cmd::add_env_probe(app, exit_code);
  kakeya::engine::cmd::add_generate(app, exit_code);
  kakeya::engine::cmd::add_ar_bench(app, exit_code);
  kakeya::engine::cmd::add_synth(app, exit_code);
  kakeya::engine::cmd::add_specdecode_bench(app, exit_code);
  kakeya::engine::cmd::add_backend_parity(app, exit_code);
  kakeya::engine::cmd::add_niah_eval(app, exit_code);
  kakeya::engine::cmd::add_kv_quant_eval(app, exit_code);
  kakeya::engine::cmd::add_kv_calibrate(app, exit_code);
  kakeya::engine::cmd::add_perplexity(app, exit_code);
  kakeya::engine::cmd::add_selftest(app, exit_code);
  kakeya::engine::cmd::add_devices(app, exit_code);
  kakeya::engine::cmd::add_check_model(app, exit_code);
  kakeya::engine::cmd::add_quantize(app, exit_code);
  // A command line CLI11 cannot parse exits 64 (bridge/exit_codes.h), not CLI11's 105/106.
  if (auto code = kakeya::parse_command_line(app, argc, argv)) return *code;
  return exit_code;
}
