#include "client/output.h"

#include <unistd.h>

#include <array>
#include <iostream>
#include <string_view>

#include "bridge/json_text.h"
#include "bridge/utf8.h"
#include "client/settings.h"

namespace kakeya::client {

int report_error(const Error& error, int exit_code) {
  // Messages quote branch names and values from the remote: one escaped line.
  const std::string msg = bridge::printable(error.message);
  std::cerr << "kakeya: " << error.code << ": " << msg << std::endl;
  return exit_code;
}

bool is_usage_error(const Error& error) {
  static constexpr ErrorCode kUsage[] = {
      errc::kUsage,        errc::kNoRemote,       errc::kBadPrefix , errc::kBadParam,
      errc::kUnknownParam, errc::kDuplicateParam, errc::kMissingParam, errc::kBadType,
      errc::kOutOfRange,   errc::kBadValue,       errc::kUnknownPreset, errc::kBadSuffix,
      errc::kBadState};
  for (auto c : kUsage) {
    if (error.code == c) return true;
  }
  return false;
}

int fail(const Error& error) { return report_error(error, is_usage_error(error) ? kExitUsage : kExitFailure); }

void print_json(const nlohmann::json& doc) {
  std::cout << bridge::to_json_text(doc, 2) << std::endl;
}

bool stdin_is_tty() { return isatty(STDIN_FILENO) == 1; }
bool stderr_is_tty() { return isatty(STDERR_FILENO) == 1; }
bool stdout_is_tty() { return isatty(STDOUT_FILENO) == 1; }

}  // namespace kakeya::client
