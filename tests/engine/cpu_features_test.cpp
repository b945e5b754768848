// cpu_features(): internal consistency, caching, and agreement with /proc/cpuinfo on Linux x86.

#include "engine/cpu/cpu_features.h"

#include <gtest/gtest.h>

#include <set>
#include <sstream>
#include <string>

#include "tests/engine/backends.h"

namespace kakeya::engine {
namespace {

TEST(CpuFeatures, CachedAndConsistent) {
  const CpuFeatures& f = cpu_features();
  EXPECT_EQ(&f, &cpu_features());
  if (f.avx2 || f.fma || f.f16c) {
    EXPECT_TRUE(f.avx);
  }
  if (f.avx512bw || f.avx512vl || f.avx512vnni || f.avx512bf16 || f.amx_bf16 || f.amx_int8) {
    EXPECT_TRUE(f.avx512f);
  }
  EXPECT_EQ(f.can_run_avx2(), f.avx2 && f.fma && f.f16c);
#if defined(__aarch64__)
  EXPECT_TRUE(f.neon);
  EXPECT_FALSE(f.avx);
#elif defined(__x86_64__)
  EXPECT_FALSE(f.neon);
#endif
}

TEST(CpuFeatures, ToStringListsExactlyThePresentFeatures) {
  const CpuFeatures& f = cpu_features();
  std::istringstream in(f.to_string());
  std::set<std::string> names;
  for (std::string w; in >> w;) names.insert(w);
  EXPECT_EQ(names.count("avx"), f.avx ? 1u : 0u);
  EXPECT_EQ(names.count("avx2"), f.avx2 ? 1u : 0u);
  EXPECT_EQ(names.count("fma"), f.fma ? 1u : 0u);
  EXPECT_EQ(names.count("f16c"), f.f16c ? 1u : 0u);
  EXPECT_EQ(names.count("avx512f"), f.avx512f ? 1u : 0u);
  EXPECT_EQ(names.count("avx512vnni"), f.avx512vnni ? 1u : 0u);
  EXPECT_EQ(names.count("avx512bf16"), f.avx512bf16 ? 1u : 0u);
  EXPECT_EQ(names.count("amx_bf16"), f.amx_bf16 ? 1u : 0u);
  EXPECT_EQ(names.count("amx_int8"), f.amx_int8 ? 1u : 0u);
  EXPECT_EQ(names.count("neon"), f.neon ? 1u : 0u);

  CpuFeatures manual;
  manual.avx = manual.avx2 = true;
  EXPECT_EQ(manual.to_string(), "avx avx2");
  EXPECT_EQ(CpuFeatures{}.to_string(), "");
}

#if defined(__x86_64__) && defined(__linux__)
using test::cpuinfo_field;

TEST(CpuFeatures, AgreesWithProcCpuinfo) {
  const auto line = cpuinfo_field("flags");
  if (!line) GTEST_SKIP() << "/proc/cpuinfo has no flags line";
  std::set<std::string> flags;
  std::istringstream words(*line);
  for (std::string w; words >> w;) flags.insert(w);
  const CpuFeatures& f = cpu_features();
  // The kernel lists AVX-family flags only when it enabled the register state, like xgetbv.
  EXPECT_EQ(f.avx, flags.count("avx") == 1);
  EXPECT_EQ(f.avx2, flags.count("avx2") == 1);
  EXPECT_EQ(f.fma, flags.count("fma") == 1);
  EXPECT_EQ(f.f16c, flags.count("f16c") == 1);
  EXPECT_EQ(f.avx512f, flags.count("avx512f") == 1);
  EXPECT_EQ(f.avx512bw, flags.count("avx512bw") == 1);
  EXPECT_EQ(f.avx512vl, flags.count("avx512vl") == 1);
  EXPECT_EQ(f.avx512vnni, flags.count("avx512_vnni") == 1);
  EXPECT_EQ(f.avx512bf16, flags.count("avx512_bf16") == 1);
  // The kernel lists amx_tile / amx_bf16 when it enabled the tile state; this process is then
  // granted it on request (no seccomp filter here refuses arch_prctl).
  EXPECT_EQ(f.amx_bf16, flags.count("amx_bf16") == 1 && flags.count("amx_tile") == 1 && f.avx512f);
  EXPECT_EQ(f.amx_int8, flags.count("amx_int8") == 1 && flags.count("amx_tile") == 1 && f.avx512f);
}

// The display family and model, as the kernel prints them ("cpu family", "model" of the first CPU),
// and the vendor ("vendor_id").
TEST(CpuFeatures, FamilyAndModelAgreeWithProcCpuinfo) {
  const auto family = cpuinfo_field("cpu family");
  const auto model = cpuinfo_field("model");
  const auto vendor = cpuinfo_field("vendor_id");
  if (!family || !model || !vendor) GTEST_SKIP() << "/proc/cpuinfo has no cpu family / model / vendor_id line";
  const CpuFeatures& f = cpu_features();
  EXPECT_EQ(static_cast<long>(f.family), std::stol(*family));
  EXPECT_EQ(static_cast<long>(f.model), std::stol(*model));
  EXPECT_EQ(f.vendor, *vendor);
  EXPECT_EQ(f.amd_zen5_or_later(), *vendor == "AuthenticAMD" && std::stol(*family) >= 26);
}
#endif

}  // namespace
}  // namespace kakeya::engine
