#include "client/output.h"

#include <unistd.h>

#include <iostream>
#include <string_view>

#include "bridge/credentials.h"
#include "bridge/json_text.h"
#include "bridge/utf8.h"

namespace kakeya::client {

int report_error(const GlobalOptions& g, const Error& error, int exit_code) {
  // Messages quote branch names and values from the remote: one escaped line.
  const std::string msg = bridge::printable(error.message);
  std::cerr << "kakeya: " << error.code << ": " << msg << std::endl;
  if (g.json) {
    std::cout << bridge::to_json_text(nlohmann::json{{"error", {{"code", error.code.str()}, {"message", error.message}}},
                                                     {"exit_code", exit_code}})
              << std::endl;
  }
  return exit_code;
}

bool is_usage_error(const Error& error) {
  static constexpr ErrorCode kUsage[] = {
      errc::kUsage,        errc::kNoRemote,       errc::kBadPrefix,    errc::kBadParam,
      errc::kUnknownParam, errc::kDuplicateParam, errc::kMissingParam, errc::kBadType,
      errc::kOutOfRange,   errc::kBadValue,       errc::kUnknownPreset, errc::kBadSuffix,
      errc::kBadState,     errc::kBadDuration,    errc::kCredentialsInUrl, errc::kBadRemoteUrl};
  for (auto c : kUsage) {
    if (error.code == c) return true;
  }
  return false;
}

int exit_code_for(const Error& error) {
  if (is_usage_error(error)) return kExitUsage;
  if (is_remote_error(error.code)) return kExitRemote;
  return kExitFailure;
}

int fail(const GlobalOptions& g, const Error& error) {
  if (error.code != errc::kAuthFailed) return report_error(g, error, exit_code_for(error));
  bridge::Credentials used;
  auto remote = resolve_remote(g);
  if (remote.ok()) {
    if (auto creds = bridge::load_credentials(*remote, g.credentials_file); creds.ok()) used = std::move(creds).value();
  }
  const Error told = bridge::explain_auth_failure(error, remote.ok() ? *remote : std::string(), used,
                                                  "--credentials-file FILE");
  return report_error(g, told, exit_code_for(told));
}

void print_json(const nlohmann::json& doc) {
  std::cout << bridge::to_json_text(doc, 2) << std::endl;
}

bool stdin_is_tty() { return isatty(STDIN_FILENO) == 1; }
bool stderr_is_tty() { return isatty(STDERR_FILENO) == 1; }
bool stdout_is_tty() { return isatty(STDOUT_FILENO) == 1; }

}  // namespace kakeya::client
