// kakeya-engine niah-eval: NIAH recall of a KV policy against the full-cache oracle on a ladder of
// haystack sizes; writes DIR/report.json (kind "niah-eval", engine/presets/niah_eval.h).
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "engine/cmd/commands.h"
#include "engine/presets/niah_eval.h"
#include "engine/presets/report.h"

namespace kakeya::engine::cmd {
namespace {

struct NiahArgs {
  std::string model;
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
  int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  size_t n_batch = 32;
  size_t n_ctx = 0;
  std::string out;
  bool json = false;
};

Result<std::vector<int>> parse_ints(const std::string& s, const char* what) {
  std::vector<int> out;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (item.empty()) continue;
    try {
      size_t used = 0;
      out.push_back(std::stoi(item, &used));
      if (used != item.size()) throw std::invalid_argument(item);
    } catch (const std::exception&) {
      return make_error("bad_param", std::string(what) + ": \"" + item + "\" is not an integer");
    }
  }
  return out;
}

int run(const NiahArgs& a) {
  auto fail = [](const Error& e) {
    std::cerr << "niah-eval: " << e.str() << "\n";
    return 1;
  };
  NiahEvalConfig cfg;
  cfg.seed = a.seed;
  auto lines = parse_ints(a.lines, "--lines");
  if (!lines.ok()) return fail(lines.error());
  cfg.lines = lines.value();
  cfg.samples = a.samples;
  cfg.decode_tokens = a.decode_tokens;
  cfg.with_needle = !a.no_needle;
  cfg.claim = !a.no_claim;
  cfg.threads = a.threads;
  cfg.n_batch = a.n_batch;
  cfg.n_ctx = a.n_ctx;
  cfg.arms.push_back({"full", "oracle", KvPolicy{}});
  if (!a.policy_files.empty()) {
    for (const std::string& f : a.policy_files) {
      auto p = load_kv_policy(f);
      if (!p.ok()) return fail(p.error());
      cfg.arms.push_back({p->describe(), "candidate", p.value()});
    }
  } else {
    KvPolicy p;
    p.sink = a.sink;
    p.window = a.window;
    p.tail = a.tail;
    p.kv_bits = a.kv_bits;
    auto layers = parse_ints(a.exact_layers, "--exact-layers");
    if (!layers.ok()) return fail(layers.error());
    p.exact_layers = layers.value();
    cfg.arms.push_back({p.describe(), "candidate", p});
  }
  auto model = LlamaModel::load(a.model);
  if (!model.ok()) return fail(model.error());
  auto tok = Tokenizer::from_gguf(model->gguf());
  if (!tok.ok()) return fail(tok.error());
  auto report = run_niah_eval(model.value(), tok.value(), cfg);
  if (!report.ok()) return fail(report.error());
  if (!a.out.empty()) {
    if (Status st = write_report(a.out, report.value()); !st.ok()) return fail(st.error());
  }
  if (a.json) {
    std::cout << report->dump(2) << "\n";
  } else {
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
  sub->add_option("--model", a->model, "GGUF model file")->required()->check(CLI::ExistingFile);
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
  sub->add_option("--threads", a->threads, "CPU threads")->capture_default_str()->check(CLI::Range(1, 1024));
  sub->add_option("--n-batch", a->n_batch, "Prefill chunk in tokens")->capture_default_str()->check(CLI::Range(1, 65536));
  sub->add_option("--n-ctx", a->n_ctx, "Context length (0 = enough for the prompts)")->capture_default_str();
  sub->add_option("--out", a->out, "Directory for report.json");
  sub->add_flag("--json", a->json, "Print the report JSON on stdout");
  sub->callback([a, &exit_code] { exit_code = run(*a); });
}

}  // namespace kakeya::engine::cmd
