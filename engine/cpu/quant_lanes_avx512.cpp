// The lane-exact kernels (quant_lanes_x86.h) compiled with AVX-512 F/BW/VL/VNNI: byte lanes by
// vpdpbusd. Entered only through detail::lanes_avx512() after cpu_features().can_run_avx512().
#include "engine/cpu/quant_lanes_x86.h"

namespace kakeya::engine::detail {

const TypeKernels* lanes_avx512(GgmlType type) { return x86_lane_kernels(type); }

}  // namespace kakeya::engine::detail
