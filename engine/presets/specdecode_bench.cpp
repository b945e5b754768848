#include "engine/presets/specdecode_bench.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <memory>

#include "bridge/json_strict.h"
#include "bridge/sha256.h"
#include "engine/draft.h"
#include "engine/presets/report.h"
#include "engine/speculative.h"
#include "engine/tokenizer.h"

namespace kakeya::engine {
namespace {

using nlohmann::json;

const std::vector<std::string>& story_openers() {
  static const std::vector<std::string> v = {
      "Once upon a time, there was a little girl named Lily. She loved to play outside.",
      "One day, a boy named Tom found a big red ball in the park.",
      "There was a small dog who lived in a house near the sea.",
      "Sue and her mom went to the store to buy some food for dinner.",
      "Once upon a time, in a big forest, there lived a wise old owl.",
      "Ben had a toy car. He liked to play with it every day.",
      "The sun was shining and the birds were singing in the tall tree.",
      "Anna wanted to bake a cake for her friend's birthday.",
      "A little bunny hopped into the garden to look for carrots.",
      "Max and Mia built a tall tower with their blocks.",
      "The old man sat on the bench and fed the ducks.",
      "It was a rainy day, so Tim stayed inside and read a book.",
  };
  return v;
}

std::string code_prompt(int i) {
  // A block of small functions, then the start of the same block again: copy-heavy text.
  std::string block;
  const char* ops[] = {"+", "-", "*", "//"};
  const char* names[] = {"add", "sub", "mul", "div"};
  for (int f = 0; f < 4; ++f) {
    block += "def " + std::string(names[f]) + "_" + std::to_string(i) + "(a, b):\n    return a " +
             ops[f] + " b + " + std::to_string(i + f) + "\n\n";
  }
  return block + "# the same helpers again\n" + block.substr(0, block.size() / 3);
}

double median_of(std::vector<double> v) { return summarize(std::move(v)).median; }

// `s` with every invalid UTF-8 sequence replaced by U+FFFD (decoded byte tokens of a random
// model are often partial characters; JSON needs valid UTF-8).
std::string utf8_sanitize(const std::string& s) {
  std::string out;
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    const size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    bool ok = len > 0 && i + len <= s.size();
    for (size_t j = 1; ok && j < len; ++j) ok = (static_cast<unsigned char>(s[i + j]) & 0xC0) == 0x80;
    if (ok) {
      out.append(s, i, len);
      i += len;
    } else {
      out += "\xEF\xBF\xBD";
      ++i;
    }
  }
  return out;
}

struct ArmRun {
  std::string name;
  int block = 0;  // 0: autoregressive
  json samples = json::array();
  std::vector<double> decode_tps, prefill_s, e2e_s, tpf, decode_tokens;
  size_t drafted = 0, accepted = 0, draft_blocks = 0;
  std::vector<std::vector<int32_t>> outputs;  // per sample
};

struct FilePrompts {
  std::vector<std::string> prompts;
  std::string warmup;
};

// The prompts file of the "file" workload (workload_prompts).
Result<FilePrompts> read_prompts_file(const std::string& path) {
  if (path.empty()) return make_error("bad_param", "workload \"file\" needs --prompts-file");
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error("io", "cannot open prompts file " + path);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto parsed = bridge::parse_json_strict(text);
  if (!parsed.ok()) return make_error(parsed.error().code, path + ": " + parsed.error().message);
  const json& j = *parsed;
  FilePrompts f;
  if (!j.is_object() || !j.contains("prompts") || !j.contains("warmup")) {
    return make_error("missing_key", path + ": want an object with \"prompts\" and \"warmup\"");
  }
  if (!j["prompts"].is_array() || !j["warmup"].is_string()) {
    return make_error("bad_type", path + ": \"prompts\" must be an array of strings, \"warmup\" a string");
  }
  for (const json& p : j["prompts"]) {
    if (!p.is_string()) return make_error("bad_type", path + ": prompt " + std::to_string(f.prompts.size()) + " is not a string");
    f.prompts.push_back(p.get<std::string>());
  }
  f.warmup = j["warmup"].get<std::string>();
  if (std::find(f.prompts.begin(), f.prompts.end(), f.warmup) != f.prompts.end()) {
    return make_error("bad_param", path + ": the warm-up prompt is also a timed prompt");
  }
  return f;
}

}  // namespace

Result<std::vector<BenchPrompt>> workload_prompts(const std::string& workload, int n, bool warmup,
                                                  const std::string& prompts_file) {
  if (n < 1) return make_error("bad_param", "samples " + std::to_string(n) + " must be >= 1");
  std::vector<BenchPrompt> out;
  if (workload == "stories") {
    const auto& v = story_openers();
    if (static_cast<size_t>(n) + 1 > v.size()) {
      return make_error("bad_param", "stories workload has " + std::to_string(v.size() - 1) +
                                         " distinct prompts; samples " + std::to_string(n));
    }
    for (int i = 0; i < n; ++i) out.push_back({"stories-" + std::to_string(i), v[static_cast<size_t>(i)]});
    if (warmup) out.push_back({"stories-warmup", v.back()});
  } else if (workload == "niah") {
    for (const NiahSample& s : generate_niah(42, 8, 10, n)) {
      out.push_back({"niah-" + std::to_string(out.size()), s.prompt, true, s.answer});
    }
    if (warmup) {
      const NiahSample w = generate_niah(7, 8, 10, 1).front();
      out.push_back({"niah-warmup", w.prompt, true, w.answer});
    }
  } else if (workload == "code") {
    for (int i = 0; i < n; ++i) out.push_back({"code-" + std::to_string(i), code_prompt(i + 1)});
    if (warmup) out.push_back({"code-warmup", code_prompt(1000)});
  } else if (workload == "file") {
    KAKEYA_ASSIGN_OR_RETURN(const FilePrompts f, read_prompts_file(prompts_file));
    if (static_cast<size_t>(n) > f.prompts.size()) {
      return make_error("bad_param", prompts_file + " has " + std::to_string(f.prompts.size()) +
                                         " prompts; samples " + std::to_string(n));
    }
    for (int i = 0; i < n; ++i) out.push_back({"file-" + std::to_string(i), f.prompts[static_cast<size_t>(i)]});
    if (warmup) out.push_back({"file-warmup", f.warmup});
  } else {
    return make_error("bad_param", "workload \"" + workload + "\" is not stories, niah, code or file");
  }
  return out;
}

Result<json> verify_cost_curve(LlamaContext& ctx, const std::vector<int32_t>& prompt,
                               const std::vector<int>& sizes, int reps) {
  json rows = json::array();
  ctx.truncate(0);
  KAKEYA_TRY(ctx.eval(prompt));
  const size_t base = ctx.n_past();
  for (int n : sizes) {
    if (n < 1 || base + static_cast<size_t>(n) > ctx.n_ctx()) continue;
    // Tokens of the prompt itself (valid ids), repeated as needed.
    std::vector<int32_t> block(static_cast<size_t>(n));
    for (size_t i = 0; i < block.size(); ++i) block[i] = prompt[(i + 1) % prompt.size()];
    std::vector<double> t;
    for (int r = 0; r <= reps; ++r) {
      ctx.truncate(base);
      const auto t0 = std::chrono::steady_clock::now();
      KAKEYA_TRY(ctx.eval(block, /*all_logits=*/true));
      if (r > 0) t.push_back(seconds_since(t0));  // the first repeat is untimed
    }
    const SampleStats s = summarize(t);
    rows.push_back({{"n_tokens", n},
                    {"context_tokens", base},
                    {"reps", reps},
                    {"median_s", s.median},
                    {"min_s", s.min},
                    {"per_token_s", s.median / n}});
  }
  ctx.truncate(0);
  return rows;
}

Result<json> run_specdecode_bench(const SpecBenchConfig& c, Backend& backend, Backend* draft_backend,
                                  const Progress& progress) {
  auto say = [&](const std::string& s) { report_progress(progress, s); };
  if (c.samples < 1) return make_error("bad_param", "--samples must be >= 1");
  if (c.gen_tokens < 2) return make_error("bad_param", "--gen-tokens must be >= 2");
  if (c.block_sizes.empty()) return make_error("bad_param", "--block-sizes is empty");
  for (int k : c.block_sizes)
    if (k < 1) return make_error("bad_param", "block size " + std::to_string(k) + " must be >= 1");
  KAKEYA_ASSIGN_OR_RETURN(std::vector<BenchPrompt> prompts, workload_prompts(c.workload, c.samples, true, c.prompts_file));
  const BenchPrompt warm = prompts.back();
  prompts.pop_back();
  std::string prompts_sha256;  // provenance of a "file" workload's prompts
  if (c.workload == "file") {
    std::ifstream in(c.prompts_file, std::ios::binary);
    prompts_sha256 = bridge::sha256_hex(std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>()));
  }

  KAKEYA_ASSIGN_OR_RETURN(LlamaModel model, LlamaModel::load(c.model));
  KAKEYA_ASSIGN_OR_RETURN(Tokenizer tok, Tokenizer::from_gguf(model.gguf()));
  std::vector<std::vector<int32_t>> ids;
  size_t longest = 0;
  for (const auto& p : prompts) {
    ids.push_back(tok.encode(p.text, true));
    longest = std::max(longest, ids.back().size());
  }
  const std::vector<int32_t> warm_ids = tok.encode(warm.text, true);
  longest = std::max(longest, warm_ids.size());
  const int max_block = *std::max_element(c.block_sizes.begin(), c.block_sizes.end());
  const int max_verify = c.verify_sizes.empty() ? 0 : *std::max_element(c.verify_sizes.begin(), c.verify_sizes.end());
  size_t n_ctx = c.n_ctx;
  if (n_ctx == 0) {
    n_ctx = std::max<size_t>(static_cast<size_t>(model.hparams().n_ctx_train),
                             longest + static_cast<size_t>(c.gen_tokens + std::max(max_block, max_verify) + 2));
  }
  ContextOptions copt;
  copt.n_ctx = n_ctx;
  KAKEYA_ASSIGN_OR_RETURN(std::unique_ptr<LlamaContext> target_ctx, LlamaContext::create(model, backend, copt));
  LlamaContext& target = *target_ctx;
  // How the backend computes verify blocks (and prefill): the CPU's batched matmul mode.
  const std::string batched = backend.info().options.value("batched_matmul", std::string());
  const std::string mode = batched == "quantized" ? "quantized_activations" : batched.empty() ? backend.info().name : batched;
  DraftOptions dopt;
  dopt.backend = draft_backend;
  dopt.temp_dir = c.temp_dir;
  KAKEYA_ASSIGN_OR_RETURN(std::unique_ptr<DraftSource> draft, make_draft_source(c.draft, target, dopt));

  std::vector<ArmRun> arms;
  arms.push_back({"ar", 0});
  for (int k : c.block_sizes) arms.push_back({"spec-k" + std::to_string(k), k});
  const std::vector<int32_t>& eog = tok.eog_ids();  // generate's stop rule (Tokenizer::is_eog)

  auto run_arm = [&](const ArmRun& arm, const std::vector<int32_t>& prompt) -> Result<GenerationResult> {
    SpecOptions o;
    o.block_size = std::max(arm.block, 1);
    o.stop.max_new_tokens = c.gen_tokens;
    if (!c.ignore_eos) o.stop.eog = eog;
    if (arm.block == 0) return autoregressive_generate(target, prompt, o);
    return speculative_generate(target, *draft, prompt, o);
  };

  say("warm-up on " + warm.id + " (" + std::to_string(warm_ids.size()) + " tokens, untimed)");
  for (const ArmRun& arm : arms) KAKEYA_TRY(run_arm(arm, warm_ids));

  bool lossless = true;
  json mismatches = json::array();
  for (size_t si = 0; si < prompts.size(); ++si) {
    for (ArmRun& arm : arms) {
      KAKEYA_ASSIGN_OR_RETURN(GenerationResult g, run_arm(arm, ids[si]));
      const std::string text = utf8_sanitize(tok.decode(g.tokens));
      const size_t decode_tokens = g.tokens.empty() ? 0 : g.tokens.size() - 1;
      const double tps = g.decode_s > 0 ? static_cast<double>(decode_tokens) / g.decode_s : 0.0;
      const double e2e = g.prefill_s + g.draft_prefill_s + g.decode_s;
      json row = {{"prompt_id", prompts[si].id},
                  {"prompt_tokens", ids[si].size()},
                  {"prefill_s", g.prefill_s},
                  {"draft_prefill_s", g.draft_prefill_s},
                  {"decode_s", g.decode_s},
                  {"e2e_s", e2e},
                  {"generated_tokens", g.tokens.size()},
                  {"decode_tokens", decode_tokens},
                  {"decode_tok_s", tps},
                  {"target_forwards", g.target_forwards},
                  {"tokens_per_forward", g.tokens_per_forward()},
                  {"drafted", g.drafted},
                  {"accepted", g.accepted},
                  {"draft_blocks", g.draft_blocks},
                  {"acceptance", g.drafted ? static_cast<double>(g.accepted) / g.drafted : 0.0},
                  {"stop", stop_reason_name(g.stop)},
                  {"text", text},
                  {"needle", prompts[si].needle},
                  {"recall", prompts[si].needle ? json(niah_recalled(text, prompts[si].answer)) : json(nullptr)},
                  {"resident_kv_bytes", g.resident_kv_bytes}};
      if (g.stop == StopReason::kRunaway) row["runaway"] = g.runaway_detail;
      if (arm.block > 0) {
        const bool eq = g.tokens == arms[0].outputs[si];
        row["equals_ar"] = eq;
        if (!eq) {
          lossless = false;
          mismatches.push_back({{"arm", arm.name}, {"prompt_id", prompts[si].id}});
        }
      }
      arm.samples.push_back(row);
      arm.decode_tps.push_back(tps);
      arm.prefill_s.push_back(g.prefill_s);
      arm.e2e_s.push_back(e2e);
      arm.tpf.push_back(g.tokens_per_forward());
      arm.decode_tokens.push_back(static_cast<double>(decode_tokens));
      arm.drafted += g.drafted;
      arm.accepted += g.accepted;
      arm.draft_blocks += g.draft_blocks;
      arm.outputs.push_back(std::move(g.tokens));
      char line[256];
      std::snprintf(line, sizeof line, "%s %s: decode %.1f tok/s, %.2f tokens/forward, accepted %zu/%zu",
                    prompts[si].id.c_str(), arm.name.c_str(), tps, arm.tpf.back(),
                    static_cast<size_t>(row["accepted"]), static_cast<size_t>(row["drafted"]));
      say(line);
    }
  }

  json jarms = json::array();
  json comparisons = json::array();
  const double ar_tps = median_of(arms[0].decode_tps);
  for (const ArmRun& arm : arms) {
    const bool ar = arm.block == 0;
    json cfg = ar ? json{{"decoding", "autoregressive"}}
                  : json{{"decoding", "speculative"}, {"draft", draft->spec()}, {"block_size", arm.block}};
    cfg["verify_mode"] = mode;
    const double tps = median_of(arm.decode_tps);
    json agg = {{"decode_tok_s_median", tps},
                {"decode_tokens_median", median_of(arm.decode_tokens)},
                {"prefill_s", to_json(summarize(arm.prefill_s))},
                {"e2e_s", to_json(summarize(arm.e2e_s))},
                {"decode_tok_s", to_json(summarize(arm.decode_tps))},
                {"tokens_per_forward_median", median_of(arm.tpf)},
                {"drafted", arm.drafted},
                {"accepted", arm.accepted},
                {"acceptance", arm.drafted ? static_cast<double>(arm.accepted) / arm.drafted : 0.0},
                {"draft_blocks", arm.draft_blocks},
                {"resident_kv_bytes_measured", true}};
    if (c.workload == "niah") {
      double hits = 0;
      for (const auto& s : arm.samples) hits += s["recall"].get<bool>() ? 1 : 0;
      agg["recall"] = hits / static_cast<double>(arm.samples.size());
    } else {
      agg["recall"] = nullptr;
    }
    json arm_j = {{"name", arm.name},
                  {"role", ar ? "baseline" : "candidate"},
                  {"timing_scope", "decode_only"},
                  {"config", cfg},
                  {"samples", arm.samples},
                  {"aggregates", agg}};
    arm_j.update(arm_backend(c.backend, backend));
    jarms.push_back(std::move(arm_j));
    if (!ar) {
      comparisons.push_back({{"baseline", "ar"},
                             {"candidate", arm.name},
                             {"metric", "decode_tok_s_median"},
                             {"ratio", ar_tps > 0 ? tps / ar_tps : 0.0},
                             {"claim", "speedup"}});
    }
  }

  // The verify cost of the backend as opened, keyed by its batched matmul mode.
  json curve = json::object();
  if (!c.verify_sizes.empty()) {
    say("verify cost curve");
    KAKEYA_ASSIGN_OR_RETURN(curve[mode], verify_cost_curve(target, ids[0], c.verify_sizes, c.verify_reps));
  }

  json r = report_envelope("specdecode-bench", c.backend, backend, &model, &target.weights());
  r["config"] = {{"model", c.model},
                 {"draft", draft->spec()},
                 {"draft_kind", draft->kind()},
                 {"block_sizes", c.block_sizes},
                 {"samples", c.samples},
                 {"gen_tokens", c.gen_tokens},
                 {"workload", c.workload},
                 {"prompts_file", c.prompts_file.empty() ? json(nullptr) : json(c.prompts_file)},
                 {"prompts_file_sha256", prompts_sha256.empty() ? json(nullptr) : json(prompts_sha256)},
                 {"threads", backend.info().threads},
                 {"n_ctx", n_ctx},
                 {"temperature", 0},
                 {"decoding", "greedy"},
                 {"eos", tok.eos()},
                 {"eog", eog},
                 {"ignore_eos", c.ignore_eos},
                 {"weight_layout", target.weights().layout.value("layout", backend.info().name)},
                 {"runaway_guard", "unit of 1-8 tokens repeated >= 12 times ends generation"},
                 {"verify_mode", mode},
                 {"timing_scope",
                  "decode_only: from the first generated token to the stop (drafting, verify and "
                  "rollback included); prefill_s = target prefill; draft prefill reported separately"}};
  if (draft->kind() == "gguf" || draft->kind() == "quant") {  // a draft model: where it ran
    r["config"]["draft_backend"] = to_json((draft_backend != nullptr ? *draft_backend : backend).info());
  }
  r["warmup"] = {{"done", true}, {"timed", false}, {"prompt_id", warm.id}, {"prompt_tokens", warm_ids.size()}};
  r["arms"] = jarms;
  r["comparisons"] = comparisons;
  r["lossless"] = {{"checked", true}, {"equal", lossless}, {"mismatches", mismatches}};
  r["verify_cost"] = curve;
  return r;
}

}  // namespace kakeya::engine
