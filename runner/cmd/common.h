#pragma once
// Shared start-up for runner subcommands: logging, config, catalog, credentials.
#include <CLI/CLI.hpp>

#include <memory>
#include <string>

#include "bridge/catalog.h"
#include "bridge/credentials.h"
#include "runner/config.h"

namespace kakeya::runner::cmd {

struct CommonOptions {
  std::string config_path;
  std::string log_format = "auto";  // auto | text | json
  std::string log_level = "info";
};

void add_common_options(CLI::App* sub, CommonOptions& o);
void setup_logging(const CommonOptions& o);

struct Loaded {
  RunnerConfig cfg;
  bridge::PresetCatalog catalog;
  bridge::Credentials creds;
};
// Loads config, then the runner's INSTALLED catalog (never one from a request branch), then the
// git credentials. Prints one clear line per error on stderr. nullptr on failure.
std::unique_ptr<Loaded> load_all(const CommonOptions& o);

}  // namespace kakeya::runner::cmd
