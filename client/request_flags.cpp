#include "client/request_flags.h"

namespace kakeya::client {

void add_request_flags(CLI::App& sub, RequestOptions& opts) {
  sub.add_option("preset", opts.preset, "Preset name from the catalog (see `kakeya presets`)")->required();
  sub.add_option("-p,--param", opts.param_items,
                 "Parameter key=value (repeatable); the value is typed per the catalog and may start with '-'")
      ->allow_extra_args(false)
      ->take_all();
  sub.add_option("--params-json", opts.params_json, "Parameters as a JSON object (-p overrides)");
  sub.add_flag("--no-workload", opts.no_workload, "Send an empty base tree instead of the committed HEAD");
  sub.add_option("--repo", opts.repo,
                 "Repository whose committed HEAD is the workload (default: the one containing cwd)");
  sub.add_option("--suffix", opts.suffix,
                 "Appended to the branch name after the nonce: '-', '.' or '_' then [A-Za-z0-9._-] (e.g. -b876, "
                 ".retry2); a value beginning with '-' is still this option's value");
}

}  // namespace kakeya::client
