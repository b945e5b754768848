// Decode mat-vec kernel benchmark (issue 5; never asserted). Writes one JSON document.
// One thread streams a set of weight matrices (default 24 matrices of 5632×2048, the
// TinyLlama-1.1B FFN shape: 156 MB at 4.5 bits/weight, beyond most L3 caches; raise --matrices
// where the L3 is larger, e.g. 100 on the 480 MiB L3 of the Xeon VM in bench/README.md) through
// each kernel set and layout the CPU can run:
//   row-major: quant_kernels(isa).matvec over the rows as stored in a GGUF file;
//   packed:    quant_kernels(isa).matvec_packed over the row-interleaved copy (quant.h).
// Both lie in memory like the engine's weight copies (streamed_bytes: 2 MiB-aligned, transparent
// huge pages).
// Reported per case: median seconds per sweep over --reps sweeps, weight GB/s, and the ratio to
// the STREAM-style triad measured in the same run, on one thread (the decode efficiency of the
// kernel alone, without attention, norms or the thread pool). With --threads N (> 1) each matrix
// is instead one job of a ThreadPool(N), its rows split as the backend's decode splits them
// (parallel_ranges); the triad stays the one-thread figure.
// With --gemm-tokens T (> 0), also the batched matmul kernels (engine/cpu/gemm.h) of each SIMD set
// on one thread: one matrix of the same shape (in L3, not L2) times T tokens of activations, or
// with --gemm-matrices N the product of each of N copies of it in turn (N·size beyond the L3:
// weights from memory, as a prefill meets them), GFLOP/s (2·rows·cols·T·N / s; int8 ops for
// the quantized types) and the ratio to the core's roofline
// peak for that set and type (bench/roofline.h), per layout: the prefill efficiency of the kernel
// alone.
// Usage: kakeya_kernels_bench [--types q4_0,q8_0] [--matrices N] [--reps R] [--gemm-tokens T]
//                             [--gemm-matrices N] [--gemm-splits S1,S2] [--out FILE]
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <new>
#include <random>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "bench/roofline.h"
#include "bridge/cli_parse.h"
#include "bridge/exit_codes.h"
#include "engine/cpu/cpu_backend.h"
#include "engine/cpu/cpu_features.h"
#include "engine/cpu/gemm.h"
#include "engine/cpu/quant.h"
#include "engine/cpu/thread_pool.h"
#include "engine/ggml_types.h"
#include "engine/quantize.h"

namespace {

using namespace kakeya::engine;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

// One-thread triad a = b + s·c over three arrays of `mib` MiB: bytes moved / second (median).
double triad_gb_s(size_t mib, int reps) {
  const size_t n = (mib << 20) / sizeof(double);
  std::vector<double> a(n, 0.0), b(n, 1.0), c(n, 2.0);
  std::vector<double> s;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = Clock::now();
    for (size_t i = 0; i < n; ++i) a[i] = b[i] + 3.0 * c[i];
    s.push_back(seconds_since(t0));
  }
  volatile double sink = a[n / 2];
  (void)sink;
  return 3.0 * static_cast<double>(n * sizeof(double)) / median(s) / 1e9;
}

// A matrix of random N(0, 0.02²) weights quantized to `type` (engine/quantize.h: valid blocks
// with the scales a real file has, for every storage type).
std::vector<uint8_t> random_matrix(GgmlType type, int64_t n, int64_t rows, std::mt19937& rng) {
  const size_t row_bytes = ggml_row_bytes(type, n);
  std::vector<uint8_t> w(row_bytes * static_cast<size_t>(rows));
  std::normal_distribution<float> normal(0.0f, 0.02f);
  std::vector<float> x(static_cast<size_t>(n));
  for (int64_t r = 0; r < rows; ++r) {
    for (float& v : x) v = normal(rng);
    (void)convert_row(type, x.data(), w.data() + static_cast<size_t>(r) * row_bytes, n);  // storage types only
  }
  return w;
}

// A matrix in memory like the engine's weight copies (streamed_bytes: huge pages).
struct Streamed {
  std::unique_ptr<uint8_t, decltype(&std::free)> bytes{nullptr, &std::free};
  size_t size = 0;
  uint8_t* data() const { return bytes.get(); }
};
Streamed streamed_copy(const std::vector<uint8_t>& v) {
  Streamed s;
  s.bytes.reset(streamed_bytes(v.size()));
  if (s.data() == nullptr) throw std::bad_alloc();
  std::memcpy(s.data(), v.data(), v.size());
  s.size = v.size();
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> types = {"q4_0", "q8_0", "f16"};
  int matrices = 24;
  int reps = 7;
  int64_t rows = 5632, cols = 2048;
  int gemm_tokens = 0;
  int gemm_matrices = 1;
  std::vector<int> gemm_splits;
  int threads = 1;
  std::string out;
  CLI::App app{
      "kakeya_kernels_bench — decode mat-vec GB/s per kernel set and weight layout, one thread or --threads (JSON)",
      "kakeya_kernels_bench"};
  app.footer(
      "Exit codes: 0 the JSON was printed (and written to --out); 1 --out could not be written; 64 usage: a "
      "command line that cannot be parsed or a value refused before anything ran (a --cols or --types value; "
      "stderr names it).");
  app.add_option("--types", types, "Weight types")->delimiter(',')->capture_default_str();
  app.add_option("--matrices", matrices, "Distinct matrices streamed per sweep")->capture_default_str()->check(CLI::Range(1, 512));
  app.add_option("--reps", reps, "Timed sweeps per case")->capture_default_str()->check(CLI::Range(1, 1000));
  app.add_option("--rows", rows, "Rows per matrix")->capture_default_str()->check(CLI::Range(16, 1 << 20));
  app.add_option("--cols", cols, "Columns per matrix (a multiple of every type's block: 32, or 256 for the K-quants and IQ4_XS)")
      ->capture_default_str()
      ->check(CLI::Range(32, 1 << 20));
  app.add_option("--gemm-tokens", gemm_tokens, "Tokens of the one-thread GEMM cases (0: none)")
      ->capture_default_str()
      ->check(CLI::Range(0, 4096));
  app.add_option("--gemm-matrices", gemm_matrices,
                 "Copies of the GEMM cases' matrix, multiplied in turn (1: the same matrix, in cache; raise it past the "
                 "L3 for weights from memory)")
      ->capture_default_str()
      ->check(CLI::Range(1, 512));
  app.add_option("--gemm-splits", gemm_splits,
                 "Also run each GEMM case with its rows in S calls (ranges of whole 32-row units, as the backend's "
                 "tasks), for each S given, alternating within every rep (ratios side by side)")
      ->delimiter(',')
      ->check(CLI::Range(1, 1024));
  app.add_option("--threads", threads,
                 "Threads of the mat-vec cases (the backend's pool and row ranges: one job per matrix)")
      ->capture_default_str()
      ->check(CLI::Range(1, 256));
  app.add_option("--out", out, "JSON output (default: stdout only)");
  if (auto code = kakeya::parse_command_line(app, argc, argv)) return *code;
  if (cols % 32 != 0) {
    std::cerr << "kernels_bench: --cols " << cols << " is not a multiple of 32\n";
    return kakeya::kExitUsage;
  }

  std::vector<KernelIsa> isas = {KernelIsa::Portable};
  for (KernelIsa isa : {KernelIsa::Avx2, KernelIsa::Avx512})
    if (kernel_isa_available(isa)) isas.push_back(isa);
  std::cerr << "kernels_bench: triad (1 thread)\n";
  const double triad_before = triad_gb_s(256, 5);

  nlohmann::json cases = nlohmann::json::array();
  ThreadPool pool(threads);
  std::mt19937 rng(1);
  std::vector<float> y(static_cast<size_t>(rows));
  std::vector<float> x(static_cast<size_t>(cols));
  for (auto& v : x) v = static_cast<float>(static_cast<int>(rng() % 2000) - 1000) * 1e-3f;
  for (const std::string& tname : types) {
    auto type = ggml_type_from_name(tname.c_str());
    if (!type.ok()) {
      std::cerr << "kernels_bench: " << type.error().str() << "\n";
      return kakeya::kExitUsage;
    }
    if (cols % ggml_block_size(*type) != 0) {
      std::cerr << "kernels_bench: --cols " << cols << " is not a multiple of the " << tname << " block size\n";
      return kakeya::kExitUsage;
    }
    std::cerr << "kernels_bench: " << tname << ": " << matrices << " matrices of " << rows << "x" << cols << "\n";
    std::vector<Streamed> row_major, packed;
    for (int m = 0; m < matrices; ++m) {
      const std::vector<uint8_t> w = random_matrix(*type, cols, rows, rng);
      row_major.push_back(streamed_copy(w));
      if (packable(*type, cols)) {
        std::vector<uint8_t> p(packed_bytes(*type, cols, rows));
        pack_rows(*type, w.data(), cols, rows, p.data());
        packed.push_back(streamed_copy(p));
      }
    }
    const double bytes = static_cast<double>(row_major[0].size) * matrices;
    for (KernelIsa isa : isas) {
      const QuantKernels& k = quant_kernels(isa);
      if (isa == KernelIsa::Portable && *type != GgmlType::F16) continue;  // minutes per sweep; not a decode path
      ActivationBuffer act;
      k.quantize_activations(*type, x.data(), cols, act);
      // The layouts alternate sweep by sweep, so drifts of the machine's bandwidth (2x within
      // minutes on the VMs measured) hit both alike.
      std::vector<std::string> layouts = {"row-major"};
      if (!packed.empty()) layouts.push_back("packed");
      std::vector<std::vector<double>> s(layouts.size());
      for (int r = 0; r <= reps; ++r) {  // round 0 is a warm-up
        for (size_t l = 0; l < layouts.size(); ++l) {
          const auto t0 = Clock::now();
          for (int m = 0; m < matrices; ++m) {
            const bool is_packed = layouts[l] == "packed";
            const uint8_t* wm = (is_packed ? packed : row_major)[static_cast<size_t>(m)].data();
            // Ranges of whole packed groups (16 rows) and at least 32 rows, as the backend's decode
            // (which also keeps 32 KiB a range: no more than 32 rows at the default 2048 columns).
            const size_t unit = is_packed ? static_cast<size_t>(kPackRows) : 1;
            const size_t units = (static_cast<size_t>(rows) + unit - 1) / unit;
            pool.parallel_ranges(units, (32 + unit - 1) / unit, [&](size_t ua, size_t ub, int) {
              const int64_t r0 = static_cast<int64_t>(ua * unit), r1 = std::min(rows, static_cast<int64_t>(ub * unit));
              if (is_packed) {
                k.matvec_packed(*type, wm, cols, r0, r1, act, y.data() + r0);
              } else {
                k.matvec(*type, wm, cols, r0, r1, act, y.data() + r0);
              }
            });
          }
          if (r > 0) s[l].push_back(seconds_since(t0));
        }
      }
      for (size_t l = 0; l < layouts.size(); ++l) {
        const double sec = median(s[l]);
        const double gb_s = bytes / sec / 1e9;
        std::cerr << "  " << tname << " " << kernel_isa_name(isa) << " " << layouts[l] << ": " << gb_s << " GB/s\n";
        cases.push_back({{"type", tname},
                         {"kernel_isa", kernel_isa_name(isa)},
                         {"layout", layouts[l]},
                         {"sweep_s_median", sec},
                         {"weight_bytes_per_sweep", bytes},
                         {"weight_gb_s", gb_s}});
      }
    }
  }
  nlohmann::json gemm_cases = nlohmann::json::array();
  nlohmann::json peaks = nlohmann::json::array();
  if (gemm_tokens > 0) {
    std::vector<float> xs(static_cast<size_t>(gemm_tokens * cols));
    for (auto& v : xs) v = static_cast<float>(static_cast<int>(rng() % 2000) - 1000) * 1e-3f;
    std::vector<float> ys(static_cast<size_t>(gemm_tokens * rows));
    for (KernelIsa isa : isas) {
      if (isa == KernelIsa::Portable) continue;  // the decode kernels token by token
      std::map<std::string, double> peak;
      for (const roofline::Peak& p : roofline::peaks(isa)) {
        peak[p.name] = roofline::measure(p, 1, 5);
        peaks.push_back({{"kernel_isa", kernel_isa_name(isa)}, {"name", p.name}, {"instruction", p.instruction},
                         {"gop_s", peak[p.name]}});
      }
      const QuantKernels& k = quant_kernels(isa);
      const GemmKernels& g = gemm_kernels(isa);
      for (const std::string& tname : types) {
        const GgmlType type = ggml_type_from_name(tname.c_str()).value();  // checked above
        const std::vector<uint8_t> w = random_matrix(type, cols, rows, rng);
        std::vector<uint8_t> wp;
        if (packable(type, cols)) {
          wp.resize(packed_bytes(type, cols, rows));
          pack_rows(type, w.data(), cols, rows, wp.data());
        }
        std::vector<Streamed> w_copies, wp_copies;
        for (int c = 0; c < gemm_matrices; ++c) {
          w_copies.push_back(streamed_copy(w));
          if (!wp.empty()) wp_copies.push_back(streamed_copy(wp));
        }
        std::vector<ActivationBuffer> acts(static_cast<size_t>(gemm_tokens));
        for (int t = 0; t < gemm_tokens; ++t)
          k.quantize_activations(type, xs.data() + static_cast<size_t>(t) * cols, cols, acts[static_cast<size_t>(t)]);
        const std::string unit = roofline::gemm_peak_name(type, g);
        GemmScratch scratch;
        for (const char* layout : {"row-major", "packed"}) {
          const bool is_packed = std::string(layout) == "packed";
          if (is_packed && wp.empty()) continue;
          // Seconds of the product of every copy with its rows in `calls` calls of whole 32-row
          // ranges (the backend's tasks on one thread); GFLOP/s of a median.
          auto timed = [&](int calls) {
            const int64_t per = (rows / calls + 31) / 32 * 32;
            const auto t0 = Clock::now();
            for (int c = 0; c < gemm_matrices; ++c) {
              const size_t ci = static_cast<size_t>(c);
              const GemmWeights gw{type, cols, w_copies[ci].data(), is_packed ? wp_copies[ci].data() : nullptr};
              for (int64_t r0 = 0; r0 < rows; r0 += per)
                g.gemm(gw, r0, std::min(rows, r0 + per), acts.data(), gemm_tokens, ys.data() + r0,
                       static_cast<size_t>(rows), false, scratch);
            }
            return seconds_since(t0);
          };
          auto gflop_s_of = [&](double seconds) {
            return 2.0 * static_cast<double>(rows) * static_cast<double>(cols) * gemm_tokens * gemm_matrices /
                   seconds / 1e9;
          };
          std::vector<double> s;
          for (int r = 0; r <= reps; ++r) {  // round 0 is a warm-up
            const double sec = timed(1);
            if (r > 0) s.push_back(sec);
          }
          const double gflop_s = gflop_s_of(median(s));
          std::cerr << "  gemm " << tname << " " << kernel_isa_name(isa) << " " << layout << " x" << gemm_tokens << ": "
                    << gflop_s << " GFLOP/s (" << gflop_s / peak[unit] << " of " << unit << ")\n";
          gemm_cases.push_back({{"type", tname},
                                {"kernel_isa", kernel_isa_name(isa)},
                                {"layout", layout},
                                {"tokens", gemm_tokens},
                                {"matrices", gemm_matrices},
                                {"own_kernel", g.has_kernel(type)},
                                {"matches_decode", g.matches_decode(type, is_packed)},
                                {"seconds_median", median(s)},
                                {"gflop_s", gflop_s},
                                {"roofline", unit},
                                {"efficiency_vs_roofline_1t", gflop_s / peak[unit]}});
          if (!gemm_splits.empty()) {
            // The same product with its rows in S calls, every S once per rep, in turn.
            std::vector<std::vector<double>> t(gemm_splits.size());
            for (int r = 0; r <= reps; ++r) {
              for (size_t i = 0; i < gemm_splits.size(); ++i) {
                const double sec = timed(gemm_splits[i]);
                if (r > 0) t[i].push_back(sec);
              }
            }
            nlohmann::json splits = nlohmann::json::array();
            for (size_t i = 0; i < gemm_splits.size(); ++i) {
              const double g_s = gflop_s_of(median(t[i]));
              std::cerr << "    rows in " << gemm_splits[i] << " calls: " << g_s << " GFLOP/s, x"
                        << median(t[0]) / median(t[i]) << " of " << gemm_splits[0] << "\n";
              splits.push_back({{"calls", gemm_splits[i]},
                                {"seconds_median", median(t[i])},
                                {"gflop_s", g_s},
                                {"speed_vs_first", median(t[0]) / median(t[i])}});
            }
            gemm_cases.back()["row_splits"] = splits;
          }
        }
      }
    }
  }
  const double triad_after = triad_gb_s(256, 5);
  const double triad = std::max(triad_before, triad_after);
  for (auto& c : cases) c["efficiency_vs_triad_1t"] = c["weight_gb_s"].get<double>() / triad;
  nlohmann::json doc = {{"bench", "kernels"},
                        {"cpu_features", cpu_features().to_string()},
                        {"matrix", {{"rows", rows}, {"cols", cols}, {"count", matrices}}},
                        {"threads", threads},
                        {"reps", reps},
                        {"triad_gb_s_1t", {{"before", triad_before}, {"after", triad_after}, {"used", triad}}},
                        {"cases", cases},
                        {"roofline_1t", peaks},
                        {"gemm_cases", gemm_cases}};
  std::cout << doc.dump(2) << "\n";
  if (!out.empty()) {
    std::ofstream f(out);
    f << doc.dump(2) << "\n";
    if (!f) {
      std::cerr << "kernels_bench: cannot write " << out << "\n";
      return 1;
    }
  }
  return 0;
}
