#pragma once
// Logits written for comparison with another engine, position by position: a NumPy .npy file
// (format version 1.0: the magic "\x93NUMPY", a little-endian header length, a Python-dict header
// {'descr': '<f4', 'fortran_order': False, 'shape': (rows, n_vocab)}, then the float32 rows), so
// `numpy.load(FILE)` reads it as an array [rows][n_vocab].
//
// Rows are appended as they are produced; the header is written first with room for any shape
// and rewritten with the final row count by finish().
#include <cstdint>
#include <cstdio>
#include <span>
#include <string>
#include <vector>

#include "bridge/result.h"

namespace kakeya::engine {

class LogitsFile {
 public:
  // Creates `path` for rows of n_vocab floats. Errors: "io" naming the path.
  static Result<LogitsFile> create(const std::string& path, int64_t n_vocab);
  LogitsFile(LogitsFile&& other) noexcept;
  LogitsFile& operator=(LogitsFile&&) = delete;
  ~LogitsFile();

  // Appends one row. REQUIRES: row.size() == n_vocab. Errors: "io".
  Status append(std::span<const float> row);
  // Writes the final shape and closes the file. Errors: "io".
  Status finish();
  size_t rows() const { return rows_; }

 private:
  LogitsFile(std::FILE* f, std::string path, int64_t n_vocab) : f_(f), path_(std::move(path)), n_vocab_(n_vocab) {}
  Status write_header();
  std::FILE* f_ = nullptr;
  std::string path_;
  int64_t n_vocab_ = 0;
  size_t rows_ = 0;
};

// A logits matrix read back from a .npy file: this class's files, or numpy.save of a C-order
// float32 2-D array ('<f4', fortran_order False), e.g. PyTorch reference logits.
struct LogitsMatrix {
  size_t rows = 0;
  int64_t n_vocab = 0;
  std::vector<float> data;  // [rows][n_vocab]
};
// Errors: "io" naming the path; "parse_error" naming the path and what is not as above (magic,
// version, dtype, order, shape, or a data size that disagrees with the shape).
Result<LogitsMatrix> read_logits_npy(const std::string& path);

}  // namespace kakeya::engine
