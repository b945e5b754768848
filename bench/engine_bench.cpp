// kakeya_engine_bench: the CPU engine against the machine's own limits, in one run.
//
//   1. memory bandwidth: STREAM-style triad a[i] = b[i] + s·c[i] over doubles, 3 arrays of
//      --triad-mib MiB each, counted as 24 bytes per element (STREAM convention, no
//      write-allocate), median of --triad-reps, at each thread count; and a read stream (what
//      decode does to memory: read only), one buffer of the triad's three arrays' bytes in
//      transparent huge pages, every 64-byte line read once per pass;
//   2. OpenBLAS sgemm GFLOP/s (2·M·N·K / s, median of --sgemm-reps) for square and model-shaped
//      problems, at each thread count;
//   3. the core's compute roofline (bench/roofline.h): FMA, BF16-dot and int8-dot peaks of the
//      active kernel set's instructions, at each thread count;
//   4. `kakeya-engine ar-bench` on synthetic TinyLlama-1.1B-shaped GGUFs (made once with the synth
//      writer into --cache-dir) per type and thread count, each in its own process so its peak RSS
//      (wait4 ru_maxrss) is that run's alone, --rounds times; with --llama-bench PATH each round
//      also runs llama.cpp's llama-bench on the same file, prompt lengths and thread count, arm
//      by arm (both engines' decode back to back, then both engines' prefill; llama.cpp first
//      in every other round), a short triad before each arm, and the per-round ratios are
//      recorded; derived:
//        decode (after a 1-token prompt, at llama-bench tg's positions; kDecodePromptTokens)
//        efficiency = weight bytes read per token × decode tok/s ÷ triad bandwidth
//        (measured just before and just after that type's rounds, the higher of the two),
//        read efficiency = the same weight GB/s ÷ the read stream measured just before that
//        decode arm, per round and per engine (near 1: the engine's decode waits on the bus),
//        prefill efficiency = prefill FLOP/s ÷ sgemm FLOP/s (model-shaped, same threads) and
//        ÷ the roofline peak of the instruction the type's GEMM runs on (roofline_peak_for);
//      With --variant-env KEY=VALUE each round also runs kakeya's decode arm with that variable set
//      (e.g. KAKEYA_DENSE16=two-streams+vdpbf16ps, another mat-vec kernel), between the two engines'
//      decode arms, and records its ratios to llama.cpp and to kakeya as it is (decode.variants[]);
//      given several times, one such arm per variable, their order rotated by one every round;
//   5. oversubscription: one spinning child process, then decode at --threads 2 vs 1.
// Prints a table and writes --out (default bench/results/engine-<host>.json). Never asserts.
#include <cblas.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "bench/pool_rounds.h"
#include "bench/roofline.h"
#include "bridge/cli_parse.h"
#include "bridge/exit_codes.h"
#include "engine/cpu/gemm.h"
#include "engine/cpu/thread_pool.h"
#include "engine/ggml_types.h"
#include "engine/model.h"
#include "engine/presets/report.h"
#include "engine/presets/synth.h"

extern "C" char** environ;

namespace kakeya::engine {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

// Decode is timed after a prompt of this many tokens: llama-bench c392e50's tg test decodes from
// an empty cache (it has no depth option), so both decode at the same positions. Decode after the
// first --prompt-tokens length is recorded beside it.
constexpr int kDecodePromptTokens = 1;

struct Args {
  std::string out;
  std::string cache_dir = (fs::temp_directory_path() / "kakeya-bench-models").string();
  std::string engine;  // kakeya-engine binary
  std::string shape = "tinyllama-1.1b";
  std::vector<std::string> types = {"f16", "bf16", "q8_0", "q4_0", "q4_k", "q6_k"};
  std::vector<int> threads = {1, 2};
  int triad_mib = 128;
  int triad_reps = 10;
  int sgemm_reps = 5;
  std::vector<int> sgemm_square = {1024, 2048};
  std::vector<int> prompt_tokens = {128, 512};  // the first one also shapes the model-shaped sgemm
  int gen_tokens = 32;
  int samples = 5;
  int rounds = 1;
  int arm_triad_reps = 3;  // triad passes just before each arm of a round (0: none)
  double window_tolerance = 0.2;  // same-window rounds: read probes within this fraction of each other
  std::string batched_matmul = "auto";  // ar-bench --batched-matmul
  std::string llama_bench;              // llama.cpp's llama-bench binary, or "" (not run)
  std::string llama_batched_bench;      // llama.cpp's llama-batched-bench binary, or "" (not run)
  // KEY=VALUE each: a further decode arm per entry, kakeya with that variable set (empty: none).
  std::vector<std::string> variant_envs;
  int roofline_reps = 5;
  bool oversubscribed = true;
  std::string oversub_type = "q4_0";
  int oversub_rounds = 3;
  std::string note;
  bool keep_models = true;
};

using kakeya::bench::median_of;  // the mean of the middle two for even sizes; 0 when empty

json stats_json(const std::vector<double>& v) {
  return {{"median", median_of(v)},
          {"min", v.empty() ? 0 : *std::min_element(v.begin(), v.end())},
          {"max", v.empty() ? 0 : *std::max_element(v.begin(), v.end())},
          {"n", v.size()}};
}

std::string read_first_line(const char* path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

// ---- 1. STREAM triad ----
json triad(int n_threads, int mib, int reps) {
  const size_t n = static_cast<size_t>(mib) * (size_t{1} << 20) / sizeof(double);
  std::vector<double> a(n), b(n), c(n);
  ThreadPool pool(n_threads);
  const size_t parts = static_cast<size_t>(n_threads);
  auto each = [&](auto&& body) {
    pool.parallel_for(parts, [&](size_t p, int) {
      const size_t lo = n * p / parts, hi = n * (p + 1) / parts;
      body(lo, hi);
    });
  };
  each([&](size_t lo, size_t hi) {
    for (size_t i = lo; i < hi; ++i) { a[i] = 0; b[i] = 1.0 + static_cast<double>(i % 7); c[i] = 2.0; }
  });
  std::vector<double> gbs;
  const double s = 3.0;
  for (int r = 0; r < reps + 1; ++r) {
    const auto t0 = Clock::now();
    each([&](size_t lo, size_t hi) {
      double* __restrict pa = a.data();
      const double* __restrict pb = b.data();
      const double* __restrict pc = c.data();
      for (size_t i = lo; i < hi; ++i) pa[i] = pb[i] + s * pc[i];
    });
    const double sec = seconds_since(t0);
    if (r > 0) gbs.push_back(3.0 * sizeof(double) * static_cast<double>(n) / sec / 1e9);  // r = 0: warm-up
  }
  volatile double sink = a[n / 2];
  (void)sink;
  return {{"threads", n_threads}, {"array_bytes", n * sizeof(double)}, {"gb_s", stats_json(gbs)}};
}

// ---- 1b. read stream ----
// GB/s of a plain read of `mib` MiB (madvise(MADV_HUGEPAGE), as the CPU backend holds its weight
// copies), each of n_threads threads reading its contiguous share front to back: one 8-byte load
// per 64-byte line into 4 independent sums, so every line crosses the memory bus and the loads
// themselves are never the limit (one thread issues a load per 64 bytes: a few per nanosecond at
// the bus rates measured). Each pass is timed twice, plainly and with every line prefetched
// kReadPrefetchBytes ahead into L2 (as the decode kernels prefetch their rows on Intel CPUs; on
// AMD CPUs most of them read without it), and the ceiling is the higher median of the two: on the
// 2-vCPU Intel Xeon VM one core had read 15 GB/s plainly and 19 GB/s with the lines prefetched
// (README's Speed section). The pages are touched once before the first timed pass; median of
// `reps` passes of each kind, alternating. This is the ceiling of a decode that reads each weight
// once per token and writes next to nothing, which the triad (two reads and a write per element,
// the write's line fill not counted) understates: on the 2-core AMD EPYC (Zen 4) VM, two threads
// read 29 GB/s this way where the triad reported 24.
constexpr size_t kReadPrefetchBytes = 2048;

json read_stream(int n_threads, int mib, int reps) {
  const size_t bytes = static_cast<size_t>(mib) << 20;
  json out = {{"threads", n_threads}, {"bytes", bytes}, {"prefetch_bytes", kReadPrefetchBytes}};
  void* mem = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) {
    out["gb_s"] = out["plain_gb_s"] = out["prefetched_gb_s"] = stats_json({});
    out["error"] = "mmap failed";
    return out;
  }
  ::madvise(mem, bytes, MADV_HUGEPAGE);
  auto* p = static_cast<uint8_t*>(mem);
  ThreadPool pool(n_threads);
  const size_t lines = bytes / 64, parts = static_cast<size_t>(n_threads);
  std::vector<uint64_t> sums(parts);
  auto each = [&](auto&& body) {
    pool.parallel_for(parts, [&](size_t part, int) { body(part, lines * part / parts, lines * (part + 1) / parts); });
  };
  each([&](size_t, size_t lo, size_t hi) { std::memset(p + lo * 64, 1, (hi - lo) * 64); });
  // One timed pass over every thread's share; `prefetch` 0 reads plainly.
  auto pass = [&](size_t prefetch) {
    const auto t0 = Clock::now();
    each([&](size_t part, size_t lo, size_t hi) {
      const auto* w = reinterpret_cast<const volatile uint64_t*>(p);
      uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
      size_t i = lo;
      for (; i + 4 <= hi; i += 4) {
        if (prefetch != 0 && (i + 4) * 64 + prefetch <= hi * 64)
          for (size_t k = 0; k < 4; ++k) __builtin_prefetch(p + (i + k) * 64 + prefetch, 0, 2);
        s0 += w[8 * i];
        s1 += w[8 * (i + 1)];
        s2 += w[8 * (i + 2)];
        s3 += w[8 * (i + 3)];
      }
      for (; i < hi; ++i) s0 += w[8 * i];
      sums[part] = s0 + s1 + s2 + s3;
    });
    return static_cast<double>(bytes) / seconds_since(t0) / 1e9;
  };
  std::vector<double> plain, prefetched;
  for (int r = 0; r < reps; ++r) {
    plain.push_back(pass(0));
    prefetched.push_back(pass(kReadPrefetchBytes));
  }
  ::munmap(mem, bytes);
  out["plain_gb_s"] = stats_json(plain);
  out["prefetched_gb_s"] = stats_json(prefetched);
  out["gb_s"] = median_of(plain) >= median_of(prefetched) ? out["plain_gb_s"] : out["prefetched_gb_s"];
  return out;
}

// The read stream's footprint: the triad's three arrays.
int read_stream_mib(const Args& a) { return 3 * a.triad_mib; }

// ---- 2. sgemm: C[M][N] = A[M][K] · B[N][K]^T (the engine's layout: weights row-major [N][K]) ----
json sgemm(int n_threads, int M, int N, int K, int reps, const std::string& label) {
  openblas_set_num_threads(n_threads);
  std::vector<float> A(static_cast<size_t>(M) * K), B(static_cast<size_t>(N) * K), C(static_cast<size_t>(M) * N);
  for (size_t i = 0; i < A.size(); ++i) A[i] = static_cast<float>((i * 7) % 13) * 0.01f;
  for (size_t i = 0; i < B.size(); ++i) B[i] = static_cast<float>((i * 5) % 11) * 0.01f;
  std::vector<double> gf;
  for (int r = 0; r < reps + 1; ++r) {
    const auto t0 = Clock::now();
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, N, K, 1.0f, A.data(), K, B.data(), K, 0.0f,
                C.data(), N);
    const double sec = seconds_since(t0);
    if (r > 0) gf.push_back(2.0 * M * N * static_cast<double>(K) / sec / 1e9);
  }
  return {{"label", label}, {"threads", n_threads}, {"m", M}, {"n", N}, {"k", K}, {"gflop_s", stats_json(gf)}};
}

// ---- 3. models ----
struct ModelCost {
  double weight_bytes_per_token = 0;  // every layer matrix + output + one token_embd row + norms
  double matmul_params_layers = 0;    // Σ n_in·n_out over the layer matrices
  double output_params = 0;           // n_vocab·n_embd
  int64_t n_layer = 0, n_embd = 0, n_head = 0, head_dim = 0;
  double file_bytes = 0;
};

ModelCost model_cost(const LlamaModel& m) {
  ModelCost c;
  const auto& W = m.weights();
  const auto& hp = m.hparams();
  auto bytes = [](const WeightMatrix& w) { return static_cast<double>(w.row_bytes) * static_cast<double>(w.n_out); };
  auto params = [](const WeightMatrix& w) { return static_cast<double>(w.n_in) * static_cast<double>(w.n_out); };
  for (const auto& L : W.layers) {
    for (const WeightMatrix* w : {&L.wq, &L.wk, &L.wv, &L.wo, &L.w_gate, &L.w_up, &L.w_down}) {
      c.weight_bytes_per_token += bytes(*w);
      c.matmul_params_layers += params(*w);
    }
    c.weight_bytes_per_token += 2.0 * static_cast<double>(hp.n_embd) * sizeof(float);
  }
  c.weight_bytes_per_token += bytes(W.output) + static_cast<double>(W.token_embd.row_bytes);
  c.output_params = params(W.output);
  c.n_layer = hp.n_layer;
  c.n_embd = hp.n_embd;
  c.n_head = hp.n_head;
  c.head_dim = hp.head_dim;
  c.file_bytes = static_cast<double>(fs::file_size(m.path()));
  return c;
}

// FLOPs of one ar-bench prefill of P tokens (logits for the last position only).
double prefill_flops(const ModelCost& c, int P) {
  const double p = P;
  const double attn = static_cast<double>(c.n_layer) * c.n_head * c.head_dim * 2.0 * 2.0 * p * (p + 1) / 2.0;
  return 2.0 * c.matmul_params_layers * p + 2.0 * c.output_params + attn;
}

struct ChildResult {
  int status = -1;
  long max_rss_kib = 0;
  double wall_s = 0;
};

// Runs argv (no shell) and waits; peak RSS of that child from wait4. The child's stdout (its own
// table) goes to `stdout_path` ("" drops it); its stderr (progress) passes through. Its environment
// is this process's, with `set_env` (KEY=VALUE, or "") replacing any KEY there.
ChildResult run_child(const std::vector<std::string>& argv, const std::string& stdout_path = "",
                      const std::string& set_env = "") {
  std::vector<char*> av;
  for (const auto& s : argv) av.push_back(const_cast<char*>(s.c_str()));
  av.push_back(nullptr);
  std::vector<char*> envp;
  const std::string key = set_env.substr(0, set_env.find('=') + 1);  // "KEY=" ("" when none)
  for (char** e = environ; *e != nullptr; ++e)
    if (key.empty() || std::strncmp(*e, key.c_str(), key.size()) != 0) envp.push_back(*e);
  if (!set_env.empty()) envp.push_back(const_cast<char*>(set_env.c_str()));
  envp.push_back(nullptr);
  ChildResult r;
  pid_t pid = 0;
  const auto t0 = Clock::now();
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, stdout_path.empty() ? "/dev/null" : stdout_path.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  const int rc = posix_spawn(&pid, av[0], &fa, nullptr, av.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) return r;
  int status = 0;
  struct rusage ru {};
  if (wait4(pid, &status, 0, &ru) == pid) {
    r.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    r.max_rss_kib = ru.ru_maxrss;
  }
  r.wall_s = seconds_since(t0);
  return r;
}

std::string model_path(const Args& a, const std::string& type) {
  return (fs::path(a.cache_dir) / ("synth-" + a.shape + "-" + type + "-seed1.gguf")).string();
}

Status ensure_model(const Args& a, const std::string& type) {
  const std::string path = model_path(a, type);
  if (fs::exists(path)) return Ok{};
  std::error_code ec;
  fs::create_directories(a.cache_dir, ec);
  KAKEYA_ASSIGN_OR_RETURN(SynthShape shape, synth_shape(a.shape));
  KAKEYA_ASSIGN_OR_RETURN(GgmlType t, ggml_type_from_name(type.c_str()));
  SynthOptions o;
  o.shape = shape;
  o.type = t;
  o.seed = 1;
  o.n_threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::cerr << "engine_bench: writing " << path << "\n";
  const auto t0 = Clock::now();
  KAKEYA_TRY(write_synth_model(o, path));
  std::cerr << "engine_bench: wrote it in " << seconds_since(t0) << " s\n";
  return Ok{};
}

struct ArRun {
  json report;
  ChildResult child;
};

std::string join(const std::vector<int>& v) {
  std::string s;
  for (int x : v) s += (s.empty() ? "" : ",") + std::to_string(x);
  return s;
}

// ar-bench at `prompts` (prompt lengths, tokens) on `threads` threads, with `set_env` (KEY=VALUE or
// "") in its environment.
Result<ArRun> ar_bench(const Args& a, const std::string& model, int threads, int samples, const std::string& tag,
                       const std::vector<int>& prompts, const std::string& set_env = "") {
  const fs::path out = fs::path(a.cache_dir) / ("ar-" + tag);
  fs::remove_all(out);
  const int longest = *std::max_element(prompts.begin(), prompts.end());
  std::vector<std::string> argv = {a.engine, "ar-bench", "--model", model, "--prompt-lengths", join(prompts),
                                   "--gen-tokens", std::to_string(a.gen_tokens), "--samples", std::to_string(samples),
                                   "--threads", std::to_string(threads), "--n-ctx",
                                   std::to_string(longest + a.gen_tokens + 16), "--batched-matmul", a.batched_matmul,
                                   "--out", out.string()};
  ArRun r;
  r.child = run_child(argv, "", set_env);
  if (r.child.status != 0)
    return make_error("child_failed", "ar-bench exited with " + std::to_string(r.child.status) + " on " + model);
  std::ifstream in(out / "report.json");
  r.report = json::parse(in, nullptr, false);
  if (r.report.is_discarded()) return make_error(errc::kParseError, "unreadable " + (out / "report.json").string());
  return r;
}

// The index in report["aggregates"] of prompt length L (0 when absent).
size_t aggregate_index(const json& report, int L) {
  const json& aggs = report["aggregates"];
  for (size_t i = 0; i < aggs.size(); ++i)
    if (aggs[i].value("prompt_tokens", 0) == L) return i;
  return 0;
}

double arm_median(const json& report, const char* key, size_t arm = 0) {
  return report["aggregates"][arm][key]["median"].get<double>();
}

// llama.cpp's llama-bench on the same file: pp<L> for every L of `prompts` and tg<gen_tokens> (none
// for an empty `prompts` or gen_tokens 0: -p 0 / -n 0 skip that test), each
// `samples` repetitions (its own warm-up run first), CPU only (its build has no GPU backend: see
// bench/README.md). Returns tok/s means keyed "pp<L>" / "tg<N>" and the raw JSON rows.
struct LlamaRun {
  std::map<std::string, double> tok_s;
  json rows;
};
Result<LlamaRun> llama_bench(const Args& a, const std::string& model, int threads, int samples, const std::string& tag,
                             const std::vector<int>& prompts, int gen_tokens) {
  const fs::path out = fs::path(a.cache_dir) / ("llama-" + tag + ".json");
  const std::vector<std::string> argv = {a.llama_bench, "-m", model, "-p", prompts.empty() ? "0" : join(prompts), "-n",
                                         std::to_string(gen_tokens), "-t", std::to_string(threads), "-r",
                                         std::to_string(samples), "-o", "json"};
  const ChildResult c = run_child(argv, out.string());
  if (c.status != 0)
    return make_error("child_failed", "llama-bench exited with " + std::to_string(c.status) + " on " + model);
  std::ifstream in(out);
  LlamaRun r;
  r.rows = json::parse(in, nullptr, false);
  if (r.rows.is_discarded() || !r.rows.is_array())
    return make_error(errc::kParseError, "unreadable llama-bench output " + out.string());
  for (const json& row : r.rows) {
    const int pp = row.value("n_prompt", 0), tg = row.value("n_gen", 0);
    r.tok_s[pp > 0 ? "pp" + std::to_string(pp) : "tg" + std::to_string(tg)] = row.value("avg_ts", 0.0);
  }
  return r;
}

// llama.cpp's llama-batched-bench on the same file: for every L of `prompts`, `samples` runs of a
// prompt of L tokens then gen_tokens decoded one at a time after it (-npp L,L,... -ntg N -npl 1,
// one sequence, its own 16-token warm-up first): decode at depth L, which llama-bench c392e50
// cannot time (its tg decodes from an empty cache, its -pg reports prompt and decode as one
// rate). Returns the decode tok/s (speed_tg of its --output-format jsonl lines) of each run, keyed
// L, and the raw lines.
struct LlamaDepthRun {
  std::map<int, std::vector<double>> decode_tok_s;
  json rows = json::array();
};
Result<LlamaDepthRun> llama_batched_bench(const Args& a, const std::string& model, int threads, int samples,
                                          const std::string& tag, const std::vector<int>& prompts, int gen_tokens) {
  const fs::path out = fs::path(a.cache_dir) / ("llama-batched-" + tag + ".jsonl");
  std::vector<int> npp;
  for (int L : prompts)
    for (int s = 0; s < samples; ++s) npp.push_back(L);
  const int longest = *std::max_element(prompts.begin(), prompts.end());
  const std::vector<std::string> argv = {a.llama_batched_bench, "-m", model, "-c",
                                         std::to_string(longest + gen_tokens + 16), "-npp", join(npp), "-ntg",
                                         std::to_string(gen_tokens), "-npl", "1", "-t", std::to_string(threads), "-tb",
                                         std::to_string(threads), "--output-format", "jsonl"};
  const ChildResult c = run_child(argv, out.string());
  if (c.status != 0)
    return make_error("child_failed", "llama-batched-bench exited with " + std::to_string(c.status) + " on " + model);
  std::ifstream in(out);
  LlamaDepthRun r;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] != '{') continue;  // its log lines, when its build prints them to stdout
    const json row = json::parse(line, nullptr, false);
    if (row.is_discarded() || !row.contains("pp") || !row.contains("speed_tg")) continue;
    r.decode_tok_s[row["pp"].get<int>()].push_back(row["speed_tg"].get<double>());
    r.rows.push_back(row);
  }
  for (int L : prompts)
    if (r.decode_tok_s[L].size() != static_cast<size_t>(samples))
      return make_error(errc::kParseError, "llama-batched-bench output " + out.string() + " holds " +
                                               std::to_string(r.decode_tok_s[L].size()) + " runs at prompt " +
                                               std::to_string(L) + ", expected " + std::to_string(samples));
  return r;
}

// The roofline peak (GOP/s at `threads`) a type's GEMM runs on in the active set
// (roofline::gemm_peak_name: int8 dot products for the quantized types, AMX for BF16, F16, Q4_0,
// Q8_0 and Q4_K where the set runs them by tiles, vdpbf16ps for BF16 where it runs that, else f32 FMA); the
// FMA peak when that one was not measured, 0 when neither was.
double roofline_peak_for(const json& roofline, const std::string& type, int threads) {
  const Result<GgmlType> t = ggml_type_from_name(type.c_str());
  const std::string peak = t.ok() ? roofline::gemm_peak_name(*t, gemm_kernels(active_kernel_isa())) : "fma_f32";
  double fma = 0, want = 0;
  for (const json& p : roofline) {
    if (p["threads"] != threads) continue;
    if (p["name"] == "fma_f32") fma = p["gop_s"].get<double>();
    if (p["name"] == peak) want = p["gop_s"].get<double>();
  }
  return want > 0 ? want : fma;
}

// ---- 4. a busy neighbour ----
pid_t spawn_spinner() {
  const pid_t pid = fork();
  if (pid == 0) {
    volatile unsigned long x = 0;
    for (;;) x = x + 1;
  }
  return pid;
}

std::string host_name() {
  char buf[256] = {0};
  if (gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  std::string h(buf);
  for (char& ch : h)
    if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '-' && ch != '.') ch = '_';
  return h.empty() ? "unknown" : h;
}

int run(Args a) {
  if (a.engine.empty()) a.engine = (fs::read_symlink("/proc/self/exe").parent_path().parent_path() / "kakeya-engine").string();
  if (!fs::exists(a.engine)) {
    std::cerr << "engine_bench: kakeya-engine not found at " << a.engine << " (use --engine)\n";
    return kakeya::kExitUsage;
  }
  const std::string host = host_name();
  if (a.out.empty()) a.out = "bench/results/engine-" + host + ".json";

  json r;
  r["kind"] = "engine-bench";
  r["schema_version"] = 1;
  r["created_at"] = utc_now_rfc3339();
  r["host"] = host;
  r["note"] = a.note;
  r["load_before"] = read_first_line("/proc/loadavg");
  r["env"] = env_summary();
  r["config"] = {{"shape", a.shape}, {"types", a.types}, {"threads", a.threads}, {"triad_mib", a.triad_mib},
                 {"triad_reps", a.triad_reps}, {"sgemm_reps", a.sgemm_reps}, {"prompt_tokens", a.prompt_tokens},
                 {"gen_tokens", a.gen_tokens}, {"samples", a.samples}, {"rounds", a.rounds}, {"arm_triad_reps", a.arm_triad_reps},
                 {"window_tolerance", a.window_tolerance},
                 {"batched_matmul", a.batched_matmul}, {"engine", a.engine}, {"llama_bench", a.llama_bench},
                 {"llama_batched_bench", a.llama_batched_bench}, {"variant_env", a.variant_envs}};

  std::map<int, double> bw, sg;  // threads -> triad GB/s, model-shaped sgemm GFLOP/s
  // Model-shaped sgemm: the prompt's tokens against ffn_up (n_ff × n_embd) of the shape.
  const auto shape = synth_shape(a.shape);
  const int E = shape.ok() ? static_cast<int>(shape->n_embd) : 2048;
  const int F = shape.ok() ? static_cast<int>(shape->n_ff) : 5632;
  json bws = json::array(), sgs = json::array();
  for (int t : a.threads) {
    json j = triad(t, a.triad_mib, a.triad_reps);
    bw[t] = j["gb_s"]["median"].get<double>();
    std::fprintf(stderr, "triad  threads %d: %.2f GB/s\n", t, bw[t]);
    bws.push_back(j);
  }
  r["bandwidth"] = bws;
  json reads = json::array();
  for (int t : a.threads) {
    json j = read_stream(t, read_stream_mib(a), a.triad_reps);
    std::fprintf(stderr, "read   threads %d: %.2f GB/s (plain %.2f, prefetched %.2f)\n", t, j["gb_s"].value("median", 0.0),
                 j["plain_gb_s"].value("median", 0.0), j["prefetched_gb_s"].value("median", 0.0));
    reads.push_back(j);
  }
  r["read_bandwidth"] = reads;
  for (int t : a.threads) {
    for (int n : a.sgemm_square) sgs.push_back(sgemm(t, n, n, n, a.sgemm_reps, "square"));
    json j = sgemm(t, a.prompt_tokens[0], F, E, a.sgemm_reps, "model:prompt x ffn_up");
    sg[t] = j["gflop_s"]["median"].get<double>();
    sgs.push_back(j);
    sgs.push_back(sgemm(t, a.prompt_tokens[0], E, F, a.sgemm_reps, "model:prompt x ffn_down"));
    for (const auto& s : sgs)
      if (s["threads"] == t)
        std::fprintf(stderr, "sgemm  threads %d %-24s %5d x %5d x %5d: %.1f GFLOP/s\n", t,
                     s["label"].get<std::string>().c_str(), s["m"].get<int>(), s["n"].get<int>(), s["k"].get<int>(),
                     s["gflop_s"]["median"].get<double>());
  }
  r["sgemm"] = sgs;

  // The roofline of the core at each thread count.
  json roof = json::array();
  for (int t : a.threads) {
    for (const roofline::Peak& p : roofline::peaks()) {
      const double g = roofline::measure(p, t, a.roofline_reps);
      std::fprintf(stderr, "peak   threads %d %-9s %-32s %8.1f GOP/s\n", t, p.name.c_str(), p.instruction.c_str(), g);
      roof.push_back({{"threads", t}, {"name", p.name}, {"instruction", p.instruction}, {"gop_s", g}});
    }
  }
  r["roofline"] = roof;

  json models = json::array();
  std::printf("%-6s %3s %6s %10s %8s %8s %8s %10s %8s %10s %8s %8s %8s %8s %10s\n", "type", "thr", "prompt", "prefill/s",
              "vs_llama", "pre_eff", "roof_eff", "dec@L/s", "vs_llama", "decode/s", "vs_llama", "dec_eff", "rd_eff",
              "l_rd_eff", "peakRSS_MB");
  for (const std::string& type : a.types) {
    if (Status st = ensure_model(a, type); !st.ok()) {
      std::cerr << "engine_bench: " << st.error().str() << "\n";
      return 1;
    }
    auto m = LlamaModel::load(model_path(a, type));  // shapes only: nothing is uploaded
    if (!m.ok()) {
      std::cerr << "engine_bench: " << m.error().str() << "\n";
      return 1;
    }
    const ModelCost c = model_cost(m.value());
    const size_t n_prompts = a.prompt_tokens.size();
    json runs = json::array();
    for (int t : a.threads) {
      // Denominators measured beside this type's rounds (just before and just after them): this
      // VM's memory bandwidth drifts by 2x within minutes, so the figures from the start of the run
      // are not comparable with a run several minutes later. The higher of the two is used, which
      // can only lower the efficiency.
      auto beside = [&] {
        return std::pair{triad(t, a.triad_mib, 3)["gb_s"]["median"].get<double>(),
                         sgemm(t, a.prompt_tokens[0], F, E, 3, "beside")["gflop_s"]["median"].get<double>()};
      };
      const auto before = beside();
      // Per prompt length: tok/s of each round, both engines, and the per-round ratios.
      std::vector<std::vector<double>> pre(n_prompts), pre_s(n_prompts), pre_llama(n_prompts), pre_ratio(n_prompts);
      std::vector<double> dec, dec_llama, dec_ratio, dec_read_eff, dec_llama_read_eff;
      // Each --variant-env decode arm: tok/s, over llama.cpp's and over kakeya's of the same round,
      // and its engine report (kernel set, options) from the last round.
      struct VariantFigures {
        std::vector<double> tok_s, ratio_vs_llama, ratio_vs_kakeya;
        json engine;
      };
      const size_t n_variants = a.variant_envs.size();
      std::vector<VariantFigures> var(n_variants);
      // Decode after each prompt length (kakeya's prefill arm; llama-batched-bench's runs).
      std::vector<std::vector<double>> dec_at(n_prompts), dec_at_llama(n_prompts), dec_at_ratio(n_prompts);
      // The same ratios over the rounds whose two arms met one bus window (same_window below).
      std::vector<double> dec_ratio_same;
      std::vector<std::vector<double>> dec_at_ratio_same(n_prompts);
      const bool depth_arm = !a.llama_batched_bench.empty();
      json rounds = json::array();
      ArRun last;
      for (int round = 0; round < a.rounds; ++round) {
        const std::string tag = type + "-t" + std::to_string(t) + "-r" + std::to_string(round);
        // Decode arms first, back to back, then the prefill arms: each engine's decode is timed
        // within seconds of the other's, so a bus window of this VM (minutes long) falls on both,
        // and every other round llama.cpp goes first. kakeya's decode arm has a 1-token prompt,
        // so it decodes at the positions llama-bench's tg decodes at (from an empty cache); its
        // prefill arm decodes after every prompt length too (decode.at_depth), as llama.cpp's does
        // with --llama-batched-bench.
        const bool llama_first = (!a.llama_bench.empty() || depth_arm) && round % 2 == 1;
        json rj = {{"round", round}, {"order", llama_first ? "llama-first" : "kakeya-first"}};
        json arm_triad = json::object(), arm_read = json::object();
        // A short triad just before an arm (arm_triad_reps passes): the bus that arm met; and the
        // read stream, the ceiling of a decode arm's weight reads. The read probes (one more after
        // the round) bracket each pair of arms: see same_window.
        std::vector<double> read_probes;
        auto read_probe = [&] {
          const double v = read_stream(t, read_stream_mib(a), a.arm_triad_reps)["gb_s"]["median"].get<double>();
          read_probes.push_back(v);
          return v;
        };
        auto probe = [&](const char* arm, bool decode) {
          if (a.arm_triad_reps <= 0) return;
          arm_triad[arm] = triad(t, a.triad_mib, a.arm_triad_reps)["gb_s"]["median"];
          const double v = read_probe();
          if (decode) arm_read[arm] = v;
        };
        std::optional<ArRun> kd, kp;
        std::vector<std::optional<ArRun>> kvar(n_variants);
        std::vector<size_t> var_position(n_variants);  // each variant's place among this round's variant arms
        std::optional<LlamaRun> ld, lp;
        std::optional<LlamaDepthRun> ldeep;
        auto kakeya_arm = [&](bool decode) {
          probe(decode ? "kakeya_decode" : "kakeya_prefill", decode);
          const std::vector<int> prompts = decode ? std::vector<int>{kDecodePromptTokens} : a.prompt_tokens;
          auto res = ar_bench(a, model_path(a, type), t, a.samples, tag + (decode ? "-tg" : "-pp"), prompts);
          if (!res.ok()) {
            std::cerr << "engine_bench: " << res.error().str() << "\n";
            return false;
          }
          (decode ? kd : kp) = std::move(*res);
          if (!decode) rj["kakeya"]["load"] = read_first_line("/proc/loadavg");
          return true;
        };
        // llama.cpp's prefill arm: llama-bench's pp<L>, then llama-batched-bench's decode after
        // each prompt length (the counterpart of kakeya's prefill arm, which decodes after them).
        auto llama_arm = [&](bool decode) {
          const bool deep = !decode && depth_arm;
          if (a.llama_bench.empty() && !deep) return true;
          probe(decode ? "llama_decode" : "llama_prefill", decode);
          if (!a.llama_bench.empty()) {
            auto res = decode ? llama_bench(a, model_path(a, type), t, a.samples, tag + "-tg", {}, a.gen_tokens)
                              : llama_bench(a, model_path(a, type), t, a.samples, tag + "-pp", a.prompt_tokens, 0);
            if (!res.ok()) {
              std::cerr << "engine_bench: " << res.error().str() << "\n";
              return false;
            }
            (decode ? ld : lp) = std::move(*res);
          }
          if (deep) {
            auto res = llama_batched_bench(a, model_path(a, type), t, a.samples, tag + "-depth", a.prompt_tokens,
                                           a.gen_tokens);
            if (!res.ok()) {
              std::cerr << "engine_bench: " << res.error().str() << "\n";
              return false;
            }
            ldeep = std::move(*res);
          }
          if (!decode) rj["llama"]["load"] = read_first_line("/proc/loadavg");
          return true;
        };
        // The variants' decode arms run between the two engines' decode arms, whichever goes first,
        // in the order of --variant-env rotated by one every round (round r starts with variant
        // r mod n), so no variant always follows the same arm; they have no probes of their own (the
        // read probes stay five a round).
        auto variant_arms = [&] {
          for (size_t k = 0; k < n_variants; ++k) {
            const size_t v = (static_cast<size_t>(round) + k) % n_variants;
            auto res = ar_bench(a, model_path(a, type), t, a.samples, tag + "-variant" + std::to_string(v) + "-tg",
                                std::vector<int>{kDecodePromptTokens}, a.variant_envs[v]);
            if (!res.ok()) {
              std::cerr << "engine_bench: " << a.variant_envs[v] << ": " << res.error().str() << "\n";
              return false;
            }
            kvar[v] = std::move(*res);
            var_position[v] = k;
          }
          return true;
        };
        for (bool decode : {true, false}) {
          const bool ok = llama_first ? llama_arm(decode) && (!decode || variant_arms()) && kakeya_arm(decode)
                                      : kakeya_arm(decode) && (!decode || variant_arms()) && llama_arm(decode);
          if (!ok) return 1;
        }
        if (a.arm_triad_reps > 0) read_probe();
        // Whether a pair of arms met one bus window: the read probes just before the first arm,
        // between the two, and just after the second (the next pair's first probe, or the one after
        // the round) agree within --window-tolerance (max / min - 1). This VM's two-thread read
        // stream flips between ~35 and ~60 GB/s for minutes at a time, so a round whose arms fall
        // on different sides measures the bus, not the engines. Both engines' pairs are judged by
        // the same probes; the all-rounds figures stay beside these.
        const bool probes_complete = read_probes.size() == 5;
        auto same_window = [&](size_t first) {
          if (!probes_complete) return false;
          const auto [lo, hi] = std::minmax({read_probes[first], read_probes[first + 1], read_probes[first + 2]});
          return lo > 0 && hi / lo - 1.0 <= a.window_tolerance;
        };
        const bool decode_same = same_window(0), depth_same = same_window(2);
        if (probes_complete) {
          rj["read_probes_gb_s"] = read_probes;
          rj["same_window"] = {{"decode", decode_same}, {"prefill", depth_same}};
        }
        for (size_t i = 0; i < n_prompts; ++i) {
          const size_t arm = aggregate_index(kp->report, a.prompt_tokens[i]);
          pre[i].push_back(arm_median(kp->report, "prefill_tok_s", arm));
          pre_s[i].push_back(arm_median(kp->report, "prefill_s", arm));
          rj["kakeya"]["pp" + std::to_string(a.prompt_tokens[i])] = pre[i].back();
        }
        dec.push_back(arm_median(kd->report, "decode_tok_s", aggregate_index(kd->report, kDecodePromptTokens)));
        rj["kakeya"]["tg" + std::to_string(a.gen_tokens)] = dec.back();
        if (n_variants > 0) {
          json rv = json::array();
          for (size_t v = 0; v < n_variants; ++v) {
            const json& report = kvar[v]->report;
            VariantFigures& f = var[v];
            f.tok_s.push_back(arm_median(report, "decode_tok_s", aggregate_index(report, kDecodePromptTokens)));
            if (dec.back() > 0) f.ratio_vs_kakeya.push_back(f.tok_s.back() / dec.back());
            f.engine = report["engine"];
            rv.push_back({{"env", a.variant_envs[v]},
                          {"position", var_position[v]},
                          {"tg" + std::to_string(a.gen_tokens), f.tok_s.back()}});
          }
          rj["variants"] = rv;
        }
        for (size_t i = 0; i < n_prompts; ++i) {
          const int L = a.prompt_tokens[i];
          const std::string key = "tg" + std::to_string(a.gen_tokens) + "_after_pp" + std::to_string(L);
          dec_at[i].push_back(arm_median(kp->report, "decode_tok_s", aggregate_index(kp->report, L)));
          rj["kakeya"][key] = dec_at[i].back();
          if (!ldeep) continue;
          const double v = median_of(ldeep->decode_tok_s[L]);
          dec_at_llama[i].push_back(v);
          if (v > 0) dec_at_ratio[i].push_back(dec_at[i].back() / v);
          if (v > 0 && depth_same) dec_at_ratio_same[i].push_back(dec_at[i].back() / v);
          rj["llama"][key] = v;
        }
        if (ldeep) rj["llama_depth_runs"] = ldeep->rows;
        if (!a.llama_bench.empty()) {
          for (size_t i = 0; i < n_prompts; ++i) {
            const double v = lp->tok_s["pp" + std::to_string(a.prompt_tokens[i])];
            pre_llama[i].push_back(v);
            if (v > 0) pre_ratio[i].push_back(pre[i].back() / v);
          }
          const double v = ld->tok_s["tg" + std::to_string(a.gen_tokens)];
          dec_llama.push_back(v);
          if (v > 0) dec_ratio.push_back(dec.back() / v);
          if (v > 0 && decode_same) dec_ratio_same.push_back(dec.back() / v);
          if (v > 0)
            for (VariantFigures& f : var) f.ratio_vs_llama.push_back(f.tok_s.back() / v);
          for (const auto& [k, v_pp] : lp->tok_s) rj["llama"][k] = v_pp;
          for (const auto& [k, v_tg] : ld->tok_s) rj["llama"][k] = v_tg;
          if (!lp->rows.empty())
            rj["llama_build"] = {{"build_commit", lp->rows[0].value("build_commit", "")},
                                 {"cpu_info", lp->rows[0].value("cpu_info", "")},
                                 {"n_threads", lp->rows[0].value("n_threads", 0)},
                                 {"n_batch", lp->rows[0].value("n_batch", 0)},
                                 {"n_ubatch", lp->rows[0].value("n_ubatch", 0)},
                                 {"type_k", lp->rows[0].value("type_k", "")}};
        }
        if (!arm_triad.empty()) rj["triad_gb_s"] = arm_triad;
        if (!arm_read.empty()) rj["read_gb_s"] = arm_read;
        // Each engine's weight GB/s in its decode arm over the read stream just before that arm.
        auto read_efficiency = [&](const char* arm, double tok_s) {
          const double ceiling = arm_read.value(arm, 0.0);
          return ceiling > 0 && tok_s > 0 ? c.weight_bytes_per_token * tok_s / (ceiling * 1e9) : 0.0;
        };
        if (const double e = read_efficiency("kakeya_decode", dec.back()); e > 0) dec_read_eff.push_back(e);
        if (!dec_llama.empty())
          if (const double e = read_efficiency("llama_decode", dec_llama.back()); e > 0) dec_llama_read_eff.push_back(e);
        rounds.push_back(rj);
        last = std::move(*kp);
      }
      const auto after = beside();
      bw[t] = std::max(before.first, after.first);
      sg[t] = std::max(before.second, after.second);
      const double kv = last.report["samples"][0]["kv_resident_bytes"].get<double>();
      // The child's own VmHWM (ar-bench's peak_rss_bytes); wait4's ru_maxrss of a posix_spawn'd
      // child starts from this process's peak (the vfork'd mm it exec'd from).
      const double rss = last.report.value("peak_rss_bytes", 0.0) > 0
                             ? last.report["peak_rss_bytes"].get<double>()
                             : static_cast<double>(last.child.max_rss_kib) * 1024.0;
      const double dec_eff = c.weight_bytes_per_token * median_of(dec) / (bw[t] * 1e9);
      const double peak = roofline_peak_for(roof, type, t);
      json prefill = json::array();
      for (size_t i = 0; i < n_prompts; ++i) {
        const int L = a.prompt_tokens[i];
        const double gflop_s = prefill_flops(c, L) / median_of(pre_s[i]) / 1e9;
        json p = {{"prompt_tokens", L},
                  {"tok_s", stats_json(pre[i])},
                  {"gflop_s", gflop_s},
                  {"efficiency_vs_sgemm", gflop_s / sg[t]},
                  {"roofline_gop_s", peak},
                  {"efficiency_vs_roofline", peak > 0 ? gflop_s / peak : 0.0}};
        if (!a.llama_bench.empty()) {
          p["llama_tok_s"] = stats_json(pre_llama[i]);
          p["ratio_vs_llama"] = stats_json(pre_ratio[i]);
        }
        prefill.push_back(p);
        std::printf("%-6s %3d %6d %10.2f %8.2f %8.2f %8.2f %10.2f %8.2f", type.c_str(), t, L, median_of(pre[i]),
                    pre_ratio[i].empty() ? 0.0 : median_of(pre_ratio[i]), gflop_s / sg[t], peak > 0 ? gflop_s / peak : 0.0,
                    median_of(dec_at[i]), dec_at_ratio[i].empty() ? 0.0 : median_of(dec_at_ratio[i]));
        if (i == 0) {
          std::printf(" %10.2f %8.2f %8.2f %8.2f %8.2f %10.0f\n", median_of(dec),
                      dec_ratio.empty() ? 0.0 : median_of(dec_ratio), dec_eff, median_of(dec_read_eff), median_of(dec_llama_read_eff), rss / 1e6);
        } else {
          std::printf("\n");
        }
      }
      if (n_prompts > 0 && (!dec_ratio_same.empty() || !dec_at_ratio_same[0].empty()))
        std::printf("%-6s %3d same-window rounds: decode %zu of %zu, ratio %.2f; after pp%d %zu of %zu, ratio %.2f\n",
                    type.c_str(), t, dec_ratio_same.size(), dec_ratio.size(),
                    dec_ratio_same.empty() ? 0.0 : median_of(dec_ratio_same), a.prompt_tokens[0],
                    dec_at_ratio_same[0].size(), dec_at_ratio[0].size(),
                    dec_at_ratio_same[0].empty() ? 0.0 : median_of(dec_at_ratio_same[0]));
      std::fflush(stdout);
      json decode = {{"after_prompt_tokens", kDecodePromptTokens},
                     {"tok_s", stats_json(dec)},
                     {"after_longer_prompt", {{"after_prompt_tokens", a.prompt_tokens[0]}, {"tok_s", stats_json(dec_at[0])}}},
                     {"weight_gb_s", c.weight_bytes_per_token * median_of(dec) / 1e9},
                     {"efficiency", dec_eff}};
      if (!dec_read_eff.empty()) decode["read_efficiency"] = stats_json(dec_read_eff);
      json at_depth = json::array();
      for (size_t i = 0; i < n_prompts; ++i) {
        json d = {{"after_prompt_tokens", a.prompt_tokens[i]}, {"tok_s", stats_json(dec_at[i])}};
        if (depth_arm) {
          d["llama_tok_s"] = stats_json(dec_at_llama[i]);
          d["ratio_vs_llama"] = stats_json(dec_at_ratio[i]);
          d["same_window_ratio_vs_llama"] = stats_json(dec_at_ratio_same[i]);
        }
        at_depth.push_back(d);
      }
      decode["at_depth"] = at_depth;
      if (n_variants > 0) {
        json variants = json::array();
        for (size_t v = 0; v < n_variants; ++v) {
          const VariantFigures& f = var[v];
          json vj = {{"env", a.variant_envs[v]},
                     {"engine", f.engine},
                     {"tok_s", stats_json(f.tok_s)},
                     {"ratio_vs_kakeya", stats_json(f.ratio_vs_kakeya)}};
          if (!a.llama_bench.empty()) vj["ratio_vs_llama"] = stats_json(f.ratio_vs_llama);
          variants.push_back(vj);
          std::printf("%-6s %3d variant %s: decode %.2f tok/s, vs_llama %.2f, vs_kakeya %.2f (medians of rounds)\n",
                      type.c_str(), t, a.variant_envs[v].c_str(), median_of(f.tok_s),
                      f.ratio_vs_llama.empty() ? 0.0 : median_of(f.ratio_vs_llama), median_of(f.ratio_vs_kakeya));
        }
        decode["variants"] = variants;
      }
      if (!a.llama_bench.empty()) {
        decode["llama_tok_s"] = stats_json(dec_llama);
        decode["llama_weight_gb_s"] = c.weight_bytes_per_token * median_of(dec_llama) / 1e9;
        decode["ratio_vs_llama"] = stats_json(dec_ratio);
        decode["same_window_ratio_vs_llama"] = stats_json(dec_ratio_same);
        if (!dec_llama_read_eff.empty()) decode["llama_read_efficiency"] = stats_json(dec_llama_read_eff);
      }
      runs.push_back({{"threads", t},
                      {"prefill", prefill},
                      {"decode", decode},
                      {"rounds", rounds},
                      {"peak_rss_bytes", rss},
                      {"kv_resident_bytes", kv},
                      {"rss_over_file_plus_kv", rss / (c.file_bytes + kv)},
                      {"triad_gb_s_beside", {{"before", before.first}, {"after", after.first}, {"used", bw[t]}}},
                      {"sgemm_gflop_s_beside", {{"before", before.second}, {"after", after.second}, {"used", sg[t]}}},
                      {"child_wall_s", last.child.wall_s},
                      {"weight_layout", last.report["config"].value("weight_layout", "row-major")},
                      {"batched_matmul", last.report["config"].value("batched_matmul", "")},
                      {"packed_matrices", last.report["engine"]["weights"].value("packed_matrices", 0)},
                      {"engine", last.report["engine"]}});
    }
    json prefill_flops_by_prompt = json::object();
    for (int L : a.prompt_tokens) prefill_flops_by_prompt[std::to_string(L)] = prefill_flops(c, L);
    models.push_back({{"type", type},
                      {"path", model_path(a, type)},
                      {"sha256_note", "synthetic, deterministic (seed 1); sha256 in each ar-bench report"},
                      {"file_bytes", c.file_bytes},
                      {"weight_bytes_per_token", c.weight_bytes_per_token},
                      {"prefill_flops", prefill_flops_by_prompt},
                      {"runs", runs}});
  }
  r["models"] = models;

  if (a.oversubscribed) {
    if (Status st = ensure_model(a, a.oversub_type); !st.ok()) {
      std::cerr << "engine_bench: " << st.error().str() << "\n";
      return 1;
    }
    const pid_t spinner = spawn_spinner();
    // Rounds alternate 2 and 1 threads, so drift in the machine (other tenants, the spinner's
    // placement) falls on both arms; the figure is the median of the per-round ratios.
    json arms = json::array();
    std::map<int, std::vector<double>> dec;
    std::vector<double> ratios;
    for (int round = 0; round < a.oversub_rounds; ++round) {
      for (int t : {2, 1}) {
        auto ar = ar_bench(a, model_path(a, a.oversub_type), t, a.samples,
                           "oversub-r" + std::to_string(round) + "-t" + std::to_string(t), {a.prompt_tokens[0]});
        if (!ar.ok()) {
          std::cerr << "engine_bench: " << ar.error().str() << "\n";
          break;
        }
        dec[t].push_back(arm_median(ar->report, "decode_tok_s"));
        arms.push_back({{"round", round}, {"threads", t}, {"decode_tok_s", ar->report["aggregates"][0]["decode_tok_s"]}});
      }
      if (dec[1].size() == dec[2].size() && !dec[1].empty() && dec[1].back() > 0)
        ratios.push_back(dec[2].back() / dec[1].back());
    }
    if (spinner > 0) {
      kill(spinner, SIGKILL);
      waitpid(spinner, nullptr, 0);
    }
    r["oversubscribed"] = {{"busy_processes", 1},
                           {"type", a.oversub_type},
                           {"cpus_online", std::thread::hardware_concurrency()},
                           {"rounds", a.oversub_rounds},
                           {"arms", arms},
                           {"decode_tok_s_median_2t", median_of(dec[2])},
                           {"decode_tok_s_median_1t", median_of(dec[1])},
                           {"decode_2t_over_1t_per_round", ratios},
                           {"decode_2t_over_1t", median_of(ratios)}};
    std::printf("oversubscribed (1 spinning process, %s, %d rounds): decode 2 threads %.2f tok/s, 1 thread %.2f "
                "tok/s (medians), 2t/1t %.2f (median of rounds)\n",
                a.oversub_type.c_str(), a.oversub_rounds, median_of(dec[2]), median_of(dec[1]), median_of(ratios));
  }
  r["load_after"] = read_first_line("/proc/loadavg");
  if (!a.keep_models) fs::remove_all(a.cache_dir);

  std::error_code ec;
  fs::create_directories(fs::path(a.out).parent_path(), ec);
  std::ofstream(a.out) << r.dump(2) << "\n";
  std::cerr << "engine_bench: wrote " << a.out << "\n";
  return 0;
}

// --pool: reads the result files, pools their rounds (bench/pool_rounds.h), prints the table on stderr and
// writes the JSON to `out` (stdout when empty). Runs nothing.
int run_pool(const std::vector<std::string>& paths, const std::string& out, double confidence,
             const kakeya::bench::PoolGoals& goals) {
  std::vector<kakeya::bench::PoolInput> inputs;
  for (const auto& p : paths) {
    std::ifstream in(p);
    const json doc =
        in.is_open() ? json::parse(in, nullptr, /*allow_exceptions=*/false) : json(json::value_t::discarded);
    if (doc.is_discarded()) {
      std::cerr << "engine_bench: " << p << " is not readable JSON\n";
      return 1;
    }
    inputs.push_back({p, doc});
  }
  auto pooled = kakeya::bench::pool_rounds(inputs, confidence, goals);
  if (!pooled) {
    std::cerr << "engine_bench: --pool: " << pooled.error().message << "\n";
    return 1;
  }
  pooled->emplace("created_at", utc_now_rfc3339());
  std::cerr << kakeya::bench::pool_table(*pooled);
  if (out.empty()) {
    std::cout << pooled->dump(2) << "\n";
    return 0;
  }
  std::error_code ec;
  fs::create_directories(fs::path(out).parent_path(), ec);
  std::ofstream(out) << pooled->dump(2) << "\n";
  if (!fs::exists(out) || fs::file_size(out, ec) == 0) {
    std::cerr << "engine_bench: could not write " << out << "\n";
    return 1;
  }
  std::cerr << "engine_bench: wrote " << out << "\n";
  return 0;
}

}  // namespace
}  // namespace kakeya::engine

int main(int argc, char** argv) {
  CLI::App app{
      "kakeya_engine_bench — bandwidth, sgemm and ar-bench efficiency of the CPU engine (JSON; never asserts)",
      "kakeya_engine_bench"};
  app.footer(
      "Exit codes: 0 the JSON was written; 1 a run failed (a model could not be made or loaded, a child "
      "exited nonzero or its output was unreadable, or with --pool a file that is not readable JSON or cannot be "
      "pooled: stderr names it); 64 usage: a command line that cannot be "
      "parsed or a value refused before anything ran (kakeya-engine not found, a --variant-env given twice).");
  kakeya::engine::Args a;
  app.add_option("--out", a.out, "JSON output (default bench/results/engine-<host>.json)");
  app.add_option("--cache-dir", a.cache_dir, "Where synthetic models are written and reused")->capture_default_str();
  app.add_option("--engine", a.engine, "kakeya-engine binary (default: ../kakeya-engine next to this binary)");
  app.add_option("--shape", a.shape, "Synth shape of the models")->capture_default_str();
  app.add_option("--types", a.types, "Model tensor types")->delimiter(',')->capture_default_str();
  app.add_option("--threads", a.threads, "Thread counts")->delimiter(',')->capture_default_str();
  app.add_option("--triad-mib", a.triad_mib, "MiB per triad array")->capture_default_str()->check(CLI::Range(1, 8192));
  app.add_option("--triad-reps", a.triad_reps, "Triad repetitions")->capture_default_str()->check(CLI::Range(1, 1000));
  app.add_option("--sgemm-square", a.sgemm_square, "Square sgemm sizes")->delimiter(',')->capture_default_str();
  app.add_option("--sgemm-reps", a.sgemm_reps, "sgemm repetitions")->capture_default_str()->check(CLI::Range(1, 1000));
  app.add_option("--prompt-tokens", a.prompt_tokens, "Prompt lengths (ar-bench and llama-bench pp<L>); the first one "
                 "also shapes the model-shaped sgemm and precedes the measured decode")
      ->delimiter(',')
      ->capture_default_str()
      ->check(CLI::Range(1, 4096));
  app.add_option("--rounds", a.rounds, "Rounds per type and thread count (with --llama-bench: both engines' decode, then both "
                 "engines' prefill; llama.cpp first in every other round)")
      ->capture_default_str()
      ->check(CLI::Range(1, 50));
  app.add_option("--batched-matmul", a.batched_matmul, "ar-bench --batched-matmul: auto, sgemm or quantized")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "sgemm", "quantized"}));
  app.add_option("--llama-bench", a.llama_bench,
                 "llama.cpp's llama-bench binary: each round also runs it on the same files and thread counts, and "
                 "the JSON records the ratios")
      ->check(CLI::ExistingFile);
  app.add_option("--llama-batched-bench", a.llama_batched_bench,
                 "llama.cpp's llama-batched-bench binary: each round's llama.cpp prefill arm also decodes "
                 "--gen-tokens after every --prompt-tokens length with it, and the JSON records decode at those "
                 "depths against kakeya's (decode.at_depth)")
      ->check(CLI::ExistingFile);
  app.add_option("--variant-env", a.variant_envs,
                 "KEY=VALUE: each round also runs kakeya's decode arm with that environment variable set (e.g. "
                 "KAKEYA_DENSE16=two-streams+vdpbf16ps), between the two engines' decode arms; the JSON records its "
                 "ratios to llama.cpp and to kakeya as it is (decode.variants[]). Give it again for more arms (one "
                 "per KEY=VALUE, their order rotated every round)")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->expected(1)
      ->check([](const std::string& v) {
        const size_t eq = v.find('=');
        if (eq == 0 || eq == std::string::npos) return std::string("expected KEY=VALUE, got \"") + v + "\"";
        for (size_t i = 0; i < eq; ++i)
          if (!(std::isupper(static_cast<unsigned char>(v[i])) || std::isdigit(static_cast<unsigned char>(v[i])) ||
                v[i] == '_'))
            return std::string("KEY of \"") + v + "\" is not [A-Z0-9_]+";
        return std::string();
      });
  app.add_option("--arm-triad-reps", a.arm_triad_reps,
                 "Triad and read-stream passes just before each arm of a round, and read-stream passes after it, "
                 "recorded as rounds[].triad_gb_s, read_gb_s and read_probes_gb_s (0: none, and no same-window "
                 "figures)")
      ->capture_default_str()
      ->check(CLI::Range(0, 100));
  app.add_option("--window-tolerance", a.window_tolerance,
                 "Rounds whose read probes around a pair of arms agree within this fraction (max / min - 1) "
                 "count as one bus window: decode.same_window_ratio_vs_llama and at_depth[].same_window_ratio_vs_llama")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 10.0));
  app.add_option("--roofline-reps", a.roofline_reps, "Repetitions of each roofline peak")
      ->capture_default_str()
      ->check(CLI::Range(1, 100));
  app.add_option("--gen-tokens", a.gen_tokens, "ar-bench decode tokens per sample")->capture_default_str()->check(CLI::Range(1, 4096));
  app.add_option("--samples", a.samples, "ar-bench samples")->capture_default_str()->check(CLI::Range(1, 100));
  app.add_option("--oversubscribed", a.oversubscribed, "Measure decode next to a spinning process")->capture_default_str();
  app.add_option("--oversub-type", a.oversub_type, "Model type for the oversubscribed case")->capture_default_str();
  app.add_option("--oversub-rounds", a.oversub_rounds, "Alternating 2-thread/1-thread rounds next to the spinner")
      ->capture_default_str()
      ->check(CLI::Range(1, 20));
  app.add_option("--note", a.note, "Free text stored in the JSON (machine, load, ...)");
  app.add_option("--keep-models", a.keep_models, "Keep the synthetic models in --cache-dir")->capture_default_str();
  std::vector<std::string> pool_files;
  double confidence = 0.9;
  app.add_option("--pool", pool_files,
                 "Run nothing: pool the rounds of these result files (one machine class and shape) into per-cell "
                 "medians of kakeya / llama.cpp with the sign-test interval for the median and the rounds that reached "
                 "the goal (bench/README.md); the table goes to stderr, the JSON to --out or stdout")
      ->expected(1, 1000)
      ->check(CLI::ExistingFile);
  app.add_option("--confidence", confidence, "With --pool: coverage of the median's interval")
      ->capture_default_str()
      ->check(CLI::Range(0.5, 0.999));
  kakeya::bench::PoolGoals goals;
  app.add_option("--goal-decode", goals.decode, "With --pool: the decode goal (kakeya / llama.cpp) counted against")
      ->capture_default_str()
      ->check(CLI::Range(0.1, 10.0));
  app.add_option("--goal-prefill", goals.prefill, "With --pool: the prefill goal (kakeya / llama.cpp) counted against")
      ->capture_default_str()
      ->check(CLI::Range(0.1, 10.0));
  if (auto code = kakeya::parse_command_line(app, argc, argv)) return *code;
  if (!pool_files.empty()) return kakeya::engine::run_pool(pool_files, a.out, confidence, goals);
  for (size_t i = 0; i < a.variant_envs.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (a.variant_envs[i] == a.variant_envs[j]) {
        std::cerr << "engine_bench: --variant-env " << a.variant_envs[i] << " given twice\n";
        return kakeya::kExitUsage;
      }
  return kakeya::engine::run(a);
}
