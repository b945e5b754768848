#pragma once
// Locations and scratch space for tests.
#include <filesystem>
#include <string>

namespace kakeya::testing {

std::filesystem::path source_dir();   // repository root
std::filesystem::path binary_dir();   // CMake build dir (binaries live here)
std::filesystem::path data_dir();     // tests/data
std::filesystem::path models_dir();   // models/ (bundled real model files)

// A fresh directory under $TMPDIR, removed by the destructor unless KAKEYA_KEEP_TMP is set.
class TempDir {
 public:
  explicit TempDir(const std::string& prefix = "kakeya-test");
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// A TCP port on 127.0.0.1 that was free when asked (bind to port 0, read it back).
int free_tcp_port();

}  // namespace kakeya::testing
