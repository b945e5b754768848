// kakeya_gpu_bench: what a Vulkan device can do and how close the engine comes to it (issue 16).
//
//   1. read bandwidth: stream_read.comp over a device buffer (VulkanBackend::stream_read), timed
//      with timestamp queries; GB/s = 1e9 bytes/s, median of --repeats;
//   2. matmul peak: the engine's own matmul op on an F16 weight [n][n] and --matmul-tokens tokens
//      (the tiled shader from kExactBlockTokens tokens on), timed the same way; GFLOP/s =
//      2·tokens·n² / s (the op's activation conversion included), median of --repeats;
//   3. per GGUF file (--model FILE, or --synth SHAPE:TYPE made with `kakeya-engine synth`):
//      `kakeya-engine ar-bench --backend vulkan:N --json` (argv, no shell) for --rounds rounds,
//      alternating with llama.cpp's `llama-bench -ngl 99 -o json` when --llama-bench is given;
//      decode/prefill tok/s (medians over rounds of ar-bench's medians), device memory peak
//      (engine.memory.peak_held_bytes of the report), decode efficiency = weight bytes read per
//      decoded token × decode tok/s ÷ measured bandwidth, ratios against llama-bench; and the
//      time split per op kind of one decode forward (profiling mode, vk_profile.h), in ms.
// JSON on stdout or --out FILE. Never asserted on time: this is a bench, not a test. Numbers
// measured on lavapipe (a CPU) are not GPU figures.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "bridge/cli_parse.h"
#include "engine/backend.h"
#include "engine/cpu/quant.h"
#include "engine/llama.h"
#include "engine/model.h"
#include "engine/presets/report.h"
#include "engine/vulkan/vk_backend.h"
#include "engine/vulkan/vk_matmul_path.h"
#include "runner/process.h"

namespace kakeya::engine {
namespace {

struct Args {
  int device = -1;  // -1: the default device (the first discrete GPU, else device 0)
  std::vector<std::string> models;
  std::vector<std::string> synth;  // SHAPE:TYPE
  std::string work_dir = "gpu-bench-models";
  std::string engine;              // kakeya-engine; default: beside this binary's build dir
  size_t bandwidth_mib = 1024;
  int64_t matmul_n = 4096;
  int64_t matmul_tokens = 512;
  int repeats = 5;
  int rounds = 3;
  int prompt = 512;
  int gen = 128;
  int samples = 5;
  std::vector<std::string> llama_benches;  // llama.cpp llama-bench binaries (e.g. its Vulkan and CUDA builds)
  std::string out;
};

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "kakeya_gpu_bench: %s\n", what.c_str());
  std::exit(1);
}

template <typename T>
T must(Result<T> r, const std::string& what) {
  if (!r.ok()) die(what + ": " + r.error().str());
  return std::move(r).value();
}

// Device milliseconds of `op` for one call of `run`, median over `repeats` (after one warm-up).
template <typename F>
std::vector<double> time_op(VulkanBackend& b, const char* op, int repeats, F run) {
  run();
  b.sync();
  std::vector<double> ms;
  for (int i = 0; i < repeats; ++i) {
    b.clear_profile();
    run();
    b.sync();
    const auto prof = b.op_profile();
    const auto it = prof.find(op);
    if (it == prof.end() || it->second.ms <= 0) die(std::string("no device time recorded for ") + op);
    ms.push_back(it->second.ms);
  }
  return ms;
}

nlohmann::json stats(const std::vector<double>& v, const std::string& unit) {
  nlohmann::json j = to_json(summarize(v));
  j["unit"] = unit;
  return j;
}

nlohmann::json measure_bandwidth(VulkanBackend& b, const Args& a, double& median_gb_s) {
  const size_t bytes = a.bandwidth_mib << 20;
  auto buf = must(b.alloc(bytes), "bandwidth buffer");
  const Tensor t{buf.get(), 0, GgmlType::F32, static_cast<int64_t>(bytes / 4), 1};
  b.write(t, std::vector<float>(bytes / 4, 1.0f));
  std::vector<double> gb_s;
  for (double ms : time_op(b, "stream_read", a.repeats, [&] { b.stream_read(t); }))
    gb_s.push_back(static_cast<double>(bytes) / (ms * 1e-3) / 1e9);
  median_gb_s = summarize(gb_s).median;
  return {{"shader", "stream_read.comp"}, {"bytes", bytes}, {"repeats", a.repeats}, {"read_gb_s", stats(gb_s, "GB/s")}};
}

nlohmann::json measure_matmul(VulkanBackend& b, const Args& a) {
  const int64_t n = a.matmul_n, tokens = a.matmul_tokens;
  std::vector<uint16_t> w(static_cast<size_t>(n * n));
  for (size_t i = 0; i < w.size(); ++i) w[i] = fp32_to_fp16(static_cast<float>(static_cast<int>(i % 17) - 8) / 64.0f);
  const WeightMatrix wm{"bench.matmul", GgmlType::F16, reinterpret_cast<const uint8_t*>(w.data()), n, n,
                        static_cast<size_t>(n) * sizeof(uint16_t)};
  UploadedWeight up = must(b.upload_weight(wm, WeightUse::kMatmul, nullptr), "matmul weight");
  auto xb = must(b.alloc(static_cast<size_t>(tokens * n) * sizeof(float)), "matmul input");
  auto yb = must(b.alloc(static_cast<size_t>(tokens * n) * sizeof(float)), "matmul output");
  const Tensor x{xb.get(), 0, GgmlType::F32, n, tokens}, y{yb.get(), 0, GgmlType::F32, n, tokens};
  b.write(x, std::vector<float>(static_cast<size_t>(tokens * n), 0.5f));
  const MatmulOut outs[] = {{&up.tensor, y}};
  std::vector<double> gflop_s;
  for (double ms : time_op(b, "matmul", a.repeats, [&] { b.matmul(outs, x); }))
    gflop_s.push_back(2.0 * static_cast<double>(tokens) * static_cast<double>(n * n) / (ms * 1e-3) / 1e9);
  return {{"weight_type", "f16"},
          {"n_in", n},
          {"n_out", n},
          {"tokens", tokens},
          {"shader", matmul_path_name(choose_matmul_path(b.caps(), static_cast<size_t>(tokens)))},
          {"repeats", a.repeats},
          {"gflop_s", stats(gflop_s, "GFLOP/s")}};
}

// Bytes a decode step reads from the weights: every matmul weight and norm vector once, one row
// of the token embeddings (the output head is read whole, tied or not).
size_t decode_weight_bytes(const LlamaModel& model) {
  const LlamaWeights& W = model.weights();
  const auto whole = [](const WeightMatrix& m) { return m.present() ? static_cast<size_t>(m.n_out) * m.row_bytes : 0; };
  size_t total = W.token_embd.row_bytes + whole(W.output) + whole(W.output_norm);
  for (const LlamaLayerWeights& L : W.layers)
    for (const WeightMatrix* m : {&L.attn_norm, &L.wq, &L.wk, &L.wv, &L.wo, &L.ffn_norm, &L.w_gate, &L.w_up, &L.w_down})
      total += whole(*m);
  return total;
}

// Runs argv (no shell) and returns its stdout. Errors: the spawn's, a non-zero exit (with stderr's tail).
Result<std::string> run_program(const std::vector<std::string>& argv) {
  runner::ProcessSpec spec;
  spec.argv = argv;
  spec.env = runner::current_environment();
  std::string out, err;
  KAKEYA_ASSIGN_OR_RETURN(auto proc, runner::Process::spawn(spec, [&](int stream, std::string_view d) {
    (stream == 1 ? out : err).append(d);
  }));
  const runner::ProcessResult r = proc->wait();
  if (!r.started) return make_error("child_failed", r.spawn_error);
  if (r.exit_code != 0) {
    return make_error("child_failed", argv[0] + " exited with " + std::to_string(r.exit_code) + ": " +
                                          err.substr(err.size() > 2000 ? err.size() - 2000 : 0));
  }
  return out;
}

Result<nlohmann::json> parse_json(const std::string& text, const std::string& what) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded()) return make_error("parse_error", what + " did not print JSON: " + text.substr(0, 200));
  return j;
}

// One ar-bench run: {prefill_tok_s, decode_tok_s, device_memory_peak_bytes, host_peak_rss_bytes}.
Result<nlohmann::json> run_ar_bench(const Args& a, const std::string& engine, const std::string& file) {
  const std::string dev = a.device < 0 ? "vulkan" : "vulkan:" + std::to_string(a.device);
  KAKEYA_ASSIGN_OR_RETURN(const std::string out,
                          run_program({engine, "ar-bench", "-m", file, "--backend", dev, "-p", std::to_string(a.prompt),
                                       "-n", std::to_string(a.gen), "-r", std::to_string(a.samples), "--json"}));
  KAKEYA_ASSIGN_OR_RETURN(const nlohmann::json r, parse_json(out, "ar-bench"));
  const nlohmann::json& agg = r.at("aggregates").at(0);
  return nlohmann::json{{"prefill_tok_s", agg.at("prefill_tok_s").at("median")},
                        {"decode_tok_s", agg.at("decode_tok_s").at("median")},
                        {"device_memory_peak_bytes", r.at("engine").at("memory").value("peak_held_bytes", int64_t{0})},
                        {"host_peak_rss_bytes", r.value("peak_rss_bytes", int64_t{0})},
                        {"backend", r.at("engine").at("backend")},
                        {"device", r.at("engine").at("device")}};
}

// One llama-bench run: {prefill_tok_s (pp), decode_tok_s (tg), build_commit, backends, gpu_info}.
Result<nlohmann::json> run_llama_bench(const Args& a, const std::string& binary, const std::string& file) {
  KAKEYA_ASSIGN_OR_RETURN(const std::string out,
                          run_program({binary, "-m", file, "-ngl", "99", "-p", std::to_string(a.prompt), "-n",
                                       std::to_string(a.gen), "-o", "json"}));
  KAKEYA_ASSIGN_OR_RETURN(const nlohmann::json rows, parse_json(out, "llama-bench"));
  if (!rows.is_array()) return make_error("parse_error", "llama-bench: expected a JSON array of results");
  nlohmann::json r = nlohmann::json::object();
  for (const nlohmann::json& row : rows) {
    const int64_t np = row.value("n_prompt", int64_t{0}), ng = row.value("n_gen", int64_t{0});
    if (np > 0 && ng == 0) r["prefill_tok_s"] = row.at("avg_ts");
    if (ng > 0 && np == 0) r["decode_tok_s"] = row.at("avg_ts");
    r["build_commit"] = row.value("build_commit", "");
    r["backends"] = row.value("backends", "");
    r["gpu_info"] = row.value("gpu_info", "");
  }
  if (!r.contains("prefill_tok_s") || !r.contains("decode_tok_s")) {
    return make_error("parse_error", "llama-bench: no pp" + std::to_string(a.prompt) + " / tg" +
                                         std::to_string(a.gen) + " rows in its output");
  }
  return r;
}

// The time split of one decode forward (after a prompt of a.prompt tokens) per op kind.
nlohmann::json profile_decode(VulkanBackend& b, const LlamaModel& model, const Args& a) {
  const size_t n_prompt = static_cast<size_t>(a.prompt);
  auto ctx = must(LlamaContext::create(model, b, ContextOptions{n_prompt + 1, 512}), "profile context");
  std::vector<int32_t> prompt(n_prompt);
  for (size_t i = 0; i < n_prompt; ++i) prompt[i] = static_cast<int32_t>(1 + i % static_cast<size_t>(model.hparams().n_vocab - 1));
  const std::vector<int32_t> next = must(ctx->eval_argmax(prompt), "profile prompt");
  if (Status st = b.set_profiling(true); !st.ok()) die(st.error().str());
  b.clear_profile();
  (void)must(ctx->eval_argmax(next), "profiled decode step");
  const auto prof = b.op_profile();
  (void)b.set_profiling(false);
  nlohmann::json ops = nlohmann::json::object();
  double total = 0;
  for (const auto& [op, t] : prof) {
    ops[op] = {{"ms", t.ms}, {"count", t.count}};
    total += t.ms;
  }
  return {{"forward", "decode: 1 token after " + std::to_string(n_prompt) + " prompt tokens, argmax read back"},
          {"unit", "ms"},
          {"total_ms", total},
          {"ops", ops}};
}

// The model files: --model as given, --synth SHAPE:TYPE written by `kakeya-engine synth` into
// --work-dir (kept there and reused: a 7B file takes minutes to write).
std::vector<std::pair<std::string, std::string>> model_files(const Args& a, const std::string& engine) {
  std::vector<std::pair<std::string, std::string>> files;
  for (const std::string& m : a.models) files.push_back({std::filesystem::path(m).filename().string(), m});
  for (const std::string& s : a.synth) {
    const size_t colon = s.find(':');
    if (colon == std::string::npos) die("--synth " + s + ": expected SHAPE:TYPE, e.g. llama-7b:q4_0");
    const std::string shape = s.substr(0, colon), type = s.substr(colon + 1);
    std::filesystem::create_directories(a.work_dir);
    const std::string path = (std::filesystem::path(a.work_dir) / ("synth-" + shape + "-" + type + ".gguf")).string();
    if (!std::filesystem::exists(path)) {
      (void)must(run_program({engine, "synth", "--shape", shape, "--type", type, "--out", path}), "synth " + s);
    }
    files.push_back({"synth " + s, path});
  }
  return files;
}

int run(const Args& a) {
  std::string engine = a.engine;
  if (engine.empty()) engine = (runner::self_exe_dir().parent_path() / "kakeya-engine").string();
  engine = std::filesystem::absolute(engine).string();
  BackendOptions options;
  std::unique_ptr<Backend> opened = must(open_vulkan_backend(a.device, options), "vulkan backend");
  auto& b = static_cast<VulkanBackend&>(*opened);
  if (Status st = b.set_profiling(true); !st.ok()) die(st.error().str());

  double gb_s = 0;
  nlohmann::json report = {{"kind", "gpu-bench"},
                           {"schema_version", 1},
                           {"created_at", utc_now_rfc3339()},
                           {"device", to_json(b.caps())},
                           {"backend", to_json(b.info())}};
  report["bandwidth"] = measure_bandwidth(b, a, gb_s);
  report["matmul"] = measure_matmul(b, a);
  (void)b.set_profiling(false);
  report["config"] = {{"prompt_tokens", a.prompt}, {"gen_tokens", a.gen},       {"samples", a.samples},
                      {"rounds", a.rounds},        {"repeats", a.repeats},      {"engine", engine},
                      {"llama_bench", a.llama_benches}};

  nlohmann::json models = nlohmann::json::array();
  for (const auto& [label, file] : model_files(a, engine)) {
    std::fprintf(stderr, "kakeya_gpu_bench: %s\n", label.c_str());
    std::vector<double> ours_pp, ours_tg, mem;
    const size_t nb = a.llama_benches.size();
    std::vector<std::vector<double>> theirs_pp(nb), theirs_tg(nb);
    nlohmann::json last;
    std::vector<nlohmann::json> llama_last(nb);
    for (int r = 0; r < a.rounds; ++r) {  // alternately: ours, then each llama-bench, per round
      last = must(run_ar_bench(a, engine, file), "ar-bench " + file);
      ours_pp.push_back(last["prefill_tok_s"].get<double>());
      ours_tg.push_back(last["decode_tok_s"].get<double>());
      mem.push_back(last["device_memory_peak_bytes"].get<double>());
      for (size_t i = 0; i < nb; ++i) {
        llama_last[i] = must(run_llama_bench(a, a.llama_benches[i], file), "llama-bench " + file);
        theirs_pp[i].push_back(llama_last[i]["prefill_tok_s"].get<double>());
        theirs_tg[i].push_back(llama_last[i]["decode_tok_s"].get<double>());
      }
    }
    auto model = must(LlamaModel::load(file), "load " + file);
    const size_t weight_bytes = decode_weight_bytes(model);
    const double tg = summarize(ours_tg).median, pp = summarize(ours_pp).median;
    nlohmann::json m = {{"label", label},
                        {"file", file},
                        {"weight_bytes_per_token", weight_bytes},
                        {"prefill_tok_s", stats(ours_pp, "tokens/s")},
                        {"decode_tok_s", stats(ours_tg, "tokens/s")},
                        {"device_memory_peak_bytes", static_cast<uint64_t>(summarize(mem).max)},
                        {"host_peak_rss_bytes", last["host_peak_rss_bytes"]},
                        {"backend_used", last["backend"]},
                        {"decode_efficiency", static_cast<double>(weight_bytes) * tg / (gb_s * 1e9)},
                        {"profile", profile_decode(b, model, a)}};
    m["llama_bench"] = nlohmann::json::array();
    for (size_t i = 0; i < nb; ++i) {
      const double lpp = summarize(theirs_pp[i]).median, ltg = summarize(theirs_tg[i]).median;
      m["llama_bench"].push_back({{"binary", a.llama_benches[i]},
                                  {"prefill_tok_s", stats(theirs_pp[i], "tokens/s")},
                                  {"decode_tok_s", stats(theirs_tg[i], "tokens/s")},
                                  {"build_commit", llama_last[i]["build_commit"]},
                                  {"backends", llama_last[i]["backends"]},
                                  {"gpu_info", llama_last[i]["gpu_info"]},
                                  {"flags", "-ngl 99 -p " + std::to_string(a.prompt) + " -n " + std::to_string(a.gen)},
                                  {"prefill_ratio", pp / lpp},
                                  {"decode_ratio", tg / ltg}});
    }
    models.push_back(m);
  }
  report["models"] = models;
  report["note"] = "timestamps on the device; medians; numbers from a CPU implementation of Vulkan (lavapipe) "
                   "are not GPU figures";

  const std::string text = report.dump(2) + "\n";
  if (a.out.empty()) {
    std::fputs(text.c_str(), stdout);
  } else {
    std::ofstream f(a.out);
    f << text;
    if (!f) die("cannot write " + a.out);
  }
  return 0;
}

}  // namespace
}  // namespace kakeya::engine

int main(int argc, char** argv) {
  kakeya::engine::Args a;
  CLI::App app{"Vulkan device bandwidth, matmul peak, and the engine's decode efficiency against them (JSON)",
               "kakeya_gpu_bench"};
  app.footer(
      "Exit codes: 0 the JSON was written; 1 a step failed (no Vulkan device, a probe, a child run or --out: "
      "stderr names it); 64 usage: a command line that cannot be parsed.");
  app.add_option("--device", a.device, "Vulkan device index (default: the first discrete GPU, else 0)");
  app.add_option("--model", a.models, "GGUF file to run ar-bench on (repeatable)")->check(CLI::ExistingFile);
  app.add_option("--synth", a.synth, "SHAPE:TYPE made with kakeya-engine synth, e.g. llama-7b:q4_0 (repeatable)");
  app.add_option("--work-dir", a.work_dir, "Where --synth files are written and reused")->capture_default_str();
  app.add_option("--engine", a.engine, "kakeya-engine binary (default: the build's)");
  app.add_option("--bandwidth-mib", a.bandwidth_mib, "Buffer read by the bandwidth probe, MiB")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 16));
  app.add_option("--matmul-n", a.matmul_n, "Matmul weight size n (an F16 [n][n])")
      ->capture_default_str()
      ->check(CLI::Range(32, 65536));
  app.add_option("--matmul-tokens", a.matmul_tokens, "Matmul tokens (>= 32 takes the tiled shader)")
      ->capture_default_str()
      ->check(CLI::Range(1, 65536));
  app.add_option("--repeats", a.repeats, "Timed repeats of each probe")->capture_default_str()->check(CLI::Range(1, 1000));
  app.add_option("--rounds", a.rounds, "ar-bench (and llama-bench) runs per file")->capture_default_str()->check(CLI::Range(1, 100));
  app.add_option("-p,--prompt", a.prompt, "Prompt tokens (pp)")->capture_default_str()->check(CLI::Range(1, 65536));
  app.add_option("-n,--gen", a.gen, "Decode tokens (tg)")->capture_default_str()->check(CLI::Range(1, 65536));
  app.add_option("-r,--samples", a.samples, "ar-bench samples per run")->capture_default_str()->check(CLI::Range(1, 1000));
  app.add_option("--llama-bench", a.llama_benches,
                 "llama.cpp's llama-bench, run alternately on the same files (repeatable: its Vulkan and CUDA builds)")
      ->check(CLI::ExistingFile);
  app.add_option("--out", a.out, "JSON file (default: stdout)");
  if (auto code = kakeya::parse_command_line(app, argc, argv)) return *code;
  return kakeya::engine::run(a);
}
