#pragma once
// A job's output on disk, each stream kept apart (issue 13: a progress line on stderr must never
// splice into generated text on stdout):
//   stdout.log  the job's stdout alone, as it wrote it
//   stderr.log  its stderr alone
//   job.log     both, interleaved by whole lines: each stream is cut into lines on its own ('\n',
//               or '\r' for progress lines that redraw themselves), a line goes in only once it
//               is complete, and when the stream changes after a byte other than '\n' a '\n' is
//               added first. A line held back longer than kMaxHeldLineBytes goes in as it is.
// Each file is a JobLog (runner/job_log.h): redacted, well-formed UTF-8, capped at `cap_bytes`.
// job.log is what status.json's log_tail, `kakeya logs` and the summary's log stats describe;
// the interleaving works on the filtered bytes of the two stream logs, so a secret is redacted
// before it is cut into lines.
#include <cstddef>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "bridge/result.h"
#include "runner/job_log.h"

namespace kakeya::runner {

class JobOutput {
 public:
  static constexpr std::size_t kMaxHeldLineBytes = 4096;
  static constexpr const char* kCombinedFile = "job.log";
  static constexpr const char* kStdoutFile = "stdout.log";
  static constexpr const char* kStderrFile = "stderr.log";

  // Creates the three files in `dir` (mode 0640, truncated). Errors: JobLog::create's.
  static Result<std::unique_ptr<JobOutput>> create(const std::filesystem::path& dir, std::size_t cap_bytes,
                                                   const std::vector<std::string>& secrets);
  ~JobOutput();

  // Bytes from the job: `stream` 1 = stdout, 2 = stderr (runner/process.h OutputCallback).
  // REQUIRES: one writer thread (the process's I/O thread).
  void write(int stream, std::string_view data);
  // End of output: held lines go in, the files are closed. Idempotent.
  void close();

  JobLog& combined() { return *combined_; }
  const JobLog& stream_log(int stream) const { return stream == 2 ? *err_ : *out_; }

 private:
  JobOutput() = default;
  // A filtered chunk of `stream` (called under that stream log's lock).
  void interleave(int stream, std::string_view data);
  // Writes `line` of `stream` to job.log. REQUIRES: mu_ held.
  void emit(int stream, std::string_view line);

  std::unique_ptr<JobLog> out_, err_, combined_;
  std::mutex mu_;
  std::string held_[3];  // by stream (1, 2): bytes after the last line end
  int last_stream_ = 0;
  char last_byte_ = '\n';
  bool closed_ = false;
};

}  // namespace kakeya::runner
