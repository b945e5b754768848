// kakeya-engine synth: write a deterministic random-weight Llama GGUF (see engine/presets/synth.h).
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/cmd/commands.h"
#include "engine/cmd/flags.h"
#include "engine/ggml_types.h"
#include "engine/presets/report.h"
#include "engine/presets/synth.h"

namespace kakeya::engine::cmd {
namespace {

struct SynthArgs {
  std::string shape = "custom";
  int64_t n_embd = 0, n_ff = 0, n_layer = 0, n_head = 0, n_head_kv = 0, n_vocab = 0, n_ctx = 0;
  std::string type = "f32";
  std::string mix;  // a llama.cpp file type: per-tensor types by llama-quantize's rules
  uint64_t seed = 0;
  std::string out;
  std::string vocab_from = "models/stories260K-f32.gguf";
  CommonFlags flags;  // --threads, --json
};

int run_synth(const SynthArgs& a) {
  const std::string name = "synth";
  auto fail = [&](const Error& e) { return cmd::fail(name, e); };
  auto threads = resolve_threads(a.flags.threads);
  if (!threads.ok()) return fail(threads.error());
  auto shape = synth_shape(a.shape);
  if (!shape.ok()) return fail(shape.error());
  const std::pair<int64_t, int64_t*> overrides[] = {
      {a.n_embd, &shape->n_embd},   {a.n_ff, &shape->n_ff},         {a.n_layer, &shape->n_layer},
      {a.n_head, &shape->n_head},   {a.n_head_kv, &shape->n_head_kv}, {a.n_vocab, &shape->n_vocab},
      {a.n_ctx, &shape->n_ctx}};
  for (const auto& [value, field] : overrides) {
    if (value == 0) continue;
    if (a.shape != "custom")
      return fail(make_error("bad_param", "size overrides (--n-embd ...) need --shape custom, not " + a.shape));
    *field = value;
  }
  auto type = ggml_type_from_name(a.type.c_str());
  if (!type.ok()) return fail(type.error());
  SynthOptions o;
  o.shape = shape.value();
  o.type = type.value();
  if (!a.mix.empty()) {
    auto mix = llama_file_type_from_name(a.mix);
    if (!mix.ok()) return fail(mix.error());
    o.mix = mix.value();
  }
  o.seed = a.seed;
  o.vocab_source = a.vocab_from;
  o.n_threads = threads.value();
  if (Status st = write_synth_model(o, a.out); !st.ok()) return fail(st.error());
  std::error_code ec;
  if (a.flags.json) {
    nlohmann::json j = {{"kind", "synth"},   {"path", a.out},
                        {"file_size_bytes", std::filesystem::file_size(a.out, ec)},
                        {"shape", o.shape.name}, {"type", ggml_type_name(o.type)},
                        {"seed", o.seed},      {"synthetic", true}};
    if (o.mix) j["mix"] = llama_file_type_name(*o.mix);
    std::cout << report_json_text(j) << "\n";
    return 0;
  }
  std::cout << "synth: wrote " << a.out << " (" << std::filesystem::file_size(a.out, ec) << " bytes, "
            << o.shape.name << ", " << (o.mix ? llama_file_type_name(*o.mix) : ggml_type_name(o.type)) << ", seed "
            << o.seed << ")\n";
  return 0;
}

}  // namespace

void add_synth(CLI::App& app, int& exit_code) {
  auto* sub = app.add_subcommand("synth", "Write a deterministic random-weight Llama GGUF (kakeya.synthetic = true)");
  auto a = std::make_shared<SynthArgs>();
  sub->add_option("--shape", a->shape, "tinyllama-1.1b, llama-7b or custom")
      ->check(CLI::IsMember({"tinyllama-1.1b", "llama-7b", "custom"}))
      ->capture_default_str();
  sub->add_option("--n-embd", a->n_embd, "custom: embedding width");
  sub->add_option("--n-ff", a->n_ff, "custom: feed-forward width");
  sub->add_option("--n-layer", a->n_layer, "custom: layers");
  sub->add_option("--n-head", a->n_head, "custom: attention heads");
  sub->add_option("--n-head-kv", a->n_head_kv, "custom: KV heads");
  sub->add_option("--n-vocab", a->n_vocab, "custom: vocabulary size (512 copies the stories260K vocabulary)");
  sub->add_option("--n-ctx", a->n_ctx, "custom: context length");
  std::vector<std::string> types, mixes;
  for (GgmlType t : ggml_storage_types()) types.push_back(ggml_type_name(t));
  for (LlamaFileType f : llama_file_types()) mixes.push_back(llama_file_type_name(f));
  sub->add_option("--type", a->type, "Type of every 2-D tensor (as llama-quantize --pure)")
      ->check(CLI::IsMember(types, CLI::ignore_case))
      ->capture_default_str();
  sub->add_option("--mix", a->mix,
                  "llama.cpp file type whose per-tensor rules choose each 2-D tensor's type (q4_k_m, q5_k_m, "
                  "q3_k_m, q4_k_s, ...: as llama-quantize without --pure); replaces --type")
      ->check(CLI::IsMember(mixes, CLI::ignore_case));
  sub->add_option("--seed", a->seed, "Random seed")->capture_default_str();
  sub->add_option("--out", a->out, "Output .gguf file")->required();
  sub->add_option("--vocab-from", a->vocab_from,
                  "GGUF whose tokenizer arrays are copied when --n-vocab matches its size")
      ->capture_default_str();
  add_common_flags(sub, a->flags, kThreadsFlag | kJsonFlag);
  sub->callback([a, &exit_code] { exit_code = run_synth(*a); });
}

}  // namespace kakeya::engine::cmd
