#pragma once
// Run-time CPU feature detection (cpuid + xgetbv on x86-64; compile-time on AArch64).
// Detected once, on first use, and cached; thread-safe.

#include <string>

#if defined(__x86_64__)
// The attribute of functions that issue vdpbf16ps, in files compiled without -mavx512bf16.
#define KAKEYA_BF16_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))
#endif

namespace kakeya::engine {

struct CpuFeatures {
  bool avx = false;
  bool avx2 = false;
  bool fma = false;
  bool f16c = false;
  bool avx512f = false;
  bool avx512bw = false;
  bool avx512vl = false;
  bool avx512vnni = false;
  // vdpbf16ps: the AVX-512 GEMM's BF16 kernel on AMD CPUs, and the BF16 mat-vec on Zen 4; code
  // that issues it carries KAKEYA_BF16_TARGET (below) and is entered only when this is true.
  bool avx512bf16 = false;
  // AMX-TILE + AMX-BF16 (tdpbf16ps, Intel Sapphire Rapids and later) with the tile state enabled
  // by the OS (XCR0 bits 17-18) and granted to this process: on Linux (5.16 and later) a process
  // must ask for the tile data state before its first tile instruction, and detection asks once
  // (arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA)); false where it is refused. The
  // AVX-512 GEMM's BF16 kernel where present (gemm_avx512.cpp).
  bool amx_bf16 = false;
  // AMX-INT8 (tdpbssd and kin, Intel Sapphire Rapids and later) with the tile state as for
  // amx_bf16: the AVX-512 GEMM's Q4_0 / Q8_0 kernel where present (gemm_avx512.cpp).
  bool amx_int8 = false;
  bool neon = false;
  std::string brand;   // the CPU's brand string (cpuid 0x80000002..4), "" where there is none
  std::string vendor;  // the cpuid leaf 0 vendor id ("GenuineIntel", "AuthenticAMD"), "" where there is none
  // The display family and model (cpuid leaf 1, the extended fields folded in as the Intel SDM and
  // AMD APM define them: family = base + extended when base is 15; model = extended << 4 | base
  // when the family is 6 or at least 15), as /proc/cpuinfo's "cpu family" and "model". 0 where
  // there is no cpuid. E.g. AMD Zen 4 (EPYC 9004) is family 25, Zen 5 (EPYC 9005) family 26.
  unsigned family = 0;
  unsigned model = 0;

  // True when the *_avx2.cpp kernels may run: AVX2 + FMA + F16C with OS-enabled YMM state.
  bool can_run_avx2() const { return avx2 && fma && f16c; }
  // True when the *_avx512.cpp kernels may run: the AVX2 set plus AVX-512 F/BW/VL/VNNI with
  // OS-enabled ZMM state.
  bool can_run_avx512() const { return can_run_avx2() && avx512f && avx512bw && avx512vl && avx512vnni; }

  // True on AMD CPUs (vendor "AuthenticAMD"): the kernels' per-vendor tuning (decode prefetch
  // distance, the BF16 GEMM instruction) keys on it.
  bool amd() const { return vendor == "AuthenticAMD"; }
  // True on AMD CPUs of family 26 (0x1A) or later: Zen 5 on. The F16/BF16 decode order keys on it.
  bool amd_zen5_or_later() const { return amd() && family >= 26; }

  // Space-separated list of the features present, e.g. "avx avx2 fma f16c".
  std::string to_string() const;
};

// The features of the CPU this process runs on (cached after the first call).
const CpuFeatures& cpu_features();

}  // namespace kakeya::engine
