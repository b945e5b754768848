// cpu_features(): internal consistency, caching, and agreement with /proc/cpuinfo on Linux x86.

#include "engine/cpu/cpu_features.h"

#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>
#include <string>

namespace kakeya::engine {
namespace {

TEST(CpuFeatures, CachedAndConsistent) {
  const CpuFeatures& f = cpu_features();
  EXPECT_EQ(&f, &cpu_features());
  if (f.avx2 || f.fma || f.f16c) {
    EXPECT_TRUE(f.avx);
  }
  if (f.avx512bw || f.avx512vl || f.avx512vnni || f.avx512bf16) {
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
  EXPECT_EQ(names.count("neon"), f.neon ? 1u : 0u);

  CpuFeatures manual;
  manual.avx = manual.avx2 = true;
  EXPECT_EQ(manual.to_string(), "avx avx2");
  EXPECT_EQ(CpuFeatures{}.to_string(), "");
}

#if defined(__x86_64__) && defined(__linux__)
TEST(CpuFeatures, AgreesWithProcCpuinfo) {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  std::set<std::string> flags;
  while (std::getline(in, line)) {
    if (line.rfind("flags", 0) != 0) continue;
    std::istringstream words(line.substr(line.find(':') + 1));
    for (std::string w; words >> w;) flags.insert(w);
    break;
  }
  if (flags.empty()) GTEST_SKIP() << "/proc/cpuinfo has no flags line";
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
}

// The display family and model, as the kernel prints them ("cpu family", "model" of the first CPU),
// and the vendor ("vendor_id").
TEST(CpuFeatures, FamilyAndModelAgreeWithProcCpuinfo) {
  std::ifstream in("/proc/cpuinfo");
  std::string line, vendor;
  long family = -1, model = -1;
  const auto value = [&line] { return line.substr(line.find(':') + 1); };
  while (std::getline(in, line) && (family < 0 || model < 0 || vendor.empty())) {
    if (line.rfind("cpu family", 0) == 0 && family < 0) family = std::stol(value());
    if (line.rfind("model", 0) == 0 && line.rfind("model name", 0) != 0 && model < 0) model = std::stol(value());
    if (line.rfind("vendor_id", 0) == 0 && vendor.empty()) std::istringstream(value()) >> vendor;
  }
  if (family < 0 || model < 0) GTEST_SKIP() << "/proc/cpuinfo has no cpu family / model line";
  const CpuFeatures& f = cpu_features();
  EXPECT_EQ(static_cast<long>(f.family), family);
  EXPECT_EQ(static_cast<long>(f.model), model);
  EXPECT_EQ(f.vendor, vendor);
  EXPECT_EQ(f.amd_zen5_or_later(), vendor == "AuthenticAMD" && family >= 26);
}
#endif

}  // namespace
}  // namespace kakeya::engine
