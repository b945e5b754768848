// kakeya-engine quantize [--pure] [--json] IN OUT TYPE: a copy of the GGUF model IN re-typed to
// the llama.cpp file type TYPE (q8_0, q4_k_m, f16, ...), written to OUT by the engine's own
// writer and quantizers (engine/requantize.h), in llama-quantize's argument order. Prints one
// summary line (or a JSON object with --json). Exit 0 written, 1 failed (the reason on stderr),
// 64 usage.
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/cmd/commands.h"
#include "engine/cmd/flags.h"
#include "engine/gguf.h"
#include "engine/model.h"
#include "engine/presets/report.h"
#include "engine/requantize.h"

namespace kakeya::engine::cmd {
namespace {

struct QuantizeArgs {
  std::string in, out, type;
  bool pure = false;
  CommonFlags flags;  // --json
};

int run_quantize(const QuantizeArgs& a) {
  auto fail = [](const Error& e) { return cmd::fail("quantize", e); };
  std::error_code ec;
  if (std::filesystem::equivalent(a.in, a.out, ec)) {
    return fail(make_error("bad_param", "OUT " + a.out + " is the input file; write the copy elsewhere"));
  }
  auto ftype = llama_file_type_from_name(a.type);
  if (!ftype.ok()) return fail(ftype.error());
  auto model = LlamaModel::load(a.in);
  if (!model.ok()) return fail(model.error());
  RequantizeOptions o;
  o.ftype = *ftype;
  o.pure = a.pure;
  auto written = write_requantized(*model, o, a.out);
  if (!written.ok()) return fail(written.error());
  auto check = GgufFile::open(a.out);  // what was written reads back
  if (!check.ok()) return fail(check.error());
  const std::string sha = check->sha256();
  if (a.flags.json) {
    std::cout << report_json_text({{"kind", "quantize"},
                                   {"input", a.in},
                                   {"input_sha256", model->gguf().sha256()},
                                   {"output", a.out},
                                   {"output_sha256", sha},
                                   {"file_type", llama_file_type_name(*ftype)},
                                   {"pure", a.pure},
                                   {"tensors_retyped", written->retyped},
                                   {"tensors_kept", written->kept},
                                   {"file_size_bytes", written->bytes}})
              << "\n";
  } else {
    std::cout << "quantize: wrote " << a.out << " (" << llama_file_type_name(*ftype) << (a.pure ? ", pure" : "")
              << ", " << written->retyped << " tensors re-typed, " << written->kept << " kept, " << written->bytes
              << " bytes, sha256 " << sha << ")\n";
  }
  return 0;
}

}  // namespace

void add_quantize(CLI::App& app, int& exit_code) {
  auto* sub = app.add_subcommand("quantize", "Write a copy of a GGUF model re-typed to a llama.cpp file type (as llama-quantize)");
  auto a = std::make_shared<QuantizeArgs>();
  std::vector<std::string> types;
  for (LlamaFileType f : llama_file_types()) types.push_back(llama_file_type_name(f));
  sub->add_option("input", a->in, "Input GGUF model")->required()->check(CLI::ExistingFile);
  sub->add_option("output", a->out, "Output GGUF file (created or replaced)")->required();
  sub->add_option("type", a->type, "llama.cpp file type (q8_0, q4_0, q4_k_m, f16, ...)")
      ->required()
      ->check(CLI::IsMember(types, CLI::ignore_case));
  sub->add_flag("--pure", a->pure, "Every 2-D tensor gets the type's default type (llama-quantize --pure)");
  add_common_flags(sub, a->flags, kJsonFlag);
  sub->callback([a, &exit_code] { exit_code = run_quantize(*a); });
}

}  // namespace kakeya::engine::cmd
