#pragma once
// Locations and scratch space for tests.
#include <filesystem>
#include <string>

namespace kakeya::testing {

std::filesystem::path source_dir();   // repository root
std::filesystem::path binary_dir();   // CMake build dir (binaries live here)
std::filesystem::path data_dir();     // tests/data
std::filesystem::path models_dir();   // models/ (bundled real model files)
// The project's shared, read-only data beside the checkout (third-party test files such as
// llama.cpp's tokenizer vocabularies, which are never copied into the repository):
// $KAKEYA_SHARED_DIR if set, else <repository root>/../shared. May not exist (a bare clone):
// tests that need it skip with shared_dir_missing()'s reason.
std::filesystem::path shared_dir();
// Empty when `sub` (a path under shared_dir()) exists; else a one-line reason naming the path.
std::string shared_dir_missing(const std::filesystem::path& sub);

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

// The whole file at `p`, byte for byte ("" when it cannot be read).
std::string file_text(const std::filesystem::path& p);

// A TCP port on 127.0.0.1 that was free when asked (bind to port 0, read it back).
int free_tcp_port();

}  // namespace kakeya::testing
