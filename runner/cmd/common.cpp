#include "runner/cmd/common.h"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <iostream>

#include <nlohmann/json.hpp>
#include <spdlog/pattern_formatter.h>

#include "bridge/json_text.h"
#include "bridge/utf8.h"
#include "runner/device_labels.h"
#include "runner/log_fields.h"

namespace kakeya::runner::cmd {
namespace {

// Log messages quote branch names, request values and job output: whatever their bytes, a log
// record stays one line of well-formed UTF-8 (`%*` for text lines: printable() escapes invalid
// bytes and control characters) or one valid JSON line (`%&`: the message as a JSON string).
class SafeMessage final : public spdlog::custom_flag_formatter {
 public:
  explicit SafeMessage(bool json) : json_(json) {}
  void format(const spdlog::details::log_msg& msg, const std::tm&, spdlog::memory_buf_t& dest) override {
    const std::string_view payload(msg.payload.data(), msg.payload.size());
    const std::string text = json_ ? bridge::to_json_text(nlohmann::json(std::string(payload)))
                                   : bridge::printable(payload);
    dest.append(text.data(), text.data() + text.size());
  }
  std::unique_ptr<custom_flag_formatter> clone() const override { return std::make_unique<SafeMessage>(json_); }

 private:
  bool json_;
};

// `%F`: the structured fields of the logging thread (runner/log_fields.h) as `,"name":value`.
class LogFieldsFlag final : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg&, const std::tm&, spdlog::memory_buf_t& dest) override {
    const std::string text = current_log_fields_json();
    dest.append(text.data(), text.data() + text.size());
  }
  std::unique_ptr<custom_flag_formatter> clone() const override { return std::make_unique<LogFieldsFlag>(); }
};

}  // namespace

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
  auto formatter = std::make_unique<spdlog::pattern_formatter>();
  if (json) {
    formatter->add_flag<SafeMessage>('&', true).add_flag<LogFieldsFlag>('F').set_pattern(
        R"({"t":"%Y-%m-%dT%H:%M:%S.%e%z","level":"%l","thread":%t,"msg":%&%F})");
  } else {
    formatter->add_flag<SafeMessage>('*', false).set_pattern("%Y-%m-%d %H:%M:%S.%e %^%-5l%$ %*");
  }
  logger->set_formatter(std::move(formatter));
  spdlog::set_default_logger(logger);
  spdlog::set_level(spdlog::level::from_str(o.log_level));
  spdlog::flush_on(spdlog::level::info);
}

std::unique_ptr<Loaded> load_all(const CommonOptions& o) {
  auto cfg = load_runner_config(o.config_path);
  if (!cfg.ok()) {
    std::cerr << "kakeya-runner: config: " << bridge::printable(cfg.error().message) << "\n";
    return nullptr;
  }
  // Hardware labels (vulkan) come from the devices found now, never from the config.
  std::string why;
  const auto detected = detect_device_labels(cfg.value(), &why);
  const bool configured = std::find(cfg->labels.begin(), cfg->labels.end(), "vulkan") != cfg->labels.end();
  if (configured && detected.empty()) spdlog::warn("label 'vulkan' dropped: {}", why);
  if (!detected.empty()) spdlog::info("label 'vulkan': {}", bridge::printable(why.substr(0, why.find('\n'))));
  apply_device_labels(cfg.value(), detected);
  auto catalog = bridge::PresetCatalog::load_file(cfg->catalog_path);
  if (!catalog.ok()) {
    std::cerr << "kakeya-runner: catalog: " << bridge::printable(catalog.error().message) << "\n";
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
