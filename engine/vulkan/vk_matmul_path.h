#pragma once
// Which shader computes a matmul of n tokens on a device (the Vulkan backend's one decision that
// depends on the batch size):
//   kMatvec   n < kExactBlockTokens: matvec.comp, every output computed as in one-token decode,
//             so verify blocks give the logits of decode bit for bit (backend.h);
//   kTiled    longer batches (prefill chunks): matmul_tiled.comp, 64×64 shared-memory tiles,
//             f32 multiply-adds;
//   kCoopmat  longer batches on a device with VK_KHR_cooperative_matrix, when the build has a
//             cooperative-matrix shader. None is built yet: Debian 12's glslc (glslang 11.13)
//             does not know GL_KHR_cooperative_matrix, so kCoopmatShaderBuilt is false and such
//             devices take kTiled (the choice is tested with capabilities of both kinds).
#include <cstddef>

#include "engine/backend.h"
#include "engine/vulkan/vk_device.h"

namespace kakeya::engine {

enum class MatmulPath { kMatvec, kTiled, kCoopmat };
const char* matmul_path_name(MatmulPath p);  // "matvec", "tiled", "coopmat"

inline constexpr bool kCoopmatShaderBuilt = false;

MatmulPath choose_matmul_path(const DeviceCaps& caps, size_t n_tokens, bool coopmat_shader_built = kCoopmatShaderBuilt);

}  // namespace kakeya::engine
