#include "engine/kv_quant.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace kakeya::engine {

AffineRowCodec::AffineRowCodec(size_t row, size_t group, int bits)
    : row_(row), group_(std::max<size_t>(1, group)), bits_(bits) {}

size_t AffineRowCodec::bytes_per_row() const {
  return code_bytes() + n_groups() * 2 * sizeof(float);
}

void AffineRowCodec::encode(const float* x, uint8_t* out) const {
  const int qmax = (1 << bits_) - 1;
  uint8_t* codes = out;
  uint8_t* params = out + code_bytes();
  if (bits_ == 4) std::memset(codes, 0, code_bytes());
  for (size_t g = 0; g < n_groups(); ++g) {
    const size_t i0 = g * group_;
    const size_t i1 = std::min(row_, i0 + group_);
    float mn = x[i0], mx = x[i0];
    for (size_t i = i0; i < i1; ++i) {
      mn = std::min(mn, x[i]);
      mx = std::max(mx, x[i]);
    }
    const float scale = (mx - mn) / static_cast<float>(qmax);
    const float inv = scale > 0.0f ? 1.0f / scale : 0.0f;
    std::memcpy(params + g * 2 * sizeof(float), &scale, sizeof(float));
    std::memcpy(params + g * 2 * sizeof(float) + sizeof(float), &mn, sizeof(float));
    for (size_t i = i0; i < i1; ++i) {
      const int q = std::clamp(static_cast<int>(std::lround((x[i] - mn) * inv)), 0, qmax);
      if (bits_ == 8) {
        codes[i] = static_cast<uint8_t>(q);
      } else {
        codes[i / 2] |= static_cast<uint8_t>((i % 2 == 0) ? q : (q << 4));
      }
    }
  }
}

void AffineRowCodec::decode(const uint8_t* in, float* x) const {
  const uint8_t* codes = in;
  const uint8_t* params = in + code_bytes();
  for (size_t g = 0; g < n_groups(); ++g) {
    float scale = 0.0f, mn = 0.0f;
    std::memcpy(&scale, params + g * 2 * sizeof(float), sizeof(float));
    std::memcpy(&mn, params + g * 2 * sizeof(float) + sizeof(float), sizeof(float));
    const size_t i0 = g * group_;
    const size_t i1 = std::min(row_, i0 + group_);
    for (size_t i = i0; i < i1; ++i) {
      const int q = bits_ == 8 ? codes[i] : ((i % 2 == 0) ? (codes[i / 2] & 0x0F) : (codes[i / 2] >> 4));
      x[i] = mn + static_cast<float>(q) * scale;
    }
  }
}

}  // namespace kakeya::engine
