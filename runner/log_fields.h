#pragma once
// Structured fields on the runner's own log records. With `--log-format json` every record is
// one JSON object: t, level, thread, msg, and the fields in effect on the logging thread, e.g.
//   {"t":"...","level":"info","thread":7,"msg":"kakeya/req/x: published succeeded (exit code 0)",
//    "branch":"kakeya/req/x","preset":"generate","claim_gen":1,"attempt":1,"state":"succeeded",
//    "duration_s":3.2}
// so a log pipeline filters on fields instead of parsing messages. The text format shows the
// message only (it already names the branch).
// Field names used by the runner: branch, preset, claim_gen, attempt (a job thread sets them for
// its whole life), state, duration_s, error_code (set around the record that reports them).
// Values are JSON strings or numbers; strings are untrusted text (branch names) and are written
// with bridge/json_text.h, which escapes bytes that are not UTF-8.
#include <initializer_list>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

namespace kakeya::runner {

// Adds fields to every record logged on this thread while it lives. Scopes nest; a field set by
// an inner scope overrides the same name from an outer one. REQUIRES: destroyed on the thread
// that created it, in reverse order of creation (a plain local variable).
class ScopedLogFields {
 public:
  ScopedLogFields(std::initializer_list<std::pair<const char*, nlohmann::json>> fields);
  ~ScopedLogFields();
  ScopedLogFields(const ScopedLogFields&) = delete;
  ScopedLogFields& operator=(const ScopedLogFields&) = delete;

 private:
  std::size_t count_;
};

// `,"name":value` for each field in effect on this thread (innermost wins, outer order kept);
// empty when there are none. Appended by the JSON log formatter after "msg".
std::string current_log_fields_json();

}  // namespace kakeya::runner
