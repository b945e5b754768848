#pragma once
// Build identity shared by every binary and written into every report and summary.
#include <string>

namespace kakeya {

// "0.1.0+<git-commit>", e.g. "0.1.0+3fa2c81d9e01".
std::string engine_version();
// Compiler and build type, e.g. "GNU 12.2.0 RelWithDebInfo".
std::string build_info();

}  // namespace kakeya
