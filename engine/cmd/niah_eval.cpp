// kakeya-engine niah-eval: NIAH recall of a KV policy against the full-cache oracle on a ladder of
// haystack sizes; writes DIR/report.json (kind "niah-eval", engine/presets/niah_eval.h).
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "engine/cmd/commands.h"
#include "engine/cmd/flags.h"
#include "engine/presets/niah_eval.h"

namespace kakeya::engine::cmd {
namespace {

struct NiahArgs {
  CommonFlags flags;
  std::vector<std::string> policy_files;
  int sink = 4;
  int window = 64;
  int tail = 32;
  std::string exact_layers;  // "1,3"
  int kv_bits = 32;
  uint64_t seed = 0;
  std::string lines = "20,40,60";
  int samples = 5;
  int decode_tokens = 16;
  bool no_needle = false;
  bool no_claim = false;
};

int run(const NiahArgs& a) {
  const std::string name = "niah-eval";
  NiahEvalConfig cfg;
  cfg.seed = a.seed;
  auto lines = parse_int_list("--lines", a.lines, 1);
  if (!lines.ok()) return fail(name, lines.error());
  cfg.lines = lines.value();
  cfg.samples = a.samples;
  cfg.decode_tokens = a.decode_tokens;
  cfg.with_needle = !a.no_needle;
  cfg.claim = !a.no_claim;
  cfg.backend = a.flags.backend;
  cfg.n_batch = a.flags.n_batch;
  cfg.n_ctx = a.flags.n_ctx;
  cfg.arms.push_back({"full", "oracle", KvPolicy{}});
  if (!a.policy_files.empty()) {
    for (const std::string& f : a.policy_files) {
      auto p = load_kv_policy(f);
      if (!p.ok()) return fail(name, p.error());
      cfg.arms.push_back({p->describe(), "candidate", p.value()});
    }
  } else {
    KvPolicy p;
    p.sink = a.sink;
    p.window = a.window;
    p.tail = a.tail;
    p.kv_bits = a.kv_bits;
    auto layers = parse_int_list("--exact-layers", a.exact_layers, 0);
    if (!layers.ok()) return fail(name, layers.error());
    p.exact_layers = layers.value();
    cfg.arms.push_back({p.describe(), "candidate", p});
  }
  auto backend = open_flag_backend(a.flags);
  if (!backend.ok()) return fail(name, backend.error());
  auto m = load_model(a.flags.model);
  if (!m.ok()) return fail(name, m.error());
  auto report = run_niah_eval((*m)->model, (*m)->tok, **backend, cfg, stderr_progress(name));
  if (!report.ok()) return fail(name, report.error());
  if (Status st = emit_report(name, a.flags, report.value()); !st.ok()) return fail(name, st.error());
  if (!a.flags.json) {
    for (const auto& arm : (*report)["arms"]) {
      const auto& ag = arm["aggregates"];
      std::cout << arm["name"].get<std::string>() << ": recall "
                << (ag["recall"].is_null() ? std::string("n/a") : std::to_string(ag["recall"].get<double>()))
                << ", resident KV median " << ag["resident_kv_bytes_median"].get<double>() << " B\n";
    }
    for (const auto& c : (*report)["comparisons"]) {
      if (c["metric"] == "recall")
        std::cout << c["candidate"].get<std::string>() << " vs " << c["baseline"].get<std::string>()
                  << ": recall delta " << c["delta_pp"].get<double>() << " pp\n";
      else
        std::cout << c["candidate"].get<std::string>() << ": KV " << c["ratio"].get<double>()
                  << "x smaller (measured)\n";
    }
  }
  return 0;
}

}  // namespace

void add_niah_eval(CLI::App& app, int& exit_code) {
  auto* sub = app.add_subcommand("niah-eval", "NIAH recall of a KV policy vs the full-cache oracle");
  auto a = std::make_shared<NiahArgs>();
  a->flags.n_batch = 32;
  add_common_flags(sub, a->flags, kModelRunFlags | kNCtxFlag | kNBatchFlag | kOutFlag | kJsonFlag,
                   "enough for the prompts and the decoded tokens");
  sub->add_option("--policy", a->policy_files, "KV policy JSON file(s); one candidate arm each")
      ->check(CLI::ExistingFile);
  sub->add_option("--sink", a->sink, "Sink positions (without --policy)")->capture_default_str();
  sub->add_option("--window", a->window, "Window positions (without --policy)")->capture_default_str();
  sub->add_option("--tail", a->tail, "Speculative tail positions")->capture_default_str();
  sub->add_option("--exact-layers", a->exact_layers, "Comma-separated exact layers, e.g. 1,3");
  sub->add_option("--kv-bits", a->kv_bits, "32, 8 or 4")->capture_default_str();
  sub->add_option("--seed", a->seed, "NIAH generator seed")->capture_default_str();
  sub->add_option("--lines", a->lines, "Haystack ladder, e.g. 20,40,60")->capture_default_str();
  sub->add_option("--samples", a->samples, "Samples per rung")->capture_default_str()->check(CLI::Range(1, 10000));
  sub->add_option("--decode-tokens", a->decode_tokens, "Greedy tokens per sample")->capture_default_str()->check(CLI::Range(1, 4096));
  sub->add_flag("--no-needle", a->no_needle, "Control workload without a needle (recall null)");
  sub->add_flag("--no-claim", a->no_claim, "Report comparisons without recall/memory claims");
  sub->callback([a, &exit_code] { exit_code = run(*a); });
}

}  // namespace kakeya::engine::cmd
