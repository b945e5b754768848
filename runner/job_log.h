#pragma once
// A job's log file: redacted, well-formed UTF-8, byte-capped, safe to write from the stdout and
// stderr readers at once. Bytes flow write() -> LogFilter (redact, escape ill-formed bytes as
// `\xNN`, redact again; runner/log_filter.h) -> cap -> file, so nothing that matches a secret
// ever reaches the disk, the file is always well-formed UTF-8 (the cap cuts between characters),
// and the cap counts filtered bytes.
//
// Cap: once the next character would take the file past `cap_bytes` filtered bytes, one marker line
//   "[kakeya: log truncated at <cap_bytes> bytes]\n"
// is appended (preceded by "\n" if the last byte written was not a newline) and all further
// bytes are dropped but counted (bytes_dropped()). The file therefore holds at most
// cap_bytes + the marker.

#include <cstddef>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bridge/result.h"
#include "runner/log_filter.h"
#include "runner/redact.h"

namespace kakeya::runner {

class JobLog {
 public:
  // How much of the written log tail() can return (the most recent bytes, kept in memory).
  static constexpr std::size_t kTailKeepBytes = 64 * 1024;

  // Receives every filtered chunk (redacted, whole UTF-8 characters) before the cap applies.
  using Tee = std::function<void(std::string_view)>;

  // Creates (truncating) `path` with mode 0640. `cap_bytes` must be > 0. Secrets shorter than
  // kMinSecretLen are not redacted (see ignored_secrets()). `tee`, when set, is called with the
  // filtered bytes under the log's lock (runner/job_output.h interleaves two streams with it).
  // Errors: "bad_value" (cap 0), "io" (open failed; message names the path and errno).
  static Result<JobLog> create(const std::filesystem::path& path, std::size_t cap_bytes,
                               std::vector<std::string> secrets, Tee tee = nullptr);

  JobLog(JobLog&&) noexcept;
  JobLog& operator=(JobLog&&) noexcept;
  ~JobLog();  // close()s

  // Appends bytes. Thread-safe. Writes after close() are ignored.
  void write(std::string_view data);

  // Redacted bytes in the file, excluding the truncation marker. <= cap_bytes.
  std::size_t bytes_written() const;
  // Redacted bytes that arrived after the cap and were not written.
  std::size_t bytes_dropped() const;
  bool truncated() const;

  // The last min(max_bytes, kTailKeepBytes) bytes of the file as written so far (marker
  // included), starting on a UTF-8 character boundary (leading continuation bytes are
  // skipped): well-formed UTF-8, so it can go into JSON. Bytes held back by the redactor are not included until
  // they are decided (or close()).
  std::string tail(std::size_t max_bytes) const;

  // Secrets given to create() that are not redacted, with reasons (no secret values).
  std::vector<IgnoredSecret> ignored_secrets() const;

  // First I/O error while writing, if any (later bytes are dropped after an error).
  std::optional<Error> error() const;

  // Flushes the redactor (end of stream), closes the file. Idempotent, thread-safe.
  void close();

  const std::filesystem::path& path() const;

 private:
  struct State;
  explicit JobLog(std::unique_ptr<State> state);
  std::unique_ptr<State> s_;
};

// The marker line written when the cap is reached (without leading newline).
std::string truncation_marker(std::size_t cap_bytes);

}  // namespace kakeya::runner
