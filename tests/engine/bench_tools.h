#pragma once
// Running a bench binary (build/bench/kakeya_<name>) from a test: its exit code and stderr, and a
// stand-in for llama.cpp's llama-bench that prints its `-o json` rows at fixed rates, so the
// ratios a bench records are checkable on a machine without llama.cpp.
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "runner/process.h"
#include "tests/harness/paths.h"

namespace kakeya::engine::test {

struct BenchRun {
  int exit_code = -1;
  std::string err;
};

// build/bench/<binary> with `args`, killed after timeout_s.
inline BenchRun run_bench_tool(const std::string& binary, const std::vector<std::string>& args, int timeout_s) {
  runner::ProcessSpec spec;
  spec.argv = {(testing::binary_dir() / "bench" / binary).string()};
  spec.argv.insert(spec.argv.end(), args.begin(), args.end());
  spec.env = runner::current_environment();
  spec.timeout_s = timeout_s;
  BenchRun r;
  auto p = runner::Process::spawn(spec, [&](int stream, std::string_view d) {
    if (stream == 2) r.err.append(d);
  });
  if (!p.ok()) {
    r.err = p.error().str();
    return r;
  }
  r.exit_code = p.value()->wait().exit_code;
  return r;
}

// An executable `llama-bench` in `dir` that prints `rows_json` (a JSON array of llama-bench's
// rows: n_prompt, n_gen, avg_ts, ...) whatever its arguments.
inline std::filesystem::path fake_llama_bench(const std::filesystem::path& dir, const std::string& rows_json) {
  const auto path = dir / "llama-bench";
  std::ofstream f(path);
  f << "#!/bin/sh\ncat <<'EOF'\n" << rows_json << "\nEOF\n";
  f.close();
  std::filesystem::permissions(path, std::filesystem::perms::owner_all);
  return path;
}

}  // namespace kakeya::engine::test
