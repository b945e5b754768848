#pragma once
// The runner's work_dir and how much of it is kept (config keep_failed_jobs[_bytes]):
//   work_dir/cache/<name>/    git object caches (discovery, one per job slot)
//   work_dir/jobs/<branch>/   one job's directory: out/ (${OUT}), job.log, stdout.log, stderr.log
//   work_dir/spool/<branch>/  finished results waiting for the remote (runner/publish.h)
//   work_dir/state.json       what the daemon is doing (runner/status_file.h)
// A job's directory is removed once its result is published (or spooled: the spool holds its own
// copy) when the job succeeded or never ran; the directories of jobs that did not succeed are kept
// for debugging, newest first, at most `keep` of them and at most `keep_bytes` together; older
// ones are removed. At start-up directories left by a previous run count as kept ones.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <set>
#include <string>

namespace kakeya::runner {

// Bytes of the regular files under `dir` (recursively; symlinks not followed); 0 when absent.
uint64_t directory_bytes(const std::filesystem::path& dir);

struct PruneResult {
  int removed = 0;          // directories removed now
  int kept = 0;             // directories kept (not counting `active` ones)
  uint64_t kept_bytes = 0;  // their bytes
};

// Keeps the newest (by modification time) sub-directories of `jobs_root` that are not in
// `active`, at most `keep` of them and at most `keep_bytes` together (a directory that alone is
// larger than `keep_bytes` is removed), and removes the rest. Directories in `active` (jobs
// running now) are neither counted nor touched.
PruneResult prune_job_dirs(const std::filesystem::path& jobs_root, const std::set<std::filesystem::path>& active,
                           int keep, uint64_t keep_bytes);

// A job's directory once its job ended: removed when `keep` is false, else marked as the newest
// (its modification time set to now) so that prune_job_dirs keeps it first.
void release_job_dir(const std::filesystem::path& dir, bool keep);

}  // namespace kakeya::runner
