#include "runner/log_filter.h"

namespace kakeya::runner {

std::vector<std::string> well_formed_secrets(const std::vector<std::string>& secrets) {
  std::vector<std::string> out;
  for (const auto& s : secrets) {
    if (bridge::is_valid_utf8(s)) out.push_back(s);
  }
  return out;
}

LogFilter::LogFilter(const std::vector<std::string>& secrets, Sink sink)
    : sink_(std::move(sink)),
      escaped_(well_formed_secrets(secrets), [this](std::string_view d) { sink_(d); }),
      escaper_([this](std::string_view d) { escaped_.write(d); }),
      raw_(secrets, [this](std::string_view d) { escaper_.write(d); }) {}

void LogFilter::write(std::string_view data) { raw_.write(data); }

void LogFilter::flush() {
  raw_.flush();
  escaper_.flush();
  escaped_.flush();
}

}  // namespace kakeya::runner
