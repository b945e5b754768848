// open_backend and the CPU backend's own contract: options, info, weight uploads shared per
// model, memory measured, types it cannot run refused by name.
#include "engine/cpu/cpu_backend.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "engine/llama.h"
#include "tests/engine/backends.h"
#include "tests/harness/paths.h"

namespace kakeya::engine {
namespace {

TEST(OpenBackend, UnknownAndUnavailableBackendsAreErrorsNeverAFallback) {
  // A device number past the machine's devices: an error naming it, on every build and host
  // (without the Vulkan backend, or without a device: backend_unavailable; with devices: bad_param
  // saying how many there are) — never the CPU instead.
  auto far = open_backend("vulkan:9999");
  ASSERT_FALSE(far.ok());
  EXPECT_TRUE(far.error().code == "backend_unavailable" || far.error().code == "bad_param") << far.error().str();
  EXPECT_NE(far.error().message.find("vulkan"), std::string::npos) << far.error().str();
#if !defined(KAKEYA_HAVE_VULKAN)
  auto vulkan = open_backend("vulkan");
  ASSERT_FALSE(vulkan.ok());
  EXPECT_EQ(vulkan.error().code, "backend_unavailable");
  EXPECT_NE(vulkan.error().message.find("-DKAKEYA_VULKAN=OFF"), std::string::npos) << vulkan.error().str();
#endif
  EXPECT_EQ(open_backend("vulkan:x").error().code, "bad_param");
  auto gpu = open_backend("gpu");
  ASSERT_FALSE(gpu.ok());
  EXPECT_EQ(gpu.error().code, "bad_param");
  EXPECT_NE(gpu.error().message.find("\"gpu\""), std::string::npos);
  EXPECT_EQ(known_backends().front(), "cpu");
}

// A process that opened a CPU backend and sits idle uses no CPU. OpenBLAS's pthread build starts
// its workers when the library loads and they spin for 2^28 TSC cycles (~0.1 s on these hosts)
// before they sleep; ctest runs this test in a process of its own, so without the backend's
// openblas_single_threaded() that spin falls in the window (0.104-0.106 s here: it failed an
// idle-pool test in CI). Nothing else runs: the backend's pool blocks.
TEST(OpenBackend, CpuBackendLeavesTheProcessIdle) {
  auto backend = open_backend("cpu", BackendOptions{2});
  ASSERT_TRUE(backend.ok()) << backend.error().str();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const double before = test::process_cpu_seconds();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_LT(test::process_cpu_seconds() - before, 0.03);
}

TEST(OpenBackend, CpuOptionsAreCheckedAndReported) {
  EXPECT_EQ(open_backend("cpu", BackendOptions{0}).error().code, "bad_param");
  auto layout = open_backend("cpu", BackendOptions{1, "tiled"});
  ASSERT_FALSE(layout.ok());
  EXPECT_NE(layout.error().message.find("tiled"), std::string::npos);
  auto mode = open_backend("cpu", BackendOptions{1, "auto", "fast"});
  ASSERT_FALSE(mode.ok());
  EXPECT_NE(mode.error().message.find("fast"), std::string::npos);

  auto b = open_backend("cpu", BackendOptions{2, "row-major", "sgemm"});
  ASSERT_TRUE(b.ok()) << b.error().str();
  const BackendInfo& info = (*b)->info();
  EXPECT_EQ(info.name, "cpu");
  EXPECT_EQ(info.threads, 2);
  EXPECT_EQ(info.kernel_set, kernel_isa_name(active_kernel_isa()));
  EXPECT_FALSE(info.device.empty());
  EXPECT_FALSE(info.driver.empty());
  EXPECT_EQ(info.options["weight_layout"], "row-major");
  EXPECT_EQ(info.options["batched_matmul"], "sgemm");
  // "auto" is resolved on this machine and reported as what it became.
  auto a = open_backend("cpu", BackendOptions{1, "auto"});
  ASSERT_TRUE(a.ok());
  EXPECT_EQ((*a)->info().options["weight_layout"], resolve_weight_layout("auto"));
  EXPECT_EQ(to_json(info)["name"], "cpu");
}

// The sgemm option with several threads is refused on OpenBLAS's serial build (not safe to call
// from several threads at once) and allowed on the threaded builds, at one thread, and for the
// engine's own kernels. This process links the pthread build, so open_backend itself takes the
// allowed branch here.
TEST(OpenBackend, SgemmWithThreadsNeedsAThreadSafeOpenBlas) {
  const Status serial = check_sgemm_threads(MatmulMode::kSgemm, 2, 0);
  ASSERT_FALSE(serial.ok());
  EXPECT_EQ(serial.error().code, "bad_param");
  EXPECT_NE(serial.error().message.find("threads 2"), std::string::npos) << serial.error().message;
  EXPECT_NE(serial.error().message.find("serial"), std::string::npos) << serial.error().message;
  EXPECT_TRUE(check_sgemm_threads(MatmulMode::kSgemm, 1, 0).ok());
  EXPECT_TRUE(check_sgemm_threads(MatmulMode::kSgemm, 2, 1).ok());
  EXPECT_TRUE(check_sgemm_threads(MatmulMode::kSgemm, 2, 2).ok());
  EXPECT_TRUE(check_sgemm_threads(MatmulMode::kAuto, 2, 0).ok());
  EXPECT_TRUE(check_sgemm_threads(MatmulMode::kQuantizedActivations, 2, 0).ok());
}

TEST(CpuBackend, AWeightTypeWithoutAMatmulKernelIsRefusedByName) {
  Backend& b = test::cpu(1);
  std::vector<uint8_t> bytes(ggml_row_bytes(GgmlType::Q8_K, 256));
  const WeightMatrix w{"blk.0.ffn_up.weight", GgmlType::Q8_K, bytes.data(), 256, 1, bytes.size()};
  auto r = b.upload_weight(w, WeightUse::kMatmul, nullptr);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, "unsupported_type");
  EXPECT_NE(r.error().message.find("blk.0.ffn_up.weight"), std::string::npos);
  EXPECT_NE(r.error().message.find("q8_K"), std::string::npos);
}

// Contexts on one model share one upload (Backend::weights); it is released with the last of
// them, and the backend's measured bytes return to where they were.
TEST(CpuBackend, WeightsAreUploadedOncePerModelAndReleasedWithTheLastContext) {
  auto opened = open_backend("cpu", BackendOptions{1, "packed"});
  ASSERT_TRUE(opened.ok());
  Backend& b = **opened;
  auto m = LlamaModel::load((testing::data_dir() / "reference" / "synth-llama-256-q4_0.gguf").string());
  ASSERT_TRUE(m.ok());
  const size_t before = b.allocated_bytes();
  {
    auto c1 = test::context(m.value(), b, 16);
    const size_t one = b.allocated_bytes();
    EXPECT_GE(one - before, c1->weights().layout["packed_bytes"].get<size_t>()) << "the packed copies are counted";
    auto c2 = test::context(m.value(), b, 16);
    EXPECT_EQ(&c1->weights(), &c2->weights()) << "one upload for both contexts";
    EXPECT_EQ(c1->weights().bytes(), c1->weights().layout["bytes"].get<size_t>());
    // A second context adds its scratch only when it runs, never a second copy of the weights.
    EXPECT_EQ(b.allocated_bytes(), one);
    ASSERT_TRUE(c2->eval(std::vector<int32_t>{1, 2, 3}).ok());
    EXPECT_GT(b.allocated_bytes(), one);
  }
  EXPECT_EQ(b.allocated_bytes(), before);
}

}  // namespace
}  // namespace kakeya::engine
