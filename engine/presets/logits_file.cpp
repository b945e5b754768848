#include "engine/presets/logits_file.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
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

Result<LogitsMatrix> read_logits_npy(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error("io", "cannot open logits file " + path + ": " + std::strerror(errno));
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto bad = [&](const std::string& what) { return make_error("parse_error", path + ": " + what); };
  if (bytes.size() < 10 || bytes.compare(0, 6, "\x93NUMPY") != 0) return bad("not a .npy file (no \\x93NUMPY magic)");
  if (bytes[6] != 1) return bad("npy format version " + std::to_string(static_cast<int>(bytes[6])) + " (want 1)");
  const size_t header_len = static_cast<uint8_t>(bytes[8]) | (static_cast<size_t>(static_cast<uint8_t>(bytes[9])) << 8);
  if (bytes.size() < 10 + header_len) return bad("header longer than the file");
  const std::string header = bytes.substr(10, header_len);
  if (header.find("'descr': '<f4'") == std::string::npos) return bad("dtype is not '<f4' in " + header);
  if (header.find("'fortran_order': False") == std::string::npos) return bad("not C order in " + header);
  const size_t open = header.find("'shape': (");
  const size_t close = header.find(')', open);
  if (open == std::string::npos || close == std::string::npos) return bad("no shape in " + header);
  const std::string shape = header.substr(open + 10, close - open - 10);
  LogitsMatrix m;
  unsigned long long rows = 0, cols = 0;
  if (std::sscanf(shape.c_str(), "%llu, %llu", &rows, &cols) != 2) return bad("shape (" + shape + ") is not 2-D");
  m.rows = rows;
  m.n_vocab = static_cast<int64_t>(cols);
  const size_t want = static_cast<size_t>(rows * cols) * sizeof(float);
  if (bytes.size() - 10 - header_len != want) {
    return bad("shape (" + shape + ") needs " + std::to_string(want) + " data bytes, the file has " +
               std::to_string(bytes.size() - 10 - header_len));
  }
  m.data.resize(static_cast<size_t>(rows * cols));
  std::memcpy(m.data.data(), bytes.data() + 10 + header_len, want);
  return m;
}

}  // namespace kakeya::engine
