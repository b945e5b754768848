#pragma once
// Subcommands of kakeya-engine. Each add_* registers one CLI11 subcommand whose callback
// runs the command and sets the process exit code through `exit_code`.
// Convention: every preset-facing command takes `--out DIR` and writes DIR/report.json
// (one JSON report), prints progress to stderr and a short human summary to stdout
// (or the report itself with --json).
#include <CLI/CLI.hpp>

namespace kakeya::engine::cmd {

void add_env_probe(CLI::App& app, int& exit_code);
void add_generate(CLI::App& app, int& exit_code);
void add_ar_bench(CLI::App& app, int& exit_code);
void add_synth(CLI::App& app, int& exit_code);
void add_specdecode_bench(CLI::App& app, int& exit_code);
void add_backend_parity(CLI::App& app, int& exit_code);
void add_niah_eval(CLI::App& app, int& exit_code);
void add_kv_quant_eval(CLI::App& app, int& exit_code);
void add_kv_calibrate(CLI::App& app, int& exit_code);
void add_perplexity(CLI::App& app, int& exit_code);
void add_selftest(CLI::App& app, int& exit_code);
void add_devices(CLI::App& app, int& exit_code);
// A GGUF re-typed by the engine's writer (engine/cmd/quantize.cpp), llama-quantize's arguments.
void add_quantize(CLI::App& app, int& exit_code);

// A model check without running it, for kakeya-runner doctor (engine/cmd/check_model.cpp).
void add_check_model(CLI::App& app, int& exit_code);

}  // namespace kakeya::engine::cmd
