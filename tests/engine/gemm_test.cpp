// The GEMM kernel sets (engine/cpu/gemm.h) against the portable set and against their own decode
// kernels, on odd sizes: row counts that are not whole packed groups or panels, ranges that start
// inside a group, token counts that are not whole micro-tiles, one-block and many-block rows.
#include "engine/cpu/gemm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "engine/cpu/cpu_features.h"
#include "engine/quantize.h"

namespace kakeya::engine {
namespace {

std::vector<KernelIsa> simd_sets() {
  std::vector<KernelIsa> out;
  for (KernelIsa isa : {KernelIsa::Avx2, KernelIsa::Avx512})
    if (kernel_isa_available(isa)) out.push_back(isa);
  return out;
}

// Rows of `type` covering its whole range: random bytes with finite scales for the types whose
// every byte pattern is a valid block (so Q8_0 holds −128, Q6_K scales of −128, Q4_K scales of
// 63), quantized random floats for the others.
std::vector<uint8_t> random_rows(GgmlType type, int64_t n, int64_t rows, std::mt19937& rng) {
  const size_t row_bytes = ggml_row_bytes(type, n);
  std::vector<uint8_t> out(row_bytes * static_cast<size_t>(rows));
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  auto scale = [&](float base) { return fp32_to_fp16(base * (0.5f + 0.5f * std::fabs(u(rng)))); };
  switch (type) {
    case GgmlType::Q4_0:
    case GgmlType::Q8_0:
    case GgmlType::Q4_K:
    case GgmlType::Q6_K: {
      for (uint8_t& b : out) b = static_cast<uint8_t>(rng());
      const size_t block = ggml_block_bytes(type);
      for (size_t off = 0; off < out.size(); off += block) {
        uint8_t* blk = out.data() + off;
        const uint16_t d = scale(type == GgmlType::Q4_K ? 1e-3f : type == GgmlType::Q6_K ? 1e-3f : 0.02f);
        if (type == GgmlType::Q6_K) {
          std::memcpy(blk + offsetof(BlockQ6_K, d), &d, 2);
        } else {
          std::memcpy(blk, &d, 2);
        }
        if (type == GgmlType::Q4_K) {
          const uint16_t dmin = scale(1e-3f);
          std::memcpy(blk + offsetof(BlockQ4_K, dmin), &dmin, 2);
        }
      }
      return out;
    }
    default: {
      std::vector<float> x(static_cast<size_t>(n));
      for (int64_t r = 0; r < rows; ++r) {
        for (float& v : x) v = u(rng);
        EXPECT_TRUE(convert_row(type, x.data(), out.data() + static_cast<size_t>(r) * row_bytes, n).ok());
      }
      return out;
    }
  }
}

std::vector<ActivationBuffer> activations(const QuantKernels& k, GgmlType type, int64_t n, int64_t tokens,
                                          std::mt19937& rng) {
  std::normal_distribution<float> g(0.0f, 1.0f);
  std::vector<ActivationBuffer> acts(static_cast<size_t>(tokens));
  std::vector<float> x(static_cast<size_t>(n));
  for (auto& a : acts) {
    for (float& v : x) v = g(rng);
    k.quantize_activations(type, x.data(), n, a);
  }
  return acts;
}

// y [tokens][r1 - r0] of `set`'s gemm (ldy wider than the row range, so stray writes show).
std::vector<float> run_gemm(const GemmKernels& set, const GemmWeights& w, int64_t r0, int64_t r1,
                            const std::vector<ActivationBuffer>& acts, bool exact, size_t ldy) {
  GemmScratch scratch;
  std::vector<float> y(acts.size() * ldy, -7.0f);
  set.gemm(w, r0, r1, acts.data(), static_cast<int64_t>(acts.size()), y.data(), ldy, exact, scratch);
  return y;
}

// run_gemm's frame, the tokens given to `set` 7 at a time (one scratch for all the calls).
std::vector<float> run_gemm_seven_at_a_time(const GemmKernels& set, const GemmWeights& w, int64_t r0, int64_t r1,
                                            const std::vector<ActivationBuffer>& acts, size_t ldy) {
  GemmScratch scratch;
  std::vector<float> y(acts.size() * ldy, -7.0f);
  const auto tokens = static_cast<int64_t>(acts.size());
  for (int64_t t0 = 0; t0 < tokens; t0 += 7)
    set.gemm(w, r0, r1, acts.data() + t0, std::min<int64_t>(7, tokens - t0), y.data() + static_cast<size_t>(t0) * ldy,
             ldy, false, scratch);
  return y;
}

// What the set's decode kernels give, in the same [tokens][ldy] frame.
std::vector<float> run_decode(const QuantKernels& k, const GemmWeights& w, int64_t r0, int64_t r1,
                              const std::vector<ActivationBuffer>& acts, size_t ldy) {
  std::vector<float> y(acts.size() * ldy, -7.0f);
  for (size_t t = 0; t < acts.size(); ++t) {
    if (w.packed != nullptr) {
      k.matvec_packed(w.type, w.packed, w.n, r0, r1, acts[t], y.data() + t * ldy);
    } else {
      k.matvec(w.type, w.rows, w.n, r0, r1, acts[t], y.data() + t * ldy);
    }
  }
  return y;
}

size_t count_different_bits(const std::vector<float>& a, const std::vector<float>& b) {
  size_t n = 0;
  for (size_t i = 0; i < a.size(); ++i) n += std::memcmp(&a[i], &b[i], sizeof(float)) != 0;
  return n;
}

// max |a − b| / max(1, max |b|) over the frame.
double rel_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double d = 0, m = 1;
  for (size_t i = 0; i < a.size(); ++i) {
    d = std::max(d, std::fabs(static_cast<double>(a[i]) - b[i]));
    m = std::max(m, std::fabs(static_cast<double>(b[i])));
  }
  return d / m;
}

struct Case {
  GgmlType type;
  int64_t n;
};

const Case kCases[] = {{GgmlType::F32, 48},    {GgmlType::F32, 300},   {GgmlType::F16, 36},  {GgmlType::F16, 520},
                       {GgmlType::BF16, 35},   {GgmlType::BF16, 600},  {GgmlType::Q4_0, 32}, {GgmlType::Q4_0, 288},
                       {GgmlType::Q8_0, 32},   {GgmlType::Q8_0, 352},  {GgmlType::Q4_K, 256}, {GgmlType::Q4_K, 1536},
                       {GgmlType::Q6_K, 256},  {GgmlType::Q6_K, 1280}, {GgmlType::Q5_K, 512}, {GgmlType::IQ4_NL, 96}};

TEST(Gemm, EveryKernelSetAgreesWithPortableAndWithItsDecodeKernels) {
  std::mt19937 rng(11);
  const GemmKernels& portable = gemm_kernels(KernelIsa::Portable);
  for (const Case& c : kCases) {
    const int64_t n_out = 53;
    const auto bytes = random_rows(c.type, c.n, n_out, rng);
    std::vector<uint8_t> packed;
    if (packable(c.type, c.n)) {
      packed.resize(packed_bytes(c.type, c.n, n_out));
      pack_rows(c.type, bytes.data(), c.n, n_out, packed.data());
    }
    for (bool use_packed : {false, true}) {
      if (use_packed && packed.empty()) continue;
      const GemmWeights w{c.type, c.n, bytes.data(), use_packed ? packed.data() : nullptr};
      // Ranges: all rows; one starting inside a packed group and ending before the last; one row.
      for (auto [r0, r1] : {std::pair<int64_t, int64_t>{0, n_out}, {5, 41}, {n_out - 1, n_out}}) {
        for (int64_t tokens : {1, 5, 13, 33}) {
          SCOPED_TRACE(std::string(ggml_type_name(c.type)) + " n=" + std::to_string(c.n) +
                       (use_packed ? " packed" : " row-major") + " rows [" + std::to_string(r0) + "," +
                       std::to_string(r1) + ") tokens " + std::to_string(tokens));
          const auto acts = activations(quant_kernels(KernelIsa::Portable), c.type, c.n, tokens, rng);
          const size_t ldy = static_cast<size_t>(r1 - r0) + 3;
          const auto want = run_gemm(portable, w, r0, r1, acts, false, ldy);
          EXPECT_EQ(count_different_bits(want, run_decode(quant_kernels(KernelIsa::Portable), w, r0, r1, acts, ldy)), 0u)
              << "the portable set is its decode kernels";
          for (KernelIsa isa : simd_sets()) {
            SCOPED_TRACE(kernel_isa_name(isa));
            const GemmKernels& set = gemm_kernels(isa);
            const auto decode = run_decode(quant_kernels(isa), w, r0, r1, acts, ldy);
            const auto fast = run_gemm(set, w, r0, r1, acts, false, ldy);
            const auto exact = run_gemm(set, w, r0, r1, acts, true, ldy);
            EXPECT_EQ(count_different_bits(exact, decode), 0u) << "decode_exact is the decode kernels' rounding";
            if (set.matches_decode(c.type, use_packed)) {
              EXPECT_EQ(count_different_bits(fast, decode), 0u) << "an exact GEMM rounds like decode";
            }
            // Against the portable set: bit for bit where the decode kernels are (quant.h), else
            // f32 summation order only. Stray writes outside the range would differ from -7 too.
            const bool portable_exact = c.type == GgmlType::Q4_0 || c.type == GgmlType::Q4_K ||
                                        c.type == GgmlType::Q6_K || c.type == GgmlType::Q5_K ||
                                        c.type == GgmlType::IQ4_NL || c.type == GgmlType::Q8_0;
            if (portable_exact) {
              EXPECT_EQ(count_different_bits(fast, want), 0u);
            } else {
              EXPECT_LT(rel_diff(fast, want), c.type == GgmlType::BF16 ? 2e-4 : 2e-5);
              for (size_t t = 0; t < acts.size(); ++t)
                for (size_t i = static_cast<size_t>(r1 - r0); i < ldy; ++i) EXPECT_EQ(fast[t * ldy + i], -7.0f);
            }
          }
        }
      }
    }
  }
}

// BF16 weights every way the AVX-512 set can run them here (AMX tiles where the CPU has AMX,
// vdpbf16ps where it has AVX512-BF16, FMA of widened weights), whichever gemm_kernels(Avx512)
// chose: each against the portable set within f32 summation rounding, with no stray writes past
// the range (k of 35 and 600 leave a last AMX step of 3 and 24 elements; rows [5, 41) a last
// panel of 4 rows).
std::vector<Bf16Gemm> bf16_paths_here() {
  std::vector<Bf16Gemm> paths = {Bf16Gemm::kFma};
  if (cpu_features().avx512bf16) paths.push_back(Bf16Gemm::kDot);
  if (cpu_features().amx_bf16) paths.push_back(Bf16Gemm::kAmx);
  return paths;
}

TEST(Gemm, Avx512Bf16ByEveryPathAgreesWithPortable) {
  if (!kernel_isa_available(KernelIsa::Avx512)) GTEST_SKIP() << "this CPU cannot run the AVX-512 set";
  const CpuFeatures& f = cpu_features();
  EXPECT_STREQ(gemm_kernels(KernelIsa::Avx512).bf16_path,
               f.amx_bf16 ? "amx" : (f.avx512bf16 && f.amd() ? "vdpbf16ps" : "fma"));
  std::mt19937 rng(17);
  const GemmKernels& portable = gemm_kernels(KernelIsa::Portable);
  for (int64_t n : {35, 600, 2048}) {
    const int64_t n_out = 53;
    const auto bytes = random_rows(GgmlType::BF16, n, n_out, rng);
    const GemmWeights w{GgmlType::BF16, n, bytes.data(), nullptr};
    for (auto [r0, r1] : {std::pair<int64_t, int64_t>{0, n_out}, {5, 41}, {n_out - 1, n_out}}) {
      for (int64_t tokens : {1, 7, 8, 33}) {
        const auto acts = activations(quant_kernels(KernelIsa::Portable), GgmlType::BF16, n, tokens, rng);
        const size_t ldy = static_cast<size_t>(r1 - r0) + 3;
        const auto want = run_gemm(portable, w, r0, r1, acts, false, ldy);
        for (Bf16Gemm path : bf16_paths_here()) {
          const GemmKernels& set = gemm_avx512_bf16_as(path);
          SCOPED_TRACE("n=" + std::to_string(n) + " rows [" + std::to_string(r0) + "," + std::to_string(r1) +
                       ") tokens " + std::to_string(tokens) + " " + set.bf16_path);
          EXPECT_STREQ(set.bf16_path, path == Bf16Gemm::kAmx ? "amx" : path == Bf16Gemm::kDot ? "vdpbf16ps" : "fma");
          const auto got = run_gemm(set, w, r0, r1, acts, false, ldy);
          EXPECT_LT(rel_diff(got, want), 2e-4);
          EXPECT_GT(rel_diff(want, std::vector<float>(want.size(), 0.0f)), 1e-3) << "the products are not all zero";
          for (size_t t = 0; t < acts.size(); ++t)
            for (size_t i = static_cast<size_t>(r1 - r0); i < ldy; ++i) EXPECT_EQ(got[t * ldy + i], -7.0f);
        }
      }
    }
  }
}

// The float weights' GEMM runs blocks of 2L tokens and more with the tokens in the vector lanes
// (gemm_x86.h, float_weights_gemm_tokens; the BF16 vdpbf16ps kernel likewise) and smaller blocks
// with the rows in the lanes. Both sum each output as one chain over k in the same order, so a
// block gives every output bit for bit what the same tokens give a few at a time: odd token
// counts (a last half tile), row ranges that are not whole panels, several k blocks, and no
// stray writes past the range. BF16 by vdpbf16ps reads whole panels of an even k in place and
// copies the rest (an odd k, a last panel past the rows): both are here; so is BF16 by AMX where
// the CPU has it (one chain over k in steps of 32 for any block).
TEST(Gemm, FloatWeightsGiveTheSameBitsForAnyBlockOfTokens) {
  std::mt19937 rng(23);
  for (KernelIsa isa : simd_sets()) {
    std::vector<const GemmKernels*> sets = {&gemm_kernels(isa)};
    if (isa == KernelIsa::Avx512) {
      sets.clear();
      for (Bf16Gemm path : bf16_paths_here()) sets.push_back(&gemm_avx512_bf16_as(path));
    }
    for (const GemmKernels* set : sets) {
      for (auto [type, n] : {std::pair<GgmlType, int64_t>{GgmlType::F32, 300}, {GgmlType::F16, 520},
                             {GgmlType::F16, 2048}, {GgmlType::BF16, 35}, {GgmlType::BF16, 601},
                             {GgmlType::BF16, 600}}) {
        const int64_t n_out = 53;
        const auto bytes = random_rows(type, n, n_out, rng);
        const GemmWeights w{type, n, bytes.data(), nullptr};
        for (auto [r0, r1] : {std::pair<int64_t, int64_t>{0, n_out}, {5, 46}}) {
          // (AVX-512: 16, 70 rows in the lanes; 48 a half tile, 56 a partial last tile, 128 whole
          // tiles; AVX2 takes tokens in the lanes for all but 70.)
          for (int64_t tokens : {16, 48, 56, 70, 128}) {
            SCOPED_TRACE(std::string(kernel_isa_name(isa)) + " bf16 " + set->bf16_path + " " + ggml_type_name(type) +
                         " n=" + std::to_string(n) + " rows [" + std::to_string(r0) + "," + std::to_string(r1) +
                         ") tokens " + std::to_string(tokens));
            const auto acts = activations(quant_kernels(isa), type, n, tokens, rng);
            const size_t ldy = static_cast<size_t>(r1 - r0) + 3;
            const auto block = run_gemm(*set, w, r0, r1, acts, false, ldy);
            const auto few = run_gemm_seven_at_a_time(*set, w, r0, r1, acts, ldy);
            EXPECT_EQ(count_different_bits(block, few), 0u);
            EXPECT_GT(rel_diff(block, std::vector<float>(block.size(), 0.0f)), 1e-3) << "the products are not all zero";
          }
        }
      }
    }
  }
}

// AMX takes the tokens in chunks whose packed activations fit about 1 MiB (64 tokens at k = 8192):
// outputs of a block spanning three chunks (the last of 22 tokens) are bit for bit those of the
// same tokens 7 at a time, and agree with the portable set within f32 summation rounding.
TEST(Gemm, AmxBf16ChunksOfTokensGiveTheSameBits) {
  if (!kernel_isa_available(KernelIsa::Avx512) || !cpu_features().amx_bf16)
    GTEST_SKIP() << "this CPU has no AMX-BF16 (or the kernel did not grant the tile state)";
  std::mt19937 rng(29);
  const int64_t n = 8192, n_out = 40, tokens = 150;
  const auto bytes = random_rows(GgmlType::BF16, n, n_out, rng);
  const GemmWeights w{GgmlType::BF16, n, bytes.data(), nullptr};
  const auto acts = activations(quant_kernels(KernelIsa::Portable), GgmlType::BF16, n, tokens, rng);
  const size_t ldy = static_cast<size_t>(n_out) + 2;
  const GemmKernels& amx = gemm_avx512_bf16_as(Bf16Gemm::kAmx);
  const auto block = run_gemm(amx, w, 0, n_out, acts, false, ldy);
  const auto few = run_gemm_seven_at_a_time(amx, w, 0, n_out, acts, ldy);
  EXPECT_EQ(count_different_bits(block, few), 0u);
  const auto want = run_gemm(gemm_kernels(KernelIsa::Portable), w, 0, n_out, acts, false, ldy);
  EXPECT_LT(rel_diff(block, want), 2e-4);
  EXPECT_GT(rel_diff(want, std::vector<float>(want.size(), 0.0f)), 1e-3) << "the products are not all zero";
}

// F16 weights by AMX multiply each F16 value as two BF16 parts (hi, its top 8 significand bits,
// and lo, the other 3), four tdpbf16ps per step: every product exact. Weights and activations
// are integers: most products one of up to 11 significant bits (so a lost lo part would show) and
// one of at most 2, and at elements 3 and 515 both of 11 bits (so a lost lo × lo would show).
// With k <= 1024 every partial sum in any order is an integer below 2^24 (2 · 2047² + 1022 · 2047
// · 3), so each output must be the exact sum, bit for bit: the portable set's too. Also the same
// bits in chunks of tokens as 7 at a time (300 tokens at k = 1024 span two chunks).
TEST(Gemm, AmxF16ProductsAreExact) {
  if (!kernel_isa_available(KernelIsa::Avx512) || !cpu_features().amx_bf16)
    GTEST_SKIP() << "this CPU has no AMX-BF16 (or the kernel did not grant the tile state)";
  const GemmKernels& amx = gemm_avx512_bf16_as(Bf16Gemm::kAmx);
  EXPECT_STREQ(amx.f16_path, "amx");
  EXPECT_STREQ(gemm_avx512_bf16_as(Bf16Gemm::kFma).f16_path, "fma");
  std::mt19937 rng(31);
  std::uniform_int_distribution<int> wide(1024, 2047), narrow(-3, 3), sign(0, 1);
  for (auto [n, tokens] : {std::pair<int64_t, int64_t>{35, 33}, {600, 70}, {1024, 300}}) {
    const int64_t n_out = 21;
    // Element i: a wide weight and a narrow activation for even i, the other way round for odd i,
    // both wide at i % 512 == 3.
    auto wide_signed = [&] { return static_cast<float>(sign(rng) ? wide(rng) : -wide(rng)); };
    std::vector<uint16_t> w_bits(static_cast<size_t>(n * n_out));
    std::vector<std::vector<float>> wf(static_cast<size_t>(n_out), std::vector<float>(static_cast<size_t>(n)));
    for (int64_t r = 0; r < n_out; ++r)
      for (int64_t i = 0; i < n; ++i) {
        const float v = i % 2 == 0 || i % 512 == 3 ? wide_signed() : static_cast<float>(narrow(rng));
        wf[static_cast<size_t>(r)][static_cast<size_t>(i)] = v;
        w_bits[static_cast<size_t>(r * n + i)] = fp32_to_fp16(v);
      }
    std::vector<ActivationBuffer> acts(static_cast<size_t>(tokens));
    std::vector<std::vector<float>> xf(acts.size(), std::vector<float>(static_cast<size_t>(n)));
    for (size_t t = 0; t < acts.size(); ++t) {
      for (int64_t i = 0; i < n; ++i)
        xf[t][static_cast<size_t>(i)] = i % 2 == 1 ? wide_signed() : static_cast<float>(narrow(rng));
      quant_kernels(KernelIsa::Portable).quantize_activations(GgmlType::F16, xf[t].data(), n, acts[t]);
    }
    const GemmWeights w{GgmlType::F16, n, reinterpret_cast<const uint8_t*>(w_bits.data()), nullptr};
    const size_t ldy = static_cast<size_t>(n_out) + 2;
    SCOPED_TRACE("n=" + std::to_string(n) + " tokens " + std::to_string(tokens));
    std::vector<float> exact(acts.size() * ldy, -7.0f);
    for (size_t t = 0; t < acts.size(); ++t)
      for (int64_t r = 0; r < n_out; ++r) {
        int64_t sum = 0;
        for (int64_t i = 0; i < n; ++i)
          sum += static_cast<int64_t>(wf[static_cast<size_t>(r)][static_cast<size_t>(i)]) *
                 static_cast<int64_t>(xf[t][static_cast<size_t>(i)]);
        exact[t * ldy + static_cast<size_t>(r)] = static_cast<float>(sum);
      }
    const auto block = run_gemm(amx, w, 0, n_out, acts, false, ldy);
    EXPECT_EQ(count_different_bits(block, exact), 0u);
    EXPECT_EQ(count_different_bits(run_gemm(gemm_kernels(KernelIsa::Portable), w, 0, n_out, acts, false, ldy), exact),
              0u);
    const auto few = run_gemm_seven_at_a_time(amx, w, 0, n_out, acts, ldy);
    EXPECT_EQ(count_different_bits(block, few), 0u);
  }
}

// The int8 GEMMs by AMX-INT8 where the CPU has it: one tile instruction per block (Q4_0, Q8_0)
// or sub-block (Q4_K; Q6_K stays on vpdpbusd, here as a check of the dispatch) gives its exact
// integer sums, which then take the VNNI kernels'
// integer and f32 operations in the same order, so the AMX set gives bit for bit what the VNNI
// set (the same AVX-512 set with FMA for BF16) and the decode kernels give, packed and row-major:
// one block or super-block (no second C tile), an odd number of blocks, 2048, and 8192 with 150
// tokens (two chunks of tokens, the last of 22); rows [5, 41) start and end inside groups of 16;
// with ldy past the range (no stray writes) and 7 tokens at a time (calls below
// kAmxInt8MinTokens = 10 tokens run the VNNI kernels: the same bits). The path each set names is
// checked too.
TEST(Gemm, AmxInt8GivesTheBitsOfVnniAndOfDecode) {
  if (!kernel_isa_available(KernelIsa::Avx512) || !cpu_features().amx_int8)
    GTEST_SKIP() << "this CPU has no AMX-INT8 (or the kernel did not grant the tile state)";
  const GemmKernels& amx = gemm_avx512_bf16_as(Bf16Gemm::kAmx);
  const GemmKernels& vnni = gemm_avx512_bf16_as(Bf16Gemm::kFma);
  EXPECT_STREQ(amx.int8_path, "amx");
  EXPECT_STREQ(vnni.int8_path, "vpdpbusd");
  EXPECT_STREQ(gemm_kernels(KernelIsa::Portable).int8_path, "decode");
  std::mt19937 rng(37);
  for (GgmlType type : {GgmlType::Q4_0, GgmlType::Q8_0, GgmlType::Q4_K, GgmlType::Q6_K}) {
    const bool k_quant = type == GgmlType::Q4_K || type == GgmlType::Q6_K;
    for (auto [n, tokens] : {std::pair<int64_t, int64_t>{k_quant ? 256 : 32, 17}, {k_quant ? 1280 : 352, 33},
                             {2048, 128}, {8192, 150}}) {
      const int64_t n_out = 53;
      const auto bytes = random_rows(type, n, n_out, rng);
      std::vector<uint8_t> packed;
      if (packable(type, n)) {
        packed.resize(packed_bytes(type, n, n_out));
        pack_rows(type, bytes.data(), n, n_out, packed.data());
      }
      const auto acts = activations(quant_kernels(KernelIsa::Avx512), type, n, tokens, rng);
      for (bool use_packed : {false, true}) {
        if (use_packed && packed.empty()) continue;
        const GemmWeights w{type, n, bytes.data(), use_packed ? packed.data() : nullptr};
        for (auto [r0, r1] : {std::pair<int64_t, int64_t>{0, n_out}, {5, 41}}) {
          SCOPED_TRACE(std::string(ggml_type_name(type)) + " n=" + std::to_string(n) +
                       (use_packed ? " packed" : " row-major") + " rows [" + std::to_string(r0) + "," +
                       std::to_string(r1) + ") tokens " + std::to_string(tokens));
          const size_t ldy = static_cast<size_t>(r1 - r0) + 3;
          const auto got = run_gemm(amx, w, r0, r1, acts, false, ldy);
          EXPECT_EQ(count_different_bits(got, run_gemm(vnni, w, r0, r1, acts, false, ldy)), 0u);
          EXPECT_EQ(count_different_bits(got, run_gemm_seven_at_a_time(amx, w, r0, r1, acts, ldy)), 0u);
          // Every token as the decode kernels give it (row-major Q8_0 decode sums in lanes, so
          // only packed there).
          if (use_packed || type != GgmlType::Q8_0) {
            EXPECT_EQ(count_different_bits(got, run_decode(quant_kernels(KernelIsa::Avx512), w, r0, r1, acts, ldy)), 0u);
          }
          EXPECT_GT(rel_diff(got, std::vector<float>(got.size(), 0.0f)), 1e-3) << "the products are not all zero";
        }
      }
    }
  }
}

// The dedicated kernels are the ones listed; other types go through the decode kernels.
TEST(Gemm, KernelListAndDecodeAgreement) {
  for (KernelIsa isa : simd_sets()) {
    const GemmKernels& set = gemm_kernels(isa);
    for (GgmlType t : {GgmlType::F32, GgmlType::F16, GgmlType::BF16, GgmlType::Q4_0, GgmlType::Q8_0, GgmlType::Q4_K,
                       GgmlType::Q6_K})
      EXPECT_TRUE(set.has_kernel(t)) << ggml_type_name(t);
    EXPECT_FALSE(set.has_kernel(GgmlType::Q5_K));
    EXPECT_TRUE(set.matches_decode(GgmlType::Q4_0, false));
    EXPECT_TRUE(set.matches_decode(GgmlType::Q8_0, true));
    EXPECT_FALSE(set.matches_decode(GgmlType::Q8_0, false));
    EXPECT_FALSE(set.matches_decode(GgmlType::F16, false));
    EXPECT_TRUE(set.matches_decode(GgmlType::Q5_K, false)) << "decode kernels are their own match";
  }
  EXPECT_FALSE(gemm_kernels(KernelIsa::Portable).has_kernel(GgmlType::F32));
  EXPECT_TRUE(gemm_kernels(KernelIsa::Portable).matches_decode(GgmlType::F16, false));
}

// gemm_f32 (attention's products): both layouts of B, odd m/n/k, alpha, k = 0 and m = 0 (no tokens:
// nothing written, no crash), against float64.
TEST(Gemm, F32ProductsOfEverySetMatchFloat64) {
  std::mt19937 rng(5);
  std::normal_distribution<float> g(0.0f, 1.0f);
  std::vector<KernelIsa> sets = simd_sets();
  sets.push_back(KernelIsa::Portable);
  for (auto [m, n, k] : {std::tuple<int64_t, int64_t, int64_t>{1, 1, 1}, {7, 33, 64}, {13, 70, 300}, {40, 64, 513},
                         {3, 5, 0}, {0, 40, 300}}) {
    for (bool b_rows : {true, false}) {
      const size_t lda = static_cast<size_t>(k) + 2, ldb = static_cast<size_t>(b_rows ? k : n) + 5,
                   ldc = static_cast<size_t>(n) + 1;
      std::vector<float> a(static_cast<size_t>(m) * lda), b(static_cast<size_t>(b_rows ? n : k) * ldb);
      for (float& v : a) v = g(rng);
      for (float& v : b) v = g(rng);
      const float alpha = 0.125f;
      std::vector<double> want(static_cast<size_t>(m) * ldc, -7.0);
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
          double s = 0;
          for (int64_t kk = 0; kk < k; ++kk)
            s += static_cast<double>(a[i * lda + kk]) * (b_rows ? b[j * ldb + kk] : b[kk * ldb + j]);
          want[i * ldc + j] = alpha * s;
        }
      for (KernelIsa isa : sets) {
        SCOPED_TRACE(std::string(kernel_isa_name(isa)) + " m=" + std::to_string(m) + " n=" + std::to_string(n) +
                     " k=" + std::to_string(k) + (b_rows ? " rows" : " cols"));
        GemmScratch scratch;
        std::vector<float> c(static_cast<size_t>(m) * ldc, -7.0f);
        gemm_kernels(isa).gemm_f32(m, n, k, alpha, a.data(), lda, b.data(), ldb, b_rows, c.data(), ldc, scratch);
        double worst = 0;
        for (size_t i = 0; i < c.size(); ++i) worst = std::max(worst, std::fabs(c[i] - want[i]));
        EXPECT_LT(worst, 1e-5 * std::sqrt(static_cast<double>(k) + 1) * 4);
      }
    }
  }
}

}  // namespace
}  // namespace kakeya::engine
