#pragma once
// Safe placement of files fetched from a branch into a local destination directory.

#include <filesystem>
#include <string_view>

#include "bridge/result.h"

namespace kakeya::client {

// Joins `relative` (a '/'-separated path taken from a git tree, e.g. "logs/job.log") onto
// `dest` and returns the result. Refuses (error `path_escape`, naming the path) anything that
// could land outside `dest`: an empty path, an absolute path, a "." or ".." component, an empty
// component ("a//b"), a backslash or NUL byte, or — when parts of the result already exist — a
// symlink among them that resolves outside `dest` (checked with weakly_canonical).
Result<std::filesystem::path> safe_join(const std::filesystem::path& dest, std::string_view relative);

}  // namespace kakeya::client
