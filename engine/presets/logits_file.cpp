#include "engine/presets/logits_file.h"

#include <cerrno>
#include <cstring>
#include <utility>

namespace kakeya::engine {
namespace {

// Magic (6) + version (2) + header length (2) + header: 128 bytes in all, room for any shape.
constexpr size_t kHeaderBytes = 128;

}  // namespace

Result<LogitsFile> LogitsFile::create(const std::string& path, int64_t n_vocab) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return make_error("io", "cannot create logits file " + path + ": " + std::strerror(errno));
  LogitsFile out(f, path, n_vocab);
  KAKEYA_TRY(out.write_header());
  return out;
}

LogitsFile::LogitsFile(LogitsFile&& o) noexcept
    : f_(std::exchange(o.f_, nullptr)), path_(std::move(o.path_)), n_vocab_(o.n_vocab_), rows_(o.rows_) {}

LogitsFile::~LogitsFile() {
  if (f_ != nullptr) std::fclose(f_);
}

Status LogitsFile::write_header() {
  std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + std::to_string(rows_) + ", " +
                     std::to_string(n_vocab_) + "), }";
  // Padded with spaces and ended by '\n' so the data starts at kHeaderBytes (a multiple of 64).
  const size_t header_len = kHeaderBytes - 10;
  dict.resize(header_len - 1, ' ');
  dict += '\n';
  char prefix[10] = {'\x93', 'N', 'U', 'M', 'P', 'Y', 1, 0, static_cast<char>(header_len & 0xff),
                     static_cast<char>(header_len >> 8)};
  if (std::fseek(f_, 0, SEEK_SET) != 0 || std::fwrite(prefix, 1, sizeof prefix, f_) != sizeof prefix ||
      std::fwrite(dict.data(), 1, dict.size(), f_) != dict.size()) {
    return make_error("io", "cannot write the header of logits file " + path_);
  }
  return ok_status();
}

Status LogitsFile::append(std::span<const float> row) {
  if (std::fseek(f_, 0, SEEK_END) != 0 || std::fwrite(row.data(), sizeof(float), row.size(), f_) != row.size()) {
    return make_error("io", "cannot write logits file " + path_);
  }
  ++rows_;
  return ok_status();
}

Status LogitsFile::finish() {
  KAKEYA_TRY(write_header());
  const bool ok = std::fclose(f_) == 0;
  f_ = nullptr;
  if (!ok) return make_error("io", "cannot close logits file " + path_);
  return ok_status();
}

}  // namespace kakeya::engine
