// kakeya-engine kv-calibrate: rank layers / KV heads by retrieval dependence and write a policy
// file for niah-eval (DIR/policy.json) plus the ranking (DIR/calibration.json).
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <thread>

#include "engine/cmd/commands.h"
#include "engine/presets/kv_calibrate.h"
#include "engine/presets/report.h"

namespace kakeya::engine::cmd {
namespace {

struct Args {
  std::string model;
  KvCalibrateConfig cfg;
  std::string granularity = "head";
  std::string out;
};

int run(Args a) {
  auto fail = [](const Error& e) {
    std::cerr << "kv-calibrate: " << e.str() << "\n";
    return 1;
  };
  if (a.granularity != "head" && a.granularity != "layer")
    return fail(make_error("bad_param", "--granularity must be head or layer, got " + a.granularity));
  a.cfg.heads = a.granularity == "head";
  auto model = LlamaModel::load(a.model);
  if (!model.ok()) return fail(model.error());
  auto tok = Tokenizer::from_gguf(model->gguf());
  if (!tok.ok()) return fail(tok.error());
  auto c = kv_calibrate(model.value(), tok.value(), a.cfg);
  if (!c.ok()) return fail(c.error());
  nlohmann::json j = c->to_json();
  j["model"] = model_provenance(model.value());
  j["engine"] = engine_info(a.cfg.threads);
  j["config"] = {{"seed", a.cfg.seed}, {"lines", a.cfg.lines}, {"samples", a.cfg.samples},
                 {"granularity", a.granularity}, {"budget", a.cfg.budget}, {"target_gap", a.cfg.target_gap}};
  std::error_code ec;
  std::filesystem::create_directories(a.out, ec);
  if (Status st = save_kv_policy(std::filesystem::path(a.out) / "policy.json", c->policy); !st.ok())
    return fail(st.error());
  std::ofstream(std::filesystem::path(a.out) / "calibration.json") << report_json_text(j) << "\n";
  std::cout << "full " << c->full_score << ", all bounded " << c->bounded_score << "\n";
  for (size_t l = 0; l < c->layer_alone.size(); ++l)
    std::cout << "layer " << l << " alone exact: " << c->layer_alone[l] << "\n";
  std::cout << "policy: " << c->policy.describe() << "\n";
  return 0;
}

}  // namespace

void add_kv_calibrate(CLI::App& app, int& exit_code) {
  auto* sub = app.add_subcommand("kv-calibrate", "Rank layers/KV heads by retrieval dependence; write a policy file");
  auto a = std::make_shared<Args>();
  a->cfg.base.window = 64;
  sub->add_option("--model", a->model, "GGUF model file")->required()->check(CLI::ExistingFile);
  sub->add_option("--seed", a->cfg.seed, "NIAH seed (use one other than the evaluation's)")->capture_default_str();
  sub->add_option("--lines", a->cfg.lines, "Haystack sizes")->delimiter(',')->capture_default_str();
  sub->add_option("--samples", a->cfg.samples, "Samples per size")->capture_default_str()->check(CLI::Range(1, 1000));
  sub->add_option("--sink", a->cfg.base.sink, "Sink positions")->capture_default_str();
  sub->add_option("--window", a->cfg.base.window, "Window positions")->capture_default_str();
  sub->add_option("--tail", a->cfg.base.tail, "Speculative tail")->capture_default_str();
  sub->add_option("--kv-bits", a->cfg.base.kv_bits, "32, 8 or 4")->capture_default_str();
  sub->add_option("--granularity", a->granularity, "head or layer")->capture_default_str();
  sub->add_option("--budget", a->cfg.budget, "Max exact units selected")->capture_default_str();
  sub->add_option("--target-gap", a->cfg.target_gap, "Stop within this many nats/token of full")->capture_default_str();
  sub->add_option("--threads", a->cfg.threads, "CPU threads")->capture_default_str()->check(CLI::Range(1, 1024));
  sub->add_option("--out", a->out, "Directory for policy.json and calibration.json")->required();
  sub->callback([a, &exit_code] { exit_code = run(*a); });
}

}  // namespace kakeya::engine::cmd
