#pragma once
// ar-bench's results as llama-bench prints them (examples/llama-bench at llama.cpp c392e50: the
// markdown, csv and json printers), so a run reads like the tool llama.cpp users know:
//
//   | model                          |       size |     params | backend | threads |          test |                  t/s |
//   | ------------------------------ | ---------: | ---------: | ------- | ------: | ------------: | -------------------: |
//   | llama 1.24B Q8_0               |   1.22 GiB |     1.24 B | cpu     |       8 |         pp512 |        152.31 ± 1.20 |
//   | llama 1.24B Q8_0               |   1.22 GiB |     1.24 B | cpu     |       8 |   tg64 @ d512 |         21.07 ± 0.11 |
//
// One row per test: `pp<L>` is the prefill of an L-token prompt; `tg<N> @ d<L>` the N one-token
// decode steps that follow it (llama-bench's later "@ d" depth notation: an L-token context is
// already there). t/s is the mean over the samples of tokens/seconds ± their sample standard
// deviation (n − 1; 0 for one sample), as llama-bench computes avg_ts and stddev_ts. size and
// params count every tensor of the file (llama_model_size, llama_model_n_params); the model is
// named "<architecture> <params> <most common matrix type>".
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bridge/result.h"

namespace kakeya::engine {

struct BenchRow {
  std::string model;      // e.g. "llama 1.24B Q8_0"
  uint64_t size_bytes = 0;
  uint64_t n_params = 0;
  std::string backend;    // the backend that ran (engine.backend)
  int threads = 0;
  std::string test;       // "pp512", "tg64 @ d512"
  int n_prompt = 0;       // prefill tokens of a pp test
  int n_gen = 0;          // decode tokens of a tg test
  int n_depth = 0;        // context already filled before a tg test
  double avg_ts = 0;      // tokens/s, mean over samples
  double stddev_ts = 0;   // sample standard deviation
  std::vector<double> samples_ts;
};

// The rows of an ar-bench report (presets/ar_bench.h): pp then tg per prompt length, in the
// report's order. Errors: "missing_key" naming a missing field.
Result<std::vector<BenchRow>> ar_bench_table(const nlohmann::json& report);

// "md" (llama-bench's markdown table), "csv" (a header line, then one quoted line per row) or
// "json" (an array of row objects). Errors: "bad_param" for another format.
Result<std::string> format_bench_table(const std::vector<BenchRow>& rows, const std::string& format);

nlohmann::json to_json(const BenchRow& row);

}  // namespace kakeya::engine
