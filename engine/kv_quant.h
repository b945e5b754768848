#pragma once
// Affine (asymmetric) quantization of KV rows, for quantized KV-cache storage.
//
// A row of `row` floats is cut into groups of `group` consecutive values (the last group may be
// shorter). Per group: min m and scale s = (max - m) / (2^bits - 1), both stored as f32; each
// value is stored as q = clamp(round((x - m) / s), 0, 2^bits - 1) and read back as m + q * s.
// bits 8: one byte per value; bits 4: two values per byte (low nibble first). A group whose
// values are all equal has s = 0 and decodes exactly. Source: the usual affine "scale + min"
// scheme (as in ggml's Q4_1/Q8_1 blocks, here with f32 scale and min and a free group size).
#include <cstddef>
#include <cstdint>

namespace kakeya::engine {

class AffineRowCodec {
 public:
  AffineRowCodec() = default;
  // REQUIRES: bits is 4 or 8; row >= 1; group >= 1.
  AffineRowCodec(size_t row, size_t group, int bits);

  size_t row() const { return row_; }
  size_t group() const { return group_; }
  int bits() const { return bits_; }
  size_t n_groups() const { return (row_ + group_ - 1) / group_; }
  // Bytes of one encoded row: codes (row bytes for 8-bit, ceil(row / 2) for 4-bit) followed by
  // n_groups() (scale, min) f32 pairs.
  size_t bytes_per_row() const;

  // x: [row] floats → out: [bytes_per_row()] bytes.
  void encode(const float* x, uint8_t* out) const;
  // in: [bytes_per_row()] bytes → x: [row] floats.
  void decode(const uint8_t* in, float* x) const;

 private:
  size_t code_bytes() const { return bits_ == 8 ? row_ : (row_ + 1) / 2; }
  size_t row_ = 0;
  size_t group_ = 64;
  int bits_ = 8;
};

}  // namespace kakeya::engine
