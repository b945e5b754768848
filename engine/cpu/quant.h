#pragma once
// Tensor-type kernels: dequantization, activation conversion and dot products for the GGML
// types in ggml_types.h. Semantics follow ggml-cpu (ggml-quants.c / ggml-cpu-quants.c at
// llama.cpp b4748), so results match llama.cpp's reference logits (see
// tests/data/reference/README.md, "Observed tolerances" 2, and ../shared/reference/README.md,
// "More tensor types"):
//   weight type                    activation format ("vec_dot_type", vec_dot_type())
//   F32                            f32
//   F16                            f16   (round to nearest even)
//   BF16                           bf16  (round to nearest even)
//   Q8_0, Q4_0, Q5_0, IQ4_NL       Q8_0  (blocks of 32: d = amax/127 stored as fp16, q = round_half_even(x*127/amax))
//   Q4_1, Q5_1                     Q8_1  (Q8_0's d and q, plus s = fp16(d·Σq) for the weights' min term)
//   Q2_K..Q6_K, IQ4_XS             Q8_K  (blocks of 256: iscale = -127/max where max is the signed value of largest
//                                         |x|, q = min(127, round_half_even(iscale*x)), d = 1/iscale as f32,
//                                         bsums per 16)
// Integer parts of quantized dot products are exact; only the f32 accumulation across blocks
// differs between the portable and the AVX2 kernels for the first types (Q8_0, F32, F16, BF16),
// except for Q4_0, where both round like ggml-cpu's repacked x86 kernels (q4_0_8x8_q8_0, what
// llama.cpp runs for Q4_0 matrices with a multiple of 8 rows): per row s = fma(float(block int
// sum), fp16(w.d)·fp16(a.d), s) over the blocks in order, so the two kernel sets are bit-identical
// for Q4_0.
// Q4_1, Q5_0, Q5_1, IQ4_NL, Q2_K, Q3_K, Q5_K and IQ4_XS round like ggml-cpu's x86 (AVX2) code in
// every kernel set, so all sets are bit-identical for them (quant_lanes.h): each block's exact
// integer products are summed into 8 int32 lanes (lane k takes elements e with (e / 4) % 8 == k,
// times their sub-block scale), every lane accumulates acc[k] = fma(scale, float(lane k), acc[k])
// block by block, and the row's result is ggml's horizontal sum of the 8 lanes (plus a scalar
// min term for Q4_1, Q5_1 and Q5_K; IQ4_NL sums even and odd blocks in two accumulators, as
// ggml_vec_dot_iq4_nl_q8_0 does, and that is the rounding of the reference logits: the
// single-accumulator order of llamafile's tinyBLAS differs from them by 6e-3 at one position).
//
// The public functions dispatch at run time (once, from cpu_features()) to the best kernel set the
// CPU can run (active_kernel_isa(); KAKEYA_CPU_ISA caps it, see kKernelIsaEnv): AVX-512 (F/BW/VL/VNNI: the AVX2 set with 512-bit packed
// mat-vec kernels, 512-bit F16/BF16/Q4_K/Q6_K mat-vec and VNNI dot products), else AVX2
// (AVX2+FMA+F16C), else portable. No function allocates except quantize_activations when
// `out.bytes` must grow, and the AVX-512 F16/BF16/Q4_K mat-vec when its thread-local copy of the
// activations (widened to f32, or reordered) must grow. The kernel sets' shared
// internals (packed layout offsets, the portable activation quantizers) are private:
// engine/cpu/quant_internal.h.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "engine/ggml_types.h"

namespace kakeya::engine {

// Block layouts (standard GGML/GGUF, little-endian; ggml-common.h). Element e of a 32-element
// block with nibbles: e < 16 in the low nibble of qs[e], e >= 16 in the high nibble of qs[e - 16];
// a 5th bit, where there is one, is bit e of the 32-bit qh.
inline constexpr int kQK4_0 = 32;
inline constexpr int kQK8_0 = 32;
inline constexpr int kQK_K = 256;
struct BlockQ4_0 { uint16_t d; uint8_t qs[16]; };                 // value = ((q & 15) - 8) * d; low nibbles 0..15
struct BlockQ4_1 { uint16_t d; uint16_t m; uint8_t qs[16]; };     // value = q * d + m
struct BlockQ5_0 { uint16_t d; uint8_t qh[4]; uint8_t qs[16]; };  // value = (q5 - 16) * d
struct BlockQ5_1 { uint16_t d; uint16_t m; uint8_t qh[4]; uint8_t qs[16]; };  // value = q5 * d + m
struct BlockQ8_0 { uint16_t d; int8_t qs[32]; };                  // value = q * d
struct BlockQ8_1 { uint16_t d; uint16_t s; int8_t qs[32]; };      // activations only; s = fp16(d * sum(qs))
struct BlockIQ4_NL { uint16_t d; uint8_t qs[16]; };               // value = kIQ4NLValues[q] * d
// Super-blocks of 256. Q2_K: 16 sub-blocks of 16, scales[i] = scale (low nibble) | min (high),
// value = d·scale·q - dmin·min with q 2 bits (element 128h + 32g + l at bits 2g of qs[32h + l]).
struct BlockQ2_K { uint8_t scales[16]; uint8_t qs[64]; uint16_t d; uint16_t dmin; };
// Q3_K: 16 sub-blocks of 16 with 6-bit scales (packed in 12 bytes, offset 32), value =
// d·(scale - 32)·(q - (hmask bit set ? 0 : 4)), q 2 bits as in Q2_K, the high bit of element
// 128h + 32g + l at bit 4h + g of hmask[l].
struct BlockQ3_K { uint8_t hmask[32]; uint8_t qs[64]; uint8_t scales[12]; uint16_t d; };
struct BlockQ4_K { uint16_t d; uint16_t dmin; uint8_t scales[12]; uint8_t qs[128]; };
// Q5_K: Q4_K's 8 sub-blocks of 32 and packed scales/mins, plus the 5th bit of element 32j + l at
// bit j of qh[l].
struct BlockQ5_K { uint16_t d; uint16_t dmin; uint8_t scales[12]; uint8_t qh[32]; uint8_t qs[128]; };
struct BlockQ6_K { uint8_t ql[128]; uint8_t qh[64]; int8_t scales[16]; uint16_t d; };
// IQ4_XS: 8 sub-blocks of 32, 6-bit scales (low 4 bits in scales_l nibbles, high 2 bits in
// scales_h), value = d·(scale - 32)·kIQ4NLValues[q], quants as IQ4_NL's per sub-block.
struct BlockIQ4_XS { uint16_t d; uint16_t scales_h; uint8_t scales_l[4]; uint8_t qs[128]; };
struct BlockQ8_K { float d; int8_t qs[256]; int16_t bsums[16]; };  // activations only
static_assert(sizeof(BlockQ4_0) == 18 && sizeof(BlockQ4_1) == 20 && sizeof(BlockQ5_0) == 22 &&
              sizeof(BlockQ5_1) == 24 && sizeof(BlockQ8_0) == 34 && sizeof(BlockQ8_1) == 36 &&
              sizeof(BlockIQ4_NL) == 18 && sizeof(BlockQ2_K) == 84 && sizeof(BlockQ3_K) == 110 &&
              sizeof(BlockQ4_K) == 144 && sizeof(BlockQ5_K) == 176 && sizeof(BlockQ6_K) == 210 &&
              sizeof(BlockIQ4_XS) == 136 && sizeof(BlockQ8_K) == 292);

// The non-linear 4-bit codebook of IQ4_NL and IQ4_XS (ggml kvalues_iq4nl).
inline constexpr int8_t kIQ4NLValues[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                            1,    13,   25,  38,  53,  69,  89,  113};

// Returns v rounded to f32 at this point: stops the compiler from fusing a*b+c into an FMA (GCC
// contracts even across statements in C++ when FMA is available), so kernels round exactly like
// ggml's reference C. A no-op where the target has no FMA.
inline float round_f32(float v) {
#if defined(__FP_FAST_FMAF) && defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
  __asm__("" : "+x"(v));
#elif defined(__FP_FAST_FMAF) && defined(__GNUC__) && defined(__aarch64__)
  __asm__("" : "+w"(v));
#endif
  return v;
}

// v rounded to the nearest int, ties to even, for |v| < 2^22 (ggml nearest_int: adding 1.5·2^23
// leaves the rounded integer in the low mantissa bits; equals nearbyint in the default mode).
inline int nearest_int(float v) {
  const float shifted = v + 12582912.f;
  int32_t i;
  std::memcpy(&i, &shifted, sizeof i);
  return (i & 0x007FFFFF) - 0x00400000;
}

// Q4_K: 6-bit scale and min of sub-block j (0..7) from the 12 packed bytes (ggml get_scale_min_k4).
inline void q4k_scale_min(int j, const uint8_t* q, uint8_t* sc, uint8_t* m) {
  if (j < 4) {
    *sc = q[j] & 63;
    *m = q[j + 4] & 63;
  } else {
    *sc = static_cast<uint8_t>((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
    *m = static_cast<uint8_t>((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
  }
}

// dst[0..n) = the f32 values of one row of `type` (bit-identical to ggml's to_float).
// REQUIRES: n % ggml_block_size(type) == 0.
void dequantize_row(GgmlType type, const void* src, float* dst, int64_t n);

// The activation format ggml-cpu multiplies weights of `weight_type` with (table above).
GgmlType vec_dot_type(GgmlType weight_type);

// True for the weight types the dot-product kernels execute (every storage type of ggml_types.h).
bool has_dot_kernels(GgmlType weight_type);

// Activations converted for a matmul against weights of `weight_type`.
struct ActivationBuffer {
  GgmlType vec_dot_type = GgmlType::F32;  // F32, F16, BF16, Q8_0, Q8_1 or Q8_K: the layout of `bytes`
  std::vector<uint8_t> bytes;
  int64_t n = 0;                          // elements
  // Q8_0 only: Σ qs of each block, computed once here for the packed kernels' offset terms
  // (every row range of every matrix the activations meet reuses it).
  std::vector<int32_t> block_sums;
};

// REQUIRES: n % ggml_block_size(weight_type) == 0. Reuses out.bytes' capacity.
void quantize_activations(GgmlType weight_type, const float* x, int64_t n, ActivationBuffer& out);

// One row of weight_type (act.n elements) · activations. REQUIRES: act was produced by
// quantize_activations(weight_type, ...).
float vec_dot(GgmlType weight_type, const void* row, const ActivationBuffer& act);

// y[r - r0] = row r of W · x for r in [r0, r1). W holds rows of n elements, stride
// ggml_row_bytes(type, n). REQUIRES: act.n == n and act made for `type`.
void matvec(GgmlType type, const void* w, int64_t n, int64_t r0, int64_t r1, const ActivationBuffer& act,
            float* y);

// ---- f32 vector helpers for attention ----
// One call per run of KV rows (attention passes up to 64 of a head's visible slots), not per
// row: at a few dozen floats per row the call cost was the most of the work.
// out[r] = Σ q[i]·k[r·stride + i] over i in [0, n), for r in [0, rows): f32 accumulated in lanes
// (the order differs between kernel sets, never between rows or calls).
void dot_f32_rows(const float* q, const float* k, size_t stride, size_t rows, int64_t n, float* out);

// ---- e^x for SwiGLU and the attention softmax ----
// e^x in f32 as the kernels below compute it, one fixed sequence of IEEE operations (Cephes'
// expf): n = round_even(x·log2 e), r = x − n·ln 2 in two fma steps (ln 2 = 0.693359375 −
// 2.12194440e-4), e^r by a degree-7 polynomial in Horner fma steps, times 2^n. The SIMD sets run
// 8 lanes of the same operations at once, so every set gives the same bits (a libm expf call per
// element was 5-6% of Q4_0 prefill in SwiGLU, 4% at 512 tokens in the softmax). Within 1 ulp of
// e^x (tests/engine/quant_test.cpp: every 97th f32 of [−87.3, 88.3]); 0 below −87.33654 (where
// e^x leaves the normal range), +inf above 88.37626 (n would be 128; e^x there is within 1.42 × of
// FLT_MAX), NaN for NaN.
float exp_f32(float x);
// gate[i] = silu(gate[i]) · up[i] for i in [0, n), silu(g) = g / (1 + exp_f32(−g)): the division,
// the sum and the product rounded as written; bit-identical in every kernel set.
void swiglu_f32(float* gate, const float* up, int64_t n);
// row[i] = exp_f32(row[i] − shift) for i in [0, n) (the f32 difference rounded first), and returns
// Σ row[i] in float64: element i into partial sum i mod 8 in order, the sums then combined as
// ((s0 + s4) + (s2 + s6)) + ((s1 + s5) + (s3 + s7)); bit-identical in every kernel set. The
// softmax of attention: shift = the row's maximum.
double exp_sum_f32(float* row, int64_t n, float shift);
// x[i] = x[i] · s for i in [0, n), each product rounded to f32 (the softmax's 1/sum): bit-identical
// in every kernel set.
void scale_f32(float* x, int64_t n, float s);
// max(init, x[0], ..., x[n−1]) (the softmax's shift), in 8 independent lanes the compiler
// vectorizes: a max is exact, so the value is the one-by-one chain's (which waited on each
// compare). NaN elements are skipped as std::max(m, NaN) skips them; attention scores have none.
float max_f32(const float* x, size_t n, float init);

// ---- Row-interleaved ("packed") Q4_0 / Q8_0 matrices for the decode kernels ----
// A matrix of n_out rows is stored as ceil(n_out / kPackRows) groups of kPackRows rows (the last
// group padded with zero rows). Group g, of nb = n / 32 blocks, is ceil(nb / 2) pairs of blocks,
// one after the other; a pair of blocks b, b + 1 is
//   scales: [2][kPackRows] fp16   (64 bytes; block b of row g·16 + i at scales[b % 2][i])
//   quants: [2][C][kPackRows][4]  (C = 4 for Q4_0, 8 for Q8_0: chunk c of a block is its bytes
//                                  4c..4c+3; for Q4_0 those hold elements 4c..4c+3 in the low
//                                  nibbles and 16+4c..16+4c+3 in the high ones)
// (an odd nb leaves the last pair's second block as zero padding). So one 64-byte load holds the
// same 4 bytes of 16 rows, and a 4-byte activation broadcast against it yields 16 row sums at
// once without horizontal reductions (the layout idea of ggml-cpu's repacked q4_0_8x8 kernels,
// with 16 rows for 512-bit registers), and a group is ONE sequential stream of 64-byte aligned
// lines (scales beside their quants: a separate scales stream halved the rate from memory).
// The packed kernels compute each row exactly like the row-major ones: bit-identical to the
// portable kernels (Q4_0: one fma chain per row; Q8_0: exact block sums, s += sumi·(dw·da)
// without fusion).
inline constexpr int64_t kPackRows = 16;
// True for the types with a packed layout (Q4_0, Q8_0) when n is a whole number of blocks.
bool packable(GgmlType type, int64_t n);
// Bytes of the packed form of an [n_out][n] matrix. REQUIRES: packable(type, n).
size_t packed_bytes(GgmlType type, int64_t n, int64_t n_out);
// Writes the packed form of the row-major matrix w ([n_out][n], stride ggml_row_bytes) to out
// (packed_bytes long). REQUIRES: packable(type, n).
void pack_rows(GgmlType type, const void* w, int64_t n, int64_t n_out, uint8_t* out);
// Copies row r of a packed matrix back to its row-major blocks (ggml_row_bytes(type, n) bytes).
void unpack_row(GgmlType type, const uint8_t* packed, int64_t n, int64_t r, void* row);
// dequantize_row for row r of a packed matrix (bit-identical to dequantizing the original row).
void dequantize_packed_row(GgmlType type, const uint8_t* packed, int64_t n, int64_t r, float* dst);
// matvec over a packed matrix: y[r - r0] = row r · x for r in [r0, r1). Any r0 < r1 <= n_out
// works; ranges starting on a group boundary (r0 % kPackRows == 0) waste no work.
void matvec_packed(GgmlType type, const uint8_t* packed, int64_t n, int64_t r0, int64_t r1,
                   const ActivationBuffer& act, float* y);

// ---- Explicit kernel sets (for tests, benches and the dispatcher) ----
// Avx512 = the Avx2 set with 512-bit VNNI packed mat-vec kernels (AVX-512 F/BW/VL/VNNI).
// Ordered oldest to newest (the cap of kKernelIsaEnv compares them).
enum class KernelIsa { Portable, Avx2, Avx512 };
const char* kernel_isa_name(KernelIsa isa);  // "portable", "avx2", "avx512"
KernelIsa active_kernel_isa();                // what the public functions use (see kKernelIsaEnv)
bool kernel_isa_available(KernelIsa isa);     // Portable always; the others when the CPU can run them

// The environment variable that caps the dispatcher's choice: "avx512", "avx2" or "portable" (case
// as written). active_kernel_isa() is then the best set the CPU can run that is no newer than the
// one named, as OpenBLAS's OPENBLAS_CORETYPE or oneDNN's ONEDNN_MAX_CPU_ISA cap theirs: to compare
// the kernel sets on one machine (bench/README.md) or to rule one out. Unset or empty: no cap.
// Read once, with the dispatch; a value that names no set caps nothing here, and the CPU backend
// refuses to open with it (open_cpu_backend: "bad_param" naming the value).
inline constexpr const char* kKernelIsaEnv = "KAKEYA_CPU_ISA";
// Reads kKernelIsaEnv: *cap = the set it names, or KernelIsa::Avx512 (no cap) when it is unset or
// empty. Returns nullptr, or the variable's value when it names no set (names as kernel_isa_name()
// writes them; *cap is then Avx512).
const char* kernel_isa_cap(KernelIsa* cap);

struct QuantKernels {
  void (*dequantize_row)(GgmlType, const void*, float*, int64_t);
  void (*quantize_activations)(GgmlType, const float*, int64_t, ActivationBuffer&);
  float (*vec_dot)(GgmlType, const void*, const ActivationBuffer&);
  void (*matvec)(GgmlType, const void*, int64_t, int64_t, int64_t, const ActivationBuffer&, float*);
  void (*matvec_packed)(GgmlType, const uint8_t*, int64_t, int64_t, int64_t, const ActivationBuffer&, float*);
  void (*dot_f32_rows)(const float*, const float*, size_t, size_t, int64_t, float*);
  void (*swiglu_f32)(float*, const float*, int64_t);
  double (*exp_sum_f32)(float*, int64_t, float);
  void (*scale_f32)(float*, int64_t, float);
};
// REQUIRES: kernel_isa_available(isa).
const QuantKernels& quant_kernels(KernelIsa isa);

// How the Avx512 set's F16/BF16 mat-vec walks the rows [r0, r1); both orders give bit-identical
// results (the same products and the same 4 × 16-lane f32 accumulation per row), except BF16 by
// vdpbf16ps (Bf16Product::kDot below; by the rule, kOneRow on a CPU with AVX512-BF16: Zen 4): the
// same exact products, each lane adding a pair of neighbouring columns per step (quant_avx512.cpp
// rows_bf16_dot), the same bits in either order. On the
// 2-core Zen 4 VM, synth TinyLlama BF16 decode (`ar-bench -p 1 -n 32 -r 3`, alternating, either
// binary first) one thread 11.1-12.7 -> 11.9-13.7 tok/s, faster in 7 of 7 pairs (median 1.07x),
// two threads within the bus's noise (median 1.03x, 4 of 7).
//   kTwoStreams: rows r0 + i and r0 + h + i together (two memory streams far apart), activations
//     widened to f32 once per call, each stream prefetched ahead into L2. Measured faster on the
//     Intel Xeon VM (quant_avx512.cpp).
//   kOneRow: one row after the other (one sequential stream), activations kept in half precision
//     and converted at each load, no software prefetch. On the 2-core AMD EPYC (Zen 4) VM: decode
//     of synth TinyLlama F16 on one thread 10.3-10.6 -> 14.0-14.7 tok/s, BF16 10.2-10.4 ->
//     13.6-14.6, alternating in one run. A read loop in the decode's matrix shapes there (one
//     thread, 2 MiB pages): two far streams with 4 KiB prefetch 10.3-10.9 tok/s-equivalent; one
//     stream with f32 activations 9.9-10.3 and with half activations 12.9-13.2 in the same run
//     (a 64-byte f32 load per 32 weight bytes costs more than converting a 32-byte half load);
//     and software prefetch made one stream slower (a 2 GiB sweep: 28-31 GB/s without, 17-23
//     with 2-8 KiB ahead).
//   On the 2-core AMD EPYC Zen 5 VM (family 26) the order flips back to kTwoStreams. A sweep of
//   the decode's matrix shapes through the backend's pool and ranges, alternating (12-15 reps, GB/s
//   of weights): BF16 one thread 21.9 -> 25.1 and 26.5 -> 28.9, two threads 36.0 -> 39.2 and
//   50.5 -> 56.8 (two other sweeps level at two threads); F16 31.3 -> 33.8 at one thread and
//   39.1 -> 42.2 at two. End to end, BF16 decode in alternating pairs +1% to +11%. Re-measured
//   with 8 layers, 12 reps: BF16 one thread 29.9 -> 32.5 and 27.2 -> 29.8, two threads 43.1 ->
//   54.1 and 40.3 -> 42.7; F16 30.5 -> 32.7, 29.4 -> 33.8, 37.3 -> 38.2, 37.7 -> 42.1.
enum class Dense16Order { kTwoStreams, kOneRow };
// How the Avx512 set multiplies BF16 rows: widened to f32 and multiplied by FMA (the F16 rows'
// kernel; bit-identical in either order), or by vdpbf16ps (AVX512-BF16; the pairing above, the
// same bits in either order). F16 rows always take FMA.
enum class Bf16Product { kFma, kDot };
// An order and, for BF16 rows, a product.
struct Dense16Kernel {
  Dense16Order order = Dense16Order::kTwoStreams;
  Bf16Product bf16 = Bf16Product::kFma;
  bool operator==(const Dense16Kernel&) const = default;
};
struct CpuFeatures;
// The order for a CPU: kOneRow on AMD CPUs before Zen 5 (family < 26), kTwoStreams elsewhere
// (Intel, and AMD from Zen 5 on). Pure; portable code.
Dense16Order dense16_order_for(const CpuFeatures& features);
// The kernel for a CPU: dense16_order_for(features), and vdpbf16ps for BF16 where that order is
// kOneRow and the CPU has AVX512-BF16 (Zen 4); FMA elsewhere, Zen 5 included, where vdpbf16ps
// decode has not been measured. On the 2-core Zen 4 VM, synth TinyLlama BF16 decode (`ar-bench
// -p 1 -n 32 -r 3`, the four kernels in rotating order, 6 rounds; tok/s median and range): one
// thread one-row+vdpbf16ps 14.3 (13.9-14.9), one-row+fma 13.6 (12.5-13.7), two-streams+vdpbf16ps
// 11.2 (10.6-11.5), two-streams+fma 10.8 (10.6-11.3); two threads 16.1-17.1 for all four, each
// ranging 15-25 with the bus. Pure; portable code.
Dense16Kernel dense16_kernel_for(const CpuFeatures& features);

// The environment variable that replaces that rule, as kKernelIsaEnv caps the kernel set: to
// measure the kernels against each other on one machine (bench/README.md), or to keep the faster
// one on a CPU the rule has not been measured on. Values: "one-row" or "two-streams" (the order,
// BF16's product by the rule for that order: vdpbf16ps with one-row where the CPU has
// AVX512-BF16), or either followed by "+fma" or "+vdpbf16ps" (BF16's product too). Unset or
// empty: the rule. Read once, with the kernels; a value that names no kernel this CPU can run
// ("+vdpbf16ps" without AVX512-BF16) changes nothing there, and the CPU backend refuses to open
// with it (open_cpu_backend: "bad_param" naming the value).
inline constexpr const char* kDense16Env = "KAKEYA_DENSE16";
// The kernel a kDense16Env value names on a CPU with `features` (empty: the rule), or false when
// it names none or one the CPU cannot run. Pure; portable code.
bool parse_dense16(const char* value, const CpuFeatures& features, Dense16Kernel* kernel);
// The kernel as a kDense16Env value names it in full: "one-row+vdpbf16ps", "two-streams+fma", ...
std::string dense16_kernel_name(Dense16Kernel kernel);
// Reads kDense16Env for this CPU: *kernel = the kernel it names, or dense16_kernel_for(
// cpu_features()) when it is unset or empty. Returns nullptr, or the variable's value when it
// names no kernel this CPU can run (*kernel is then the rule's).
const char* dense16_env(Dense16Kernel* kernel);
// The kernel the Avx512 set uses on this CPU: dense16_env's, chosen once.
// REQUIRES: kernel_isa_available(KernelIsa::Avx512) (compiled with the AVX-512 flags).
Dense16Kernel avx512_dense16_kernel();
// The Avx512 set's F16/BF16 mat-vec by a given kernel (tests and benches): y[r - r0] = row r · x.
// REQUIRES: kernel_isa_available(KernelIsa::Avx512); type F16 or BF16; act from
// quantize_activations(type, ...); kernel.bf16 == kDot only where cpu_features().avx512bf16.
void avx512_matvec_dense16(Dense16Kernel kernel, GgmlType type, const void* w, int64_t n, int64_t r0, int64_t r1,
                           const ActivationBuffer& act, float* y);

// How the Avx512 set's packed mat-vec (Q4_0, Q8_0; layout above) reads a matrix. All give the same
// bits (the portable kernels' exactly).
//   kTwoStreams: its VPDPBUSD kernels, two groups at once, each stream prefetched ahead into L2
//     (prefetch_bytes()) and L1. Measured faster on the Intel Xeon VM (quant_avx512.cpp).
//   kOneStream: its VPDPBUSD kernels, one group after the other, no software prefetch (the
//     hardware prefetcher follows one stream). On the 2-core AMD EPYC (Zen 4) VM, one thread from
//     memory (kakeya_kernels_bench, 60 matrices of 5632×2048): packed Q4_0 21.7-22.1 -> 28.5-32.1
//     GB/s; synth TinyLlama Q4_0 decode (alternating, 2 rounds) one thread 34.8-35.9 -> 45.0-50.7
//     tok/s, two threads 40.4-54.0 -> 48.1-59.1.
//   kAvx2: the Avx2 set's kernel, which on that VM does not prefetch either. Its Q8_0 reads 54
//     GB/s from cache where the 512-bit one reads 35.5 (two chains of four VPDPBUSD per block),
//     31.3 from memory against 25.8; Q8_0 decode one thread 22.4-22.8 -> 25.8-26.3 tok/s, two
//     threads 27.5-27.9 -> 30.4-46.7 (the same runs).
enum class PackedPath { kTwoStreams, kOneStream, kAvx2 };
// The path the Avx512 set takes for `type` on this CPU: kTwoStreams except on AMD CPUs, where Q8_0
// takes kAvx2 and Q4_0 kOneStream. REQUIRES: kernel_isa_available(KernelIsa::Avx512).
PackedPath avx512_packed_path(GgmlType type);
// The Avx512 set's packed mat-vec along a given path (tests and benches), as matvec_packed.
// REQUIRES: kernel_isa_available(KernelIsa::Avx512); type Q4_0 or Q8_0.
void avx512_matvec_packed_path(PackedPath path, GgmlType type, const uint8_t* packed, int64_t n, int64_t r0,
                               int64_t r1, const ActivationBuffer& act, float* y);

}  // namespace kakeya::engine
