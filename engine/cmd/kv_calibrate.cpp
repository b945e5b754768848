// kakeya-engine kv-calibrate: rank layers / KV heads by retrieval dependence and write a policy
// file for niah-eval (DIR/policy.json) plus the ranking (DIR/calibration.json)
// (engine/presets/kv_calibrate.h).
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>

#include "engine/cmd/commands.h"
#include "engine/cmd/flags.h"
#include "engine/presets/kv_calibrate.h"

namespace kakeya::engine::cmd {
namespace {

struct Args {
  CommonFlags flags;
  KvCalibrateConfig cfg;
  std::string lines = "20";
  std::string granularity = "head";
};

int run(Args a) {
  const std::string name = "kv-calibrate";
  if (a.granularity != "head" && a.granularity != "layer")
    return fail(name, make_error("bad_param", "--granularity must be head or layer, got " + a.granularity));
  a.cfg.heads = a.granularity == "head";
  auto lines = parse_int_list("--lines", a.lines, 1);
  if (!lines.ok()) return fail(name, lines.error());
  a.cfg.lines = lines.value();
  auto backend = open_flag_backend(a.flags);
  if (!backend.ok()) return fail(name, backend.error());
  auto m = load_model(a.flags.model);
  if (!m.ok()) return fail(name, m.error());
  auto c = kv_calibrate((*m)->model, (*m)->tok, **backend, a.cfg, stderr_progress(name));
  if (!c.ok()) return fail(name, c.error());
  nlohmann::json j = c->to_json();
  j["model"] = model_provenance((*m)->model);
  j["engine"] = engine_info(a.flags.backend, **backend);
  j["config"] = {{"seed", a.cfg.seed}, {"lines", a.cfg.lines}, {"samples", a.cfg.samples},
                 {"granularity", a.granularity}, {"budget", a.cfg.budget}, {"target_gap", a.cfg.target_gap}};
  std::error_code ec;
  std::filesystem::create_directories(a.flags.out, ec);
  if (Status st = save_kv_policy(std::filesystem::path(a.flags.out) / "policy.json", c->policy); !st.ok())
    return fail(name, st.error());
  std::ofstream(std::filesystem::path(a.flags.out) / "calibration.json") << report_json_text(j) << "\n";
  if (a.flags.json) {
    std::cout << report_json_text(j) << "\n";
    return 0;
  }
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
  a->flags.threads = 1;
  a->flags.n_batch = a->cfg.n_batch;
  add_common_flags(sub, a->flags, kModelRunFlags | kNBatchFlag | kOutRequiredFlag | kJsonFlag);
  sub->add_option("--seed", a->cfg.seed, "NIAH seed (use one other than the evaluation's)")->capture_default_str();
  sub->add_option("--lines", a->lines, "Haystack sizes (comma-separated)")->capture_default_str();
  sub->add_option("--samples", a->cfg.samples, "Samples per size")->capture_default_str()->check(CLI::Range(1, 1000));
  sub->add_option("--sink", a->cfg.base.sink, "Sink positions")->capture_default_str();
  sub->add_option("--window", a->cfg.base.window, "Window positions")->capture_default_str();
  sub->add_option("--tail", a->cfg.base.tail, "Speculative tail")->capture_default_str();
  sub->add_option("--kv-bits", a->cfg.base.kv_bits, "32, 8 or 4")->capture_default_str();
  sub->add_option("--granularity", a->granularity, "head or layer")->capture_default_str();
  sub->add_option("--budget", a->cfg.budget, "Max exact units selected")->capture_default_str();
  sub->add_option("--target-gap", a->cfg.target_gap, "Stop within this many nats/token of full")->capture_default_str();
  sub->callback([a, &exit_code] {
    a->cfg.n_batch = a->flags.n_batch;
    exit_code = run(*a);
  });
}

}  // namespace kakeya::engine::cmd
