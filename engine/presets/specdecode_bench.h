#pragma once
// specdecode-bench: autoregressive vs speculative decoding on the same target, same prompts.
//
// Protocol: one untimed warm-up (its own prompt, never a sample) through every arm; then for
// each of `samples` prompts, the AR arm and one speculative arm per block size, interleaved per
// prompt (so machine-load drift hits every arm alike). Each run starts from an empty KV cache.
// Greedy decoding; the report's `lossless` is true only when every speculative sample's tokens
// equal the AR sample's tokens for the same prompt.
//
// Timing scope (decode_only): decode_s runs from the first generated token (taken from the
// prefill logits) to the stop; it includes drafting, verification and rollback. decode_tokens =
// generated tokens − 1 (those produced after the prefill), decode tok/s = decode_tokens/decode_s.
// prefill_s is the target's prefill; a draft model's own prefill (DraftSource::begin) is
// reported separately as draft_prefill_s and counted in e2e_s.
//
// Verify blocks must agree with one-token decode for the lossless check to hold: the backend's
// requirement (backend.h). On the CPU, --verify-mode picks the target backend's batched_matmul
// ("quantized": every batch exact, the default; "sgemm": cheaper per token on F32 targets,
// not exact), and it applies to prefill and verify of both arms alike. A draft model may run on
// a backend of its own (the CPU with its default options).
//
// Report (kind "specdecode-bench", docs/evidence-gate.md shape): config, env, model provenance,
// engine, synthetic, warmup, arms[] (ar = baseline, spec-kN = candidate), comparisons[] (decode
// tok/s median ratio per block size, claim "speedup"), lossless, verify_cost (target forward
// seconds for 1, 2, 4, 8, 16 tokens after a prompt, keyed by the backend's batched matmul mode:
// "quantized_activations", "sgemm" or "auto" on the CPU, the backend's name elsewhere).
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bridge/result.h"
#include "engine/llama.h"
#include "engine/presets/niah.h"
#include "engine/presets/report.h"

namespace kakeya::engine {

struct SpecBenchConfig {
  std::string model;
  std::string draft = "lookup:3";       // make_draft_source syntax
  std::vector<int> block_sizes = {2, 4, 8};
  int samples = 5;
  int gen_tokens = 64;
  std::string workload = "stories";    // stories | niah | code | file
  std::string prompts_file;            // workload "file": the prompts (workload_prompts)
  std::string backend = "cpu";         // as requested (--backend): reports compare it with what ran
  size_t n_ctx = 0;                    // 0: max(model context, longest prompt + gen + block + 2)
  std::vector<int> verify_sizes = {1, 2, 4, 8, 16};
  int verify_reps = 5;
  std::string temp_dir = "/tmp";       // for the quantized draft copy
  // Both arms stop at an end-of-generation token (Tokenizer::is_eog, as generate does) unless
  // ignore_eos. Keep decoding past EOS (both arms; the runaway guard still applies), as llama.cpp's
  // --ignore-eos: for models that answer in a few tokens (niah-tiny), so a sample decodes
  // gen_tokens and the gate's DECODE_TOKENS rule can judge the run.
  bool ignore_eos = false;
};

// One workload prompt. `needle`/`answer` only for niah.
struct BenchPrompt {
  std::string id;    // e.g. "stories-3", "niah-warmup"
  std::string text;
  bool needle = false;
  std::string answer;
};

// `n` timed prompts of a workload, all distinct, plus (warmup = true) the warm-up prompt, whose id
// ends in "-warmup" and whose text is none of the timed ones.
// Workloads: "stories" (TinyStories-style openers), "niah" (generate_niah seed 42, 8–10 lines;
// warm-up from seed 7), "code" (copy-heavy: a block of small functions followed by the start of
// the same block again), "file" (the first n prompts of `prompts_file`, a JSON object
// {"prompts": [string, ...], "warmup": string, ...other keys ignored}, e.g. the file tools/train_pair/prompts.py cuts).
// Errors "bad_param" for an unknown workload, n < 1, or a "file" workload without a file, with
// fewer than n prompts, or whose warm-up is one of them; "io", "parse_error", "duplicate_key",
// "missing_key", "bad_type" for the file, naming it.
Result<std::vector<BenchPrompt>> workload_prompts(const std::string& workload, int n, bool warmup,
                                                  const std::string& prompts_file = "");

// Target forward time for blocks of each size after `prompt` (n_tokens, context_tokens,
// median_s, min_s, per_token_s; `reps` timed repeats after one untimed one).
Result<nlohmann::json> verify_cost_curve(LlamaContext& ctx, const std::vector<int32_t>& prompt,
                                         const std::vector<int>& sizes, int reps);

// Runs the benchmark with the target on `backend` and a draft model ("gguf", "quant") on
// `draft_backend` (null: the target's), and returns the report. `progress` (may be empty)
// receives one-line updates.
// Errors: "bad_param" (samples < 1, gen_tokens < 2, block size < 1, workload), model/draft errors.
Result<nlohmann::json> run_specdecode_bench(const SpecBenchConfig& config, Backend& backend,
                                            Backend* draft_backend = nullptr, const Progress& progress = {});

}  // namespace kakeya::engine
