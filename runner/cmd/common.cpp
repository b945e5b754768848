#include "runner/cmd/common.h"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <iostream>

namespace kakeya::runner::cmd {

void add_common_options(CLI::App* sub, CommonOptions& o) {
  sub->add_option("-c,--config", o.config_path, "Runner config YAML")->required();
  sub->add_option("--log-format", o.log_format, "auto (text on a TTY, JSON lines otherwise), text or json")
      ->check(CLI::IsMember({"auto", "text", "json"}));
  sub->add_option("--log-level", o.log_level, "trace, debug, info, warn, error")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error"}));
}

void setup_logging(const CommonOptions& o) {
  auto logger = spdlog::stderr_color_mt("kakeya-runner");
  const bool json = o.log_format == "json" || (o.log_format == "auto" && !isatty(STDERR_FILENO));
  if (json) {
    logger->set_pattern(R"({"t":"%Y-%m-%dT%H:%M:%S.%e%z","level":"%l","thread":%t,"msg":"%v"})");
  } else {
    logger->set_pattern("%Y-%m-%d %H:%M:%S.%e %^%-5l%$ %v");
  }
  spdlog::set_default_logger(logger);
  spdlog::set_level(spdlog::level::from_str(o.log_level));
  spdlog::flush_on(spdlog::level::info);
}

std::unique_ptr<Loaded> load_all(const CommonOptions& o) {
  auto cfg = load_runner_config(o.config_path);
  if (!cfg.ok()) {
    std::cerr << "kakeya-runner: config: " << cfg.error().message << "\n";
    return nullptr;
  }
  auto catalog = bridge::PresetCatalog::load_file(cfg->catalog_path);
  if (!catalog.ok()) {
    std::cerr << "kakeya-runner: catalog: " << catalog.error().message << "\n";
    return nullptr;
  }
  auto creds = bridge::load_credentials(cfg->remote_url, cfg->credentials_file);
  if (!creds.ok()) {
    std::cerr << "kakeya-runner: credentials: " << creds.error().message << "\n";
    return nullptr;
  }
  return std::unique_ptr<Loaded>(new Loaded{std::move(cfg).value(), std::move(catalog).value(), std::move(creds).value()});
}

}  // namespace kakeya::runner::cmd
