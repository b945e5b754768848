#pragma once
// The AMX tile configuration the engine's tile code loads with ldtilecfg (Intel SDM vol. 2,
// LDTILECFG): palette 1, tiles 0-7 of 16 rows × 64 bytes, the largest palette 1 allows. Each
// thread loads it before its first tile instruction and releases the tiles after its last
// (tilerelease), once the process holds the tile state (cpu_features().amx_bf16).
#include <cstdint>

namespace kakeya::engine {

struct alignas(64) AmxTileConfig {
  uint8_t palette_id = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {64, 64, 64, 64, 64, 64, 64, 64};
  uint8_t rows[16] = {16, 16, 16, 16, 16, 16, 16, 16};
};
static_assert(sizeof(AmxTileConfig) == 64, "ldtilecfg reads 64 bytes");

}  // namespace kakeya::engine
