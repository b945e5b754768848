// kakeya-engine ar-bench: autoregressive prefill/decode throughput.
// One untimed warm-up (its own prompt text, never reused as a sample), then --samples timed runs
// per prompt length; each sample starts from an empty KV cache, prefills its prompt in one
// eval, then decodes --gen-tokens greedy tokens one forward each. Reports per-sample seconds and
// tokens/s, and median/min/max per prompt length, with environment and provenance.
#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "engine/cmd/cli_threads.h"
#include "engine/cmd/commands.h"
#include "engine/llama.h"
#include "engine/presets/report.h"
#include "engine/sampling.h"
#include "engine/tokenizer.h"

namespace kakeya::engine::cmd {
namespace {

constexpr const char* kSampleText =
    "Once upon a time, there was a little girl named Lily. She loved to play outside in the park "
    "with her friends. One day, she saw a big red ball under a tall green tree. ";
constexpr const char* kWarmupText =
    "The quick brown fox jumps over the lazy dog while the weather stays calm and the birds sing. ";

struct BenchArgs {
  std::string model;
  std::string prompt_lengths = "16,128,512";
  int gen_tokens = 64;
  int samples = 5;
  int threads = 0;  // 0 = every logical CPU
  size_t n_ctx = 0;
  size_t n_batch = 512;
  std::string weight_layout = "auto";
  std::string batched_matmul = "auto";
  std::string out;
  bool json = false;
};

// `n` token ids: BOS then body tokens from `offset` on (the text repeated as needed).
std::vector<int32_t> make_prompt(const Tokenizer& tok, const std::string& text, size_t n, size_t offset) {
  std::string repeated;
  std::vector<int32_t> body;
  while (body.size() < n + offset) {
    repeated += text;
    body = tok.encode(repeated, false);
  }
  std::vector<int32_t> ids = {tok.bos() >= 0 ? tok.bos() : body[0]};
  ids.insert(ids.end(), body.begin() + static_cast<long>(offset),
             body.begin() + static_cast<long>(offset + n - 1));
  return ids;
}

struct SampleTiming {
  double prefill_s = 0, decode_s = 0;
};

Result<SampleTiming> run_sample(LlamaContext& ctx, const std::vector<int32_t>& prompt, int gen,
                                std::vector<int32_t>* out = nullptr) {
  ctx.truncate(0);
  SampleTiming t;
  const auto t0 = std::chrono::steady_clock::now();
  KAKEYA_ASSIGN_OR_RETURN(std::vector<float> logits, ctx.eval(prompt));
  t.prefill_s = seconds_since(t0);
  const auto t1 = std::chrono::steady_clock::now();
  for (int i = 0; i < gen; ++i) {
    const int32_t one[1] = {argmax(logits)};
    if (out != nullptr) out->push_back(one[0]);
    KAKEYA_ASSIGN_OR_RETURN(logits, ctx.eval(one));
  }
  t.decode_s = seconds_since(t1);
  return t;
}

int run_ar_bench(BenchArgs a) {
  auto fail = [](const Error& e) {
    std::cerr << "ar-bench: " << e.str() << "\n";
    return 1;
  };
  auto threads = resolve_threads(a.threads);
  if (!threads.ok()) return fail(threads.error());
  a.threads = threads.value();
  std::vector<size_t> lengths;
  {
    std::stringstream ss(a.prompt_lengths);
    std::string item;
    while (std::getline(ss, item, ',')) {
      size_t v = 0;
      try {
        v = std::stoul(item);
      } catch (...) {
        v = 0;
      }
      if (v < 1) return fail(make_error("bad_param", "--prompt-lengths: \"" + item + "\" is not a positive integer"));
      lengths.push_back(v);
    }
  }
  if (lengths.empty()) return fail(make_error("bad_param", "--prompt-lengths is empty"));
  if (a.samples < 1 || a.gen_tokens < 1)
    return fail(make_error("bad_param", "--samples and --gen-tokens must be >= 1"));
  const bool pack = pack_rows_for_layout(a.weight_layout);
  auto model = LlamaModel::load(a.model, ModelLoadOptions{.pack_rows = pack});
  if (!model.ok()) return fail(model.error());
  auto tok = Tokenizer::from_gguf(model->gguf());
  if (!tok.ok()) return fail(tok.error());
  const MatmulMode mode = a.batched_matmul == "sgemm"       ? MatmulMode::kSgemm
                         : a.batched_matmul == "quantized" ? MatmulMode::kQuantizedActivations
                                                           : MatmulMode::kAuto;
  LlamaContext ctx(model.value(), ContextOptions{a.n_ctx, a.threads, a.n_batch, mode});
  const size_t max_len = *std::max_element(lengths.begin(), lengths.end());
  for (size_t len : lengths) {
    if (len + static_cast<size_t>(a.gen_tokens) > ctx.n_ctx())
      return fail(make_error("context_overflow", "prompt length " + std::to_string(len) + " + " +
                                                     std::to_string(a.gen_tokens) +
                                                     " generated tokens exceed n_ctx " +
                                                     std::to_string(ctx.n_ctx())));
  }

  // Warm-up: the longest prompt length, a different text, not timed and never a sample.
  std::cerr << "ar-bench: warm-up (" << max_len << " prompt tokens, untimed)\n";
  const auto warm_prompt = make_prompt(tok.value(), kWarmupText, max_len, 0);
  auto warm = run_sample(ctx, warm_prompt, std::min(a.gen_tokens, 8));
  if (!warm.ok()) return fail(warm.error());

  nlohmann::json rows = nlohmann::json::array();
  nlohmann::json arms = nlohmann::json::array();
  nlohmann::json gate_arms = nlohmann::json::array();  // the evidence gate's shape (bridge/gate.h)
  for (size_t len : lengths) {
    std::vector<double> pf_s, dc_s, pf_tps, dc_tps;
    nlohmann::json gate_samples = nlohmann::json::array();
    for (int s = 0; s < a.samples; ++s) {
      // Each sample gets its own window of the sample text (offset 7·s).
      const auto prompt = make_prompt(tok.value(), kSampleText, len, static_cast<size_t>(s) * 7);
      std::vector<int32_t> generated;
      auto t = run_sample(ctx, prompt, a.gen_tokens, &generated);
      if (!t.ok()) return fail(t.error());
      gate_samples.push_back({{"prompt_id", "sample-L" + std::to_string(len) + "-" + std::to_string(s)},
                              {"prefill_s", t->prefill_s},
                              {"decode_s", t->decode_s},
                              {"e2e_s", t->prefill_s + t->decode_s},
                              {"decode_tokens", a.gen_tokens},
                              {"text", tok->decode(generated)},
                              {"resident_kv_bytes", ctx.kv().resident_bytes()}});
      const double ptps = static_cast<double>(len) / t->prefill_s;
      const double dtps = a.gen_tokens / t->decode_s;
      pf_s.push_back(t->prefill_s);
      dc_s.push_back(t->decode_s);
      pf_tps.push_back(ptps);
      dc_tps.push_back(dtps);
      rows.push_back({{"prompt_tokens", len},
                      {"sample", s},
                      {"prefill_s", t->prefill_s},
                      {"decode_s", t->decode_s},
                      {"e2e_s", t->prefill_s + t->decode_s},
                      {"decode_tokens", a.gen_tokens},
                      {"prefill_tok_s", ptps},
                      {"decode_tok_s", dtps},
                      {"kv_resident_bytes", ctx.kv().resident_bytes()}});
      std::fprintf(stderr, "ar-bench: L=%zu sample %d: prefill %.1f tok/s, decode %.1f tok/s\n", len, s,
                   ptps, dtps);
    }
    gate_arms.push_back({{"name", "prompt-" + std::to_string(len)},
                         {"role", "baseline"},
                         {"backend_requested", "cpu"},
                         {"backend_used", "cpu"},
                         {"timing_scope", "decode_only"},
                         {"config", {{"prompt_tokens", len}, {"gen_tokens", a.gen_tokens}, {"threads", a.threads}}},
                         {"samples", gate_samples},
                         {"aggregates", {{"decode_tok_s_median", summarize(dc_tps).median},
                                         {"decode_tokens_median", a.gen_tokens},
                                         {"resident_kv_bytes_measured", true}}}});
    arms.push_back({{"name", "prompt-" + std::to_string(len)},
                    {"prompt_tokens", len},
                    {"samples", a.samples},
                    {"decode_tokens", a.gen_tokens},
                    {"prefill_s", to_json(summarize(pf_s))},
                    {"decode_s", to_json(summarize(dc_s))},
                    {"prefill_tok_s", to_json(summarize(pf_tps))},
                    {"decode_tok_s", to_json(summarize(dc_tps))}});
  }

  nlohmann::json r;
  r["kind"] = "ar-bench";
  r["schema_version"] = 1;
  r["created_at"] = utc_now_rfc3339();
  r["config"] = {{"prompt_lengths", lengths},
                 {"gen_tokens", a.gen_tokens},
                 {"samples", a.samples},
                 {"threads", a.threads},
                 {"n_ctx", ctx.n_ctx()},
                 {"n_batch", a.n_batch},
                 {"weight_layout", model->packed_matrices() > 0 ? "packed" : "row-major"},
                 {"batched_matmul", a.batched_matmul},
                 {"decoding", "greedy"},
                 {"timing_scope", "prefill: one eval of the whole prompt from an empty KV cache; "
                                  "decode: gen_tokens one-token evals; tokenization excluded"}};
  r["warmup"] = {{"done", true},
                 {"timed", false},
                 {"prompt_tokens", warm_prompt.size()},
                 {"distinct_from_samples", true},
                 {"prompt_id", "warmup"}};
  r["env"] = env_summary();
  r["model"] = model_provenance(model.value());
  r["engine"] = engine_info(a.threads);
  r["synthetic"] = model->synthetic();
  r["samples"] = rows;
  r["aggregates"] = arms;
  // This process's own peak RSS (VmHWM): a parent's wait4 ru_maxrss can report the parent's
  // peak instead when the child was started with vfork/posix_spawn (the mm it exec'd from).
  r["peak_rss_bytes"] = peak_rss_bytes();
  r["arms"] = gate_arms;
  if (!a.out.empty()) {
    if (Status st = write_report(a.out, r); !st.ok()) return fail(st.error());
    std::cerr << "ar-bench: wrote " << (std::filesystem::path(a.out) / "report.json").string() << "\n";
  }
  if (a.json) {
    std::cout << report_json_text(r) << "\n";
  } else {
    std::printf("%-10s %8s %16s %16s\n", "prompt", "samples", "prefill tok/s", "decode tok/s");
    for (const auto& arm : arms) {
      std::printf("%-10zu %8d %16.1f %16.1f\n", arm["prompt_tokens"].get<size_t>(), a.samples,
                  arm["prefill_tok_s"]["median"].get<double>(), arm["decode_tok_s"]["median"].get<double>());
    }
  }
  return 0;
}

}  // namespace

void add_ar_bench(CLI::App& app, int& exit_code) {
  auto* sub = app.add_subcommand("ar-bench", "Benchmark autoregressive prefill and decode throughput");
  auto a = std::make_shared<BenchArgs>();
  sub->add_option("--model", a->model, "GGUF model file")->required()->check(CLI::ExistingFile);
  sub->add_option("--prompt-lengths", a->prompt_lengths, "Comma-separated prompt lengths in tokens")->capture_default_str();
  sub->add_option("--gen-tokens", a->gen_tokens, "Decode tokens per sample")->capture_default_str();
  sub->add_option("--samples", a->samples, "Timed samples per prompt length")->capture_default_str();
  sub->add_option("--threads", a->threads, "CPU threads (0 = all; more than the machine has is an error)")
      ->capture_default_str()
      ->check(CLI::Range(0, 1024));
  sub->add_option("--n-ctx", a->n_ctx, "Context length (0 = the model's)")->capture_default_str();
  sub->add_option("--n-batch", a->n_batch, "Prefill chunk in tokens")->capture_default_str()->check(CLI::Range(1, 65536));
  sub->add_option("--weight-layout", a->weight_layout,
                  "auto: packed when the CPU has AVX2 or AVX-512; packed: Q4_0/Q8_0 matmul weights copied into the "
                  "row-interleaved layout of the packed kernels; row-major: as stored in the file")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "packed", "row-major"}));
  sub->add_option("--batched-matmul", a->batched_matmul,
                  "Prefill matmuls: auto (sgemm from 32 tokens), sgemm (dequantize + OpenBLAS) or quantized "
                  "(the decode kernels, weights reused from cache across the batch)")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "sgemm", "quantized"}));
  sub->add_option("--out", a->out, "Directory for report.json (created if missing)")->required();
  sub->add_flag("--json", a->json, "Print the report JSON on stdout instead of a table");
  sub->callback([a, &exit_code] { exit_code = run_ar_bench(*a); });
}

}  // namespace kakeya::engine::cmd
