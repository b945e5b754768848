#include "engine/vulkan/vk_matmul_path.h"

namespace kakeya::engine {

const char* matmul_path_name(MatmulPath p) {
  switch (p) {
    case MatmulPath::kMatvec: return "matvec";
    case MatmulPath::kTiled: return "tiled";
    case MatmulPath::kCoopmat: return "coopmat";
  }
  return "matvec";
}

MatmulPath choose_matmul_path(const DeviceCaps& caps, size_t n_tokens, bool coopmat_shader_built) {
  if (n_tokens < kExactBlockTokens) return MatmulPath::kMatvec;
  if (caps.cooperative_matrix_khr && coopmat_shader_built) return MatmulPath::kCoopmat;
  return MatmulPath::kTiled;
}

}  // namespace kakeya::engine
