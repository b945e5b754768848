// The lane-exact kernels (quant_lanes_x86.h) compiled for AVX2 + FMA + F16C; entered only
// through detail::lanes_avx2() after cpu_features().can_run_avx2().
#include "engine/cpu/quant_lanes_x86.h"

namespace kakeya::engine::detail {

const TypeKernels* lanes_avx2(GgmlType type) { return x86_lane_kernels(type); }

}  // namespace kakeya::engine::detail
