#include "engine/cpu/cpu_features.h"

#include <cstring>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif
#if defined(__linux__) && defined(__x86_64__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace kakeya::engine {

namespace {

#if defined(__x86_64__) || defined(__i386__)
uint64_t read_xcr0() {
  uint32_t eax = 0, edx = 0;
  __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
  return (static_cast<uint64_t>(edx) << 32) | eax;
}

// Asks the kernel for the AMX tile data state (Linux 5.16+, Documentation/arch/x86/xstate.rst):
// without it the first tile instruction raises SIGILL. True when granted (or already held).
bool request_amx_tile_data() {
#if defined(__linux__) && defined(__x86_64__)
  constexpr long kArchReqXcompPerm = 0x1023;  // ARCH_REQ_XCOMP_PERM, <asm/prctl.h>
  constexpr long kXfeatureXtiledata = 18;     // XFEATURE_XTILEDATA
  return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
#else
  return false;
#endif
}
#endif

CpuFeatures detect() {
  CpuFeatures f;
#if defined(__x86_64__) || defined(__i386__)
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid(0, &a, &b, &c, &d) == 0) return f;
  const unsigned max_leaf = a;
  char vendor[13] = {};
  std::memcpy(vendor, &b, 4);
  std::memcpy(vendor + 4, &d, 4);
  std::memcpy(vendor + 8, &c, 4);
  f.vendor = vendor;
  __cpuid(1, a, b, c, d);
  const unsigned base_family = (a >> 8) & 0xF;
  const unsigned base_model = (a >> 4) & 0xF;
  f.family = base_family == 0xF ? base_family + ((a >> 20) & 0xFF) : base_family;
  f.model = base_family == 0x6 || base_family == 0xF ? (((a >> 16) & 0xF) << 4) | base_model : base_model;
  const bool osxsave = (c & (1u << 27)) != 0;
  const bool cpu_avx = (c & (1u << 28)) != 0;
  const bool cpu_fma = (c & (1u << 12)) != 0;
  const bool cpu_f16c = (c & (1u << 29)) != 0;
  bool ymm_ok = false, zmm_ok = false, tile_ok = false;
  if (osxsave) {
    const uint64_t xcr0 = read_xcr0();
    ymm_ok = (xcr0 & 0x6) == 0x6;      // XMM + YMM state
    zmm_ok = (xcr0 & 0xE6) == 0xE6;    // + opmask, ZMM_Hi256, Hi16_ZMM
    tile_ok = (xcr0 & 0x60000) == 0x60000;  // XTILECFG + XTILEDATA
  }
  f.avx = cpu_avx && ymm_ok;
  f.fma = cpu_fma && f.avx;
  f.f16c = cpu_f16c && f.avx;
  if (max_leaf >= 7) {
    __cpuid_count(7, 0, a, b, c, d);
    f.avx2 = f.avx && (b & (1u << 5)) != 0;
    f.avx512f = zmm_ok && (b & (1u << 16)) != 0;
    f.avx512bw = f.avx512f && (b & (1u << 30)) != 0;
    f.avx512vl = f.avx512f && (b & (1u << 31)) != 0;
    f.avx512vnni = f.avx512f && (c & (1u << 11)) != 0;
    const bool cpu_amx_bf16 = (d & (1u << 22)) != 0 && (d & (1u << 24)) != 0;  // AMX-BF16, AMX-TILE
    f.amx_bf16 = f.avx512f && tile_ok && cpu_amx_bf16 && request_amx_tile_data();
    const bool cpu_amx_int8 = (d & (1u << 25)) != 0 && (d & (1u << 24)) != 0;  // AMX-INT8, AMX-TILE
    f.amx_int8 = f.avx512f && tile_ok && cpu_amx_int8 && request_amx_tile_data();
    const unsigned max_subleaf = a;
    if (max_subleaf >= 1) {
      __cpuid_count(7, 1, a, b, c, d);
      f.avx512bf16 = f.avx512f && (a & (1u << 5)) != 0;
    }
  }
  // Brand string: leaves 0x80000002..4, 16 bytes each, NUL-padded.
  if (__get_cpuid(0x80000000, &a, &b, &c, &d) != 0 && a >= 0x80000004) {
    char brand[49] = {};
    for (unsigned leaf = 0; leaf < 3; ++leaf) {
      __cpuid(0x80000002 + leaf, a, b, c, d);
      const unsigned regs[4] = {a, b, c, d};
      std::memcpy(brand + 16 * leaf, regs, 16);
    }
    f.brand = brand;
    const auto first = f.brand.find_first_not_of(' ');
    const auto last = f.brand.find_last_not_of(' ');
    f.brand = first == std::string::npos ? "" : f.brand.substr(first, last - first + 1);
  }
#elif defined(__aarch64__) || defined(__ARM_NEON)
  f.neon = true;  // Advanced SIMD is mandatory on AArch64.
#endif
  return f;
}

}  // namespace

std::string CpuFeatures::to_string() const {
  std::string s;
  auto add = [&s](bool on, const char* name) {
    if (!on) return;
    if (!s.empty()) s += ' ';
    s += name;
  };
  add(avx, "avx");
  add(avx2, "avx2");
  add(fma, "fma");
  add(f16c, "f16c");
  add(avx512f, "avx512f");
  add(avx512bw, "avx512bw");
  add(avx512vl, "avx512vl");
  add(avx512vnni, "avx512vnni");
  add(avx512bf16, "avx512bf16");
  add(amx_bf16, "amx_bf16");
  add(amx_int8, "amx_int8");
  add(neon, "neon");
  return s;
}

const CpuFeatures& cpu_features() {
  static const CpuFeatures features = detect();
  return features;
}

}  // namespace kakeya::engine
