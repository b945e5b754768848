// Portable kernels and the run-time dispatcher. Dequantization and the integer parts of the
// dot products mirror ggml's reference implementations (ggml-quants.c, ggml-cpu-quants.c);
// the code is written independently from the documented block layouts.

#include "engine/cpu/quant.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string_view>
#include <vector>

#include "engine/cpu/cpu_features.h"
#include "engine/cpu/quant_internal.h"

#if defined(__clang__)
#pragma clang fp contract(off)
#endif

namespace kakeya::engine {

namespace {

// All 65536 half values as f32 (256 KiB, built once), like ggml's ggml_table_f32_f16.
const float* fp16_table() {
  static const std::vector<float> table = [] {
    std::vector<float> t(65536);
    for (uint32_t i = 0; i < 65536; ++i) t[i] = fp16_to_fp32(static_cast<uint16_t>(i));
    return t;
  }();
  return table.data();
}

inline float h2f(uint16_t h) { return fp16_to_fp32(h); }

inline float bf16_inline(uint16_t h) {
  const uint32_t u = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// ---- dequantization ----

void dequant_q4_0(const BlockQ4_0* x, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const float d = h2f(x[i].d);
    for (int j = 0; j < 16; ++j) {
      const int x0 = (x[i].qs[j] & 0x0F) - 8;
      const int x1 = (x[i].qs[j] >> 4) - 8;
      y[i * 32 + j] = static_cast<float>(x0) * d;
      y[i * 32 + j + 16] = static_cast<float>(x1) * d;
    }
  }
}

void dequant_q8_0(const BlockQ8_0* x, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const float d = h2f(x[i].d);
    for (int j = 0; j < 32; ++j) y[i * 32 + j] = static_cast<float>(x[i].qs[j]) * d;
  }
}

void dequant_q4_k(const BlockQ4_K* x, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const uint8_t* q = x[i].qs;
    const float d = h2f(x[i].d);
    const float dmin = h2f(x[i].dmin);
    for (int j = 0; j < 4; ++j) {  // 64 elements: sub-blocks 2j (low nibbles), 2j+1 (high)
      uint8_t sc, m;
      q4k_scale_min(2 * j, x[i].scales, &sc, &m);
      const float d1 = d * sc, m1 = dmin * m;
      q4k_scale_min(2 * j + 1, x[i].scales, &sc, &m);
      const float d2 = d * sc, m2 = dmin * m;
      for (int l = 0; l < 32; ++l) *y++ = round_f32(d1 * static_cast<float>(q[l] & 0xF)) - m1;
      for (int l = 0; l < 32; ++l) *y++ = round_f32(d2 * static_cast<float>(q[l] >> 4)) - m2;
      q += 32;
    }
  }
}

// Q6_K element k of a super-block: half h = k/128, within it l = k%32 and quarter g = (k%128)/32:
// 4 low bits from ql[64h + l + 32(g&1)] (nibble g>>1), 2 high bits from qh[32h + l] (bits 2g),
// minus 32; scale index 8h + l/16 + 2g.
void dequant_q6_k(const BlockQ6_K* x, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const float d = h2f(x[i].d);
    const uint8_t* ql = x[i].ql;
    const uint8_t* qh = x[i].qh;
    const int8_t* sc = x[i].scales;
    for (int half = 0; half < 2; ++half) {
      for (int l = 0; l < 32; ++l) {
        const int is = l / 16;
        const int q1 = ((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
        const int q2 = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
        const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
        const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
        y[l + 0] = d * static_cast<float>(sc[is + 0]) * static_cast<float>(q1);
        y[l + 32] = d * static_cast<float>(sc[is + 2]) * static_cast<float>(q2);
        y[l + 64] = d * static_cast<float>(sc[is + 4]) * static_cast<float>(q3);
        y[l + 96] = d * static_cast<float>(sc[is + 6]) * static_cast<float>(q4);
      }
      y += 128;
      ql += 64;
      qh += 32;
      sc += 8;
    }
  }
}

void portable_dequantize_row(GgmlType type, const void* src, float* dst, int64_t n) {
  switch (type) {
    case GgmlType::F32:
      std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
      return;
    case GgmlType::F16: {
      const auto* s = static_cast<const uint16_t*>(src);
      const float* table = fp16_table();
      for (int64_t i = 0; i < n; ++i) dst[i] = table[s[i]];
      return;
    }
    case GgmlType::BF16: {
      const auto* s = static_cast<const uint16_t*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = bf16_inline(s[i]);
      return;
    }
    case GgmlType::Q4_0: dequant_q4_0(static_cast<const BlockQ4_0*>(src), dst, n / 32); return;
    case GgmlType::Q8_0: dequant_q8_0(static_cast<const BlockQ8_0*>(src), dst, n / 32); return;
    case GgmlType::Q4_K: dequant_q4_k(static_cast<const BlockQ4_K*>(src), dst, n / 256); return;
    case GgmlType::Q6_K: dequant_q6_k(static_cast<const BlockQ6_K*>(src), dst, n / 256); return;
    case GgmlType::Q8_K: {
      const auto* b = static_cast<const BlockQ8_K*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = b[i / 256].d * static_cast<float>(b[i / 256].qs[i % 256]);
      return;
    }
    case GgmlType::Q8_1: {  // activations only: the Q8_0 part of the block
      const auto* b = static_cast<const BlockQ8_1*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<float>(b[i / 32].qs[i % 32]) * h2f(b[i / 32].d);
      return;
    }
    default:
      if (const detail::TypeKernels* k = detail::lanes_portable(type)) k->dequantize(src, dst, n);
      return;
  }
}

// ---- activations ----

void portable_quantize_activations(GgmlType weight_type, const float* x, int64_t n, ActivationBuffer& out) {
  out.vec_dot_type = vec_dot_type(weight_type);
  out.n = n;
  out.bytes.resize(detail::activation_bytes(weight_type, n));
  switch (out.vec_dot_type) {
    case GgmlType::F32:
      std::memcpy(out.bytes.data(), x, static_cast<size_t>(n) * sizeof(float));
      return;
    case GgmlType::F16: {
      auto* d = reinterpret_cast<uint16_t*>(out.bytes.data());
      for (int64_t i = 0; i < n; ++i) d[i] = fp32_to_fp16(x[i]);
      return;
    }
    case GgmlType::BF16: {
      auto* d = reinterpret_cast<uint16_t*>(out.bytes.data());
      for (int64_t i = 0; i < n; ++i) d[i] = fp32_to_bf16(x[i]);
      return;
    }
    case GgmlType::Q8_0:
      detail::quantize_row_q8_0(x, reinterpret_cast<BlockQ8_0*>(out.bytes.data()), n);
      detail::fill_block_sums(out);
      return;
    case GgmlType::Q8_1:
      detail::quantize_row_q8_1(x, reinterpret_cast<BlockQ8_1*>(out.bytes.data()), n);
      return;
    default:
      detail::quantize_row_q8_k(x, reinterpret_cast<BlockQ8_K*>(out.bytes.data()), n);
      return;
  }
}

// ---- dot products (f32 accumulation per block, like ggml's scalar paths) ----

float dot_f32_lanes(const float* w, const float* a, int64_t n) {
  // Eight partial sums mirror a SIMD accumulator and keep the rounding error small.
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int k = 0; k < 8; ++k) acc[k] += w[i + k] * a[i + k];
  float s = 0;
  for (int k = 0; k < 8; ++k) s += acc[k];
  for (; i < n; ++i) s += w[i] * a[i];
  return s;
}

template <float (*Conv)(uint16_t)>
float dot_half(const uint16_t* w, const uint16_t* a, int64_t n) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int k = 0; k < 8; ++k) acc[k] += Conv(w[i + k]) * Conv(a[i + k]);
  float s = 0;
  for (int k = 0; k < 8; ++k) s += acc[k];
  for (; i < n; ++i) s += Conv(w[i]) * Conv(a[i]);
  return s;
}

float dot_f16(const uint16_t* w, const uint16_t* a, int64_t n) {
  const float* t = fp16_table();
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int k = 0; k < 8; ++k) acc[k] += t[w[i + k]] * t[a[i + k]];
  float s = 0;
  for (int k = 0; k < 8; ++k) s += acc[k];
  for (; i < n; ++i) s += t[w[i]] * t[a[i]];
  return s;
}

float dot_q8_0(const BlockQ8_0* x, const BlockQ8_0* y, int64_t nb) {
  float s = 0;
  for (int64_t i = 0; i < nb; ++i) {
    int sumi = 0;
    for (int j = 0; j < 32; ++j) sumi += x[i].qs[j] * y[i].qs[j];
    s += round_f32(static_cast<float>(sumi) * (h2f(x[i].d) * h2f(y[i].d)));
  }
  return s;
}

// Q4_0 follows ggml-cpu's x86 path for Q4_0 weights, which llama.cpp takes whenever the row
// count is a multiple of 8: the weights are repacked (ggml-cpu-aarch64.cpp, "q4_0_8x8_q8_0")
// and every output row is ONE fused multiply-add chain over blocks,
//   s = fma(float(sumi_b), fp16(w.d)·fp16(a.d), s),
// with sumi_b the exact integer block sum. Rounding like that (instead of lane-wise partial sums,
// or a separate multiply and add) matters: a 1-ulp difference in a matmul output can flip a Q8_0
// rounding tie in the next activation quantization and move the logits by ~1e-2.
float dot_q4_0(const BlockQ4_0* x, const BlockQ8_0* y, int64_t nb) {
  float s = 0;
  for (int64_t i = 0; i < nb; ++i) {
    int sumi = 0;
    for (int j = 0; j < 16; ++j) {
      sumi += ((x[i].qs[j] & 0x0F) - 8) * y[i].qs[j];
      sumi += ((x[i].qs[j] >> 4) - 8) * y[i].qs[j + 16];
    }
    s = std::fma(static_cast<float>(sumi), round_f32(h2f(x[i].d) * h2f(y[i].d)), s);
  }
  return s;
}

float dot_q4_k(const BlockQ4_K* x, const BlockQ8_K* y, int64_t nb) {
  float s = 0;
  for (int64_t i = 0; i < nb; ++i) {
    int32_t sum_q = 0;  // sum_j scale_j * <q4_j, q8_j>
    int32_t sum_m = 0;  // sum_j min_j * sum(q8_j)
    const uint8_t* q4 = x[i].qs;
    const int8_t* q8 = y[i].qs;
    for (int j = 0; j < 4; ++j) {
      uint8_t sc0, m0, sc1, m1;
      q4k_scale_min(2 * j, x[i].scales, &sc0, &m0);
      q4k_scale_min(2 * j + 1, x[i].scales, &sc1, &m1);
      int32_t lo = 0, hi = 0;
      for (int l = 0; l < 32; ++l) {
        lo += (q4[l] & 0xF) * q8[l];
        hi += (q4[l] >> 4) * q8[l + 32];
      }
      sum_q += sc0 * lo + sc1 * hi;
      sum_m += m0 * (y[i].bsums[4 * j] + y[i].bsums[4 * j + 1]) + m1 * (y[i].bsums[4 * j + 2] + y[i].bsums[4 * j + 3]);
      q4 += 32;
      q8 += 64;
    }
    const float d = h2f(x[i].d) * y[i].d;
    const float dmin = h2f(x[i].dmin) * y[i].d;
    s += round_f32(d * static_cast<float>(sum_q)) - round_f32(dmin * static_cast<float>(sum_m));
  }
  return s;
}

float dot_q6_k(const BlockQ6_K* x, const BlockQ8_K* y, int64_t nb) {
  float s = 0;
  for (int64_t i = 0; i < nb; ++i) {
    int32_t sum = 0;
    const uint8_t* ql = x[i].ql;
    const uint8_t* qh = x[i].qh;
    const int8_t* q8 = y[i].qs;
    const int8_t* sc = x[i].scales;
    for (int half = 0; half < 2; ++half) {
      int32_t g[8] = {0, 0, 0, 0, 0, 0, 0, 0};  // per 16-element group of this half
      for (int l = 0; l < 32; ++l) {
        const int is = l / 16;
        const int q1 = ((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
        const int q2 = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
        const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
        const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
        g[is + 0] += q1 * q8[l];
        g[is + 2] += q2 * q8[l + 32];
        g[is + 4] += q3 * q8[l + 64];
        g[is + 6] += q4 * q8[l + 96];
      }
      for (int k = 0; k < 8; ++k) sum += sc[k] * g[k];
      ql += 64;
      qh += 32;
      q8 += 128;
      sc += 8;
    }
    s += round_f32((h2f(x[i].d) * y[i].d) * static_cast<float>(sum));
  }
  return s;
}

float portable_vec_dot(GgmlType type, const void* row, const ActivationBuffer& act) {
  const int64_t n = act.n;
  const void* a = act.bytes.data();
  switch (type) {
    case GgmlType::F32: return dot_f32_lanes(static_cast<const float*>(row), static_cast<const float*>(a), n);
    case GgmlType::F16:
      return dot_f16(static_cast<const uint16_t*>(row), static_cast<const uint16_t*>(a), n);
    case GgmlType::BF16:
      return dot_half<bf16_inline>(static_cast<const uint16_t*>(row), static_cast<const uint16_t*>(a), n);
    case GgmlType::Q8_0:
      return dot_q8_0(static_cast<const BlockQ8_0*>(row), static_cast<const BlockQ8_0*>(a), n / 32);
    case GgmlType::Q4_0:
      return dot_q4_0(static_cast<const BlockQ4_0*>(row), static_cast<const BlockQ8_0*>(a), n / 32);
    case GgmlType::Q4_K:
      return dot_q4_k(static_cast<const BlockQ4_K*>(row), static_cast<const BlockQ8_K*>(a), n / 256);
    case GgmlType::Q6_K:
      return dot_q6_k(static_cast<const BlockQ6_K*>(row), static_cast<const BlockQ8_K*>(a), n / 256);
    default: break;
  }
  const detail::TypeKernels* k = detail::lanes_portable(type);  // nullptr only for activation formats
  return k != nullptr ? k->dot(row, a, n) : 0.0f;
}

void portable_matvec(GgmlType type, const void* w, int64_t n, int64_t r0, int64_t r1, const ActivationBuffer& act,
                     float* y) {
  if (const detail::TypeKernels* k = detail::lanes_portable(type)) return k->matvec(w, n, r0, r1, act, y);
  const size_t stride = ggml_row_bytes(type, n);
  const auto* base = static_cast<const uint8_t*>(w);
  for (int64_t r = r0; r < r1; ++r) y[r - r0] = portable_vec_dot(type, base + static_cast<size_t>(r) * stride, act);
}

// Row by row: each row is copied back to its row-major blocks and dotted as usual.
void portable_matvec_packed(GgmlType type, const uint8_t* packed, int64_t n, int64_t r0, int64_t r1,
                            const ActivationBuffer& act, float* y) {
  thread_local std::vector<uint8_t> row;
  row.resize(ggml_row_bytes(type, n));
  for (int64_t r = r0; r < r1; ++r) {
    unpack_row(type, packed, n, r, row.data());
    y[r - r0] = portable_vec_dot(type, row.data(), act);
  }
}

void portable_dot_f32_rows(const float* q, const float* k, size_t stride, size_t rows, int64_t n, float* out) {
  for (size_t r = 0; r < rows; ++r) out[r] = dot_f32_lanes(q, k + r * stride, n);
}

// exp_f32 (quant.h); quant_avx2.cpp's exp8 runs the same operations lane by lane.
float portable_exp_f32(float x) {
  if (std::isnan(x)) return x;
  if (x > detail::kExpF32Max) return std::numeric_limits<float>::infinity();
  if (x < detail::kExpF32Min) return 0.0f;
  const float n = std::nearbyint(x * detail::kLog2e);
  float r = std::fma(n, -detail::kLn2Hi, x);
  r = std::fma(n, detail::kLn2Lo, r);
  float p = detail::kExpPoly[0];
  for (int i = 1; i < 6; ++i) p = std::fma(p, r, detail::kExpPoly[i]);
  p = std::fma(p, r * r, r);
  p = p + 1.0f;
  const uint32_t bits = static_cast<uint32_t>(static_cast<int32_t>(n) + 127) << 23;  // 2^n, n in [-126, 127]
  float scale;
  std::memcpy(&scale, &bits, sizeof scale);
  return p * scale;
}

void portable_swiglu_f32(float* gate, const float* up, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float v = gate[i];
    gate[i] = (v / (1.0f + portable_exp_f32(-v))) * up[i];
  }
}

double portable_exp_sum_f32(float* row, int64_t n, float shift) {
  double s[8] = {};
  for (int64_t i = 0; i < n; ++i) {
    row[i] = portable_exp_f32(row[i] - shift);
    s[i % 8] += row[i];
  }
  return ((s[0] + s[4]) + (s[2] + s[6])) + ((s[1] + s[5]) + (s[3] + s[7]));
}

void portable_scale_f32(float* x, int64_t n, float s) {
  for (int64_t i = 0; i < n; ++i) x[i] *= s;
}

// The newest kernel set the CPU can run, capped by kKernelIsaEnv where that names one.
KernelIsa dispatched_isa() {
  KernelIsa cap;
  kernel_isa_cap(&cap);
  for (KernelIsa isa : {KernelIsa::Avx512, KernelIsa::Avx2})
    if (static_cast<int>(isa) <= static_cast<int>(cap) && kernel_isa_available(isa)) return isa;
  return KernelIsa::Portable;
}

const QuantKernels& active_kernels() {
  static const QuantKernels& k = quant_kernels(dispatched_isa());
  return k;
}

// Offsets inside a packed group (see quant.h).
size_t pack_quant_bytes(GgmlType type) { return type == GgmlType::Q4_0 ? 16 : 32; }

}  // namespace

namespace detail {

const QuantKernels& portable_kernels() {
  static const QuantKernels k{portable_dequantize_row, portable_quantize_activations, portable_vec_dot,
                              portable_matvec, portable_matvec_packed, portable_dot_f32_rows,
                              portable_swiglu_f32, portable_exp_sum_f32, portable_scale_f32};
  return k;
}

void matvec_rows(size_t row_bytes, float (*dot)(const void*, const void*, int64_t), const void* w, int64_t n,
                 int64_t r0, int64_t r1, const ActivationBuffer& act, float* y) {
  constexpr int64_t kAhead = 2;  // rows prefetched ahead of the one being computed
  const auto* base = static_cast<const uint8_t*>(w);
  for (int64_t r = r0; r < r1; ++r) {
    const uint8_t* pf = base + static_cast<size_t>(r + kAhead) * row_bytes;
    for (size_t off = 0; off < row_bytes; off += 64) __builtin_prefetch(pf + off);
    y[r - r0] = dot(base + static_cast<size_t>(r) * row_bytes, act.bytes.data(), n);
  }
}

size_t packed_group_bytes(GgmlType type, int64_t n) {
  return static_cast<size_t>((n / 32 + 1) / 2) * packed_pair_bytes(type);
}

size_t activation_bytes(GgmlType weight_type, int64_t n) {
  return ggml_row_bytes(vec_dot_type(weight_type), n);
}

// ggml quantize_row_q8_0 as run by the x86 SIMD path that produced the references:
// id = 127/amax, round half to even.
void quantize_row_q8_0(const float* x, BlockQ8_0* y, int64_t n) {
  for (int64_t i = 0; i < n / 32; ++i) {
    float amax = 0.0f;
    for (int j = 0; j < 32; ++j) amax = std::fmax(amax, std::fabs(x[j]));
    const float d = amax / 127.f;
    const float id = amax != 0.0f ? 127.f / amax : 0.0f;
    y[i].d = fp32_to_fp16(d);
    for (int j = 0; j < 32; ++j) y[i].qs[j] = static_cast<int8_t>(nearest_int(x[j] * id));
    x += 32;
  }
}

void quantize_row_q8_1(const float* x, BlockQ8_1* y, int64_t n) {
  for (int64_t i = 0; i < n / 32; ++i, x += 32) {
    float amax = 0.0f;
    for (int j = 0; j < 32; ++j) amax = std::fmax(amax, std::fabs(x[j]));
    const float d = amax / 127.f;
    const float id = amax != 0.0f ? 127.f / amax : 0.0f;
    int32_t sum = 0;
    for (int j = 0; j < 32; ++j) {
      y[i].qs[j] = static_cast<int8_t>(nearest_int(x[j] * id));
      sum += y[i].qs[j];
    }
    y[i].d = fp32_to_fp16(d);
    y[i].s = fp32_to_fp16(d * static_cast<float>(sum));
  }
}

void fill_block_sums(ActivationBuffer& out) {
  const int64_t nb = out.n / kQK8_0;
  const auto* a = reinterpret_cast<const BlockQ8_0*>(out.bytes.data());
  out.block_sums.resize(static_cast<size_t>(nb));
  for (int64_t b = 0; b < nb; ++b) {
    int32_t sum = 0;
    for (int j = 0; j < kQK8_0; ++j) sum += a[b].qs[j];
    out.block_sums[static_cast<size_t>(b)] = sum;
  }
}

// ggml quantize_row_q8_K_ref.
void quantize_row_q8_k(const float* x, BlockQ8_K* y, int64_t n) {
  for (int64_t i = 0; i < n / 256; ++i) {
    float max = 0.0f, amax = 0.0f;
    for (int j = 0; j < 256; ++j) {
      const float ax = std::fabs(x[j]);
      if (ax > amax) {
        amax = ax;
        max = x[j];
      }
    }
    if (amax == 0.0f) {
      y[i].d = 0.0f;
      std::memset(y[i].qs, 0, sizeof y[i].qs);
      std::memset(y[i].bsums, 0, sizeof y[i].bsums);
      x += 256;
      continue;
    }
    const float iscale = -127.f / max;
    for (int j = 0; j < 256; ++j) {
      const int v = nearest_int(iscale * x[j]);
      y[i].qs[j] = static_cast<int8_t>(v < 127 ? v : 127);
    }
    for (int j = 0; j < 16; ++j) {
      int sum = 0;
      for (int k = 0; k < 16; ++k) sum += y[i].qs[j * 16 + k];
      y[i].bsums[j] = static_cast<int16_t>(sum);
    }
    y[i].d = 1.0f / iscale;
    x += 256;
  }
}

}  // namespace detail

GgmlType vec_dot_type(GgmlType weight_type) {
  switch (weight_type) {
    case GgmlType::Q4_0:
    case GgmlType::Q5_0:
    case GgmlType::Q8_0:
    case GgmlType::IQ4_NL: return GgmlType::Q8_0;
    case GgmlType::Q4_1:
    case GgmlType::Q5_1: return GgmlType::Q8_1;
    case GgmlType::Q2_K:
    case GgmlType::Q3_K:
    case GgmlType::Q4_K:
    case GgmlType::Q5_K:
    case GgmlType::Q6_K:
    case GgmlType::IQ4_XS: return GgmlType::Q8_K;
    default: return weight_type;  // F32, F16, BF16 (and the activation formats themselves)
  }
}

bool has_dot_kernels(GgmlType weight_type) {
  for (GgmlType t : ggml_storage_types())
    if (t == weight_type) return true;
  return false;
}

const char* kernel_isa_name(KernelIsa isa) {
  switch (isa) {
    case KernelIsa::Avx2: return "avx2";
    case KernelIsa::Avx512: return "avx512";
    case KernelIsa::Portable: break;
  }
  return "portable";
}

const char* kernel_isa_cap(KernelIsa* cap) {
  *cap = KernelIsa::Avx512;
  const char* env = std::getenv(kKernelIsaEnv);
  if (env == nullptr || *env == '\0') return nullptr;
  for (KernelIsa k : {KernelIsa::Portable, KernelIsa::Avx2, KernelIsa::Avx512}) {
    if (std::strcmp(env, kernel_isa_name(k)) == 0) {
      *cap = k;
      return nullptr;
    }
  }
  return env;
}

bool kernel_isa_available(KernelIsa isa) {
  if (isa == KernelIsa::Portable) return true;
#if defined(__x86_64__)
  return isa == KernelIsa::Avx512 ? cpu_features().can_run_avx512() : cpu_features().can_run_avx2();
#else
  return false;
#endif
}

KernelIsa active_kernel_isa() {
  const QuantKernels* k = &active_kernels();
  if (k == &detail::portable_kernels()) return KernelIsa::Portable;
  return k == &detail::avx2_kernels() ? KernelIsa::Avx2 : KernelIsa::Avx512;
}

const QuantKernels& quant_kernels(KernelIsa isa) {
  switch (isa) {
    case KernelIsa::Avx2: return detail::avx2_kernels();
    case KernelIsa::Avx512: return detail::avx512_kernels();
    case KernelIsa::Portable: break;
  }
  return detail::portable_kernels();
}

bool packable(GgmlType type, int64_t n) {
  return (type == GgmlType::Q4_0 || type == GgmlType::Q8_0) && n > 0 && n % 32 == 0;
}

size_t packed_bytes(GgmlType type, int64_t n, int64_t n_out) {
  const auto groups = static_cast<size_t>((n_out + kPackRows - 1) / kPackRows);
  return groups * detail::packed_group_bytes(type, n);
}

// Block b of a row is {fp16 d, qs[Q]} (Q = 16 for Q4_0, 32 for Q8_0); in the group its scale goes
// to the pair's scales[b % 2][i] and its Q/4 chunks of 4 bytes to quants[b % 2][c][i].
void pack_rows(GgmlType type, const void* w, int64_t n, int64_t n_out, uint8_t* out) {
  const int64_t nb = n / 32;
  const size_t q = pack_quant_bytes(type);
  const size_t block = 2 + q;
  const size_t stride = ggml_row_bytes(type, n);
  const size_t gbytes = detail::packed_group_bytes(type, n);
  const auto* src = static_cast<const uint8_t*>(w);
  const int64_t groups = (n_out + kPackRows - 1) / kPackRows;
  std::memset(out, 0, static_cast<size_t>(groups) * gbytes);
  for (int64_t g = 0; g < groups; ++g) {
    uint8_t* group = out + static_cast<size_t>(g) * gbytes;
    for (int64_t i = 0; i < kPackRows && g * kPackRows + i < n_out; ++i) {
      const uint8_t* row = src + static_cast<size_t>(g * kPackRows + i) * stride;
      for (int64_t b = 0; b < nb; ++b) {
        const uint8_t* blk = row + static_cast<size_t>(b) * block;
        std::memcpy(group + detail::packed_scales_offset(type, b) + static_cast<size_t>(i) * 2, blk, 2);
        uint8_t* quants = group + detail::packed_quants_offset(type, b);
        for (size_t c = 0; c < q / 4; ++c)
          std::memcpy(quants + (c * kPackRows + static_cast<size_t>(i)) * 4, blk + 2 + 4 * c, 4);
      }
    }
  }
}

void unpack_row(GgmlType type, const uint8_t* packed, int64_t n, int64_t r, void* row) {
  const int64_t nb = n / 32;
  const size_t q = pack_quant_bytes(type);
  const size_t block = 2 + q;
  const int64_t i = r % kPackRows;
  const uint8_t* group = packed + static_cast<size_t>(r / kPackRows) * detail::packed_group_bytes(type, n);
  auto* dst = static_cast<uint8_t*>(row);
  for (int64_t b = 0; b < nb; ++b) {
    uint8_t* blk = dst + static_cast<size_t>(b) * block;
    std::memcpy(blk, group + detail::packed_scales_offset(type, b) + static_cast<size_t>(i) * 2, 2);
    const uint8_t* quants = group + detail::packed_quants_offset(type, b);
    for (size_t c = 0; c < q / 4; ++c)
      std::memcpy(blk + 2 + 4 * c, quants + (c * kPackRows + static_cast<size_t>(i)) * 4, 4);
  }
}

void dequantize_packed_row(GgmlType type, const uint8_t* packed, int64_t n, int64_t r, float* dst) {
  thread_local std::vector<uint8_t> row;
  row.resize(ggml_row_bytes(type, n));
  unpack_row(type, packed, n, r, row.data());
  dequantize_row(type, row.data(), dst, n);
}

void matvec_packed(GgmlType type, const uint8_t* packed, int64_t n, int64_t r0, int64_t r1,
                   const ActivationBuffer& act, float* y) {
  active_kernels().matvec_packed(type, packed, n, r0, r1, act, y);
}

void dot_f32_rows(const float* q, const float* k, size_t stride, size_t rows, int64_t n, float* out) {
  active_kernels().dot_f32_rows(q, k, stride, rows, n, out);
}

void swiglu_f32(float* gate, const float* up, int64_t n) { active_kernels().swiglu_f32(gate, up, n); }

float exp_f32(float x) { return portable_exp_f32(x); }

double exp_sum_f32(float* row, int64_t n, float shift) { return active_kernels().exp_sum_f32(row, n, shift); }

void scale_f32(float* x, int64_t n, float s) { active_kernels().scale_f32(x, n, s); }

float max_f32(const float* x, size_t n, float init) {
  float lane[8];
  for (float& l : lane) l = init;
  size_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (size_t j = 0; j < 8; ++j) lane[j] = lane[j] < x[i + j] ? x[i + j] : lane[j];
  for (; i < n; ++i) lane[0] = lane[0] < x[i] ? x[i] : lane[0];
  for (size_t j = 1; j < 8; ++j) lane[0] = lane[0] < lane[j] ? lane[j] : lane[0];
  return lane[0];
}

void dequantize_row(GgmlType type, const void* src, float* dst, int64_t n) {
  active_kernels().dequantize_row(type, src, dst, n);
}

void quantize_activations(GgmlType weight_type, const float* x, int64_t n, ActivationBuffer& out) {
  active_kernels().quantize_activations(weight_type, x, n, out);
}

float vec_dot(GgmlType weight_type, const void* row, const ActivationBuffer& act) {
  return active_kernels().vec_dot(weight_type, row, act);
}

void matvec(GgmlType type, const void* w, int64_t n, int64_t r0, int64_t r1, const ActivationBuffer& act, float* y) {
  active_kernels().matvec(type, w, n, r0, r1, act, y);
}

Dense16Order dense16_order_for(const CpuFeatures& features) {
  return features.amd() && !features.amd_zen5_or_later() ? Dense16Order::kOneRow : Dense16Order::kTwoStreams;
}

namespace {
// BF16's product by the rule for an order.
Bf16Product bf16_product_for(Dense16Order order, const CpuFeatures& features) {
  return order == Dense16Order::kOneRow && features.avx512bf16 ? Bf16Product::kDot : Bf16Product::kFma;
}
}  // namespace

Dense16Kernel dense16_kernel_for(const CpuFeatures& features) {
  const Dense16Order order = dense16_order_for(features);
  return {order, bf16_product_for(order, features)};
}

bool parse_dense16(const char* value, const CpuFeatures& features, Dense16Kernel* kernel) {
  if (value == nullptr || *value == '\0') {
    *kernel = dense16_kernel_for(features);
    return true;
  }
  const std::string_view v(value);
  const size_t plus = v.find('+');
  const std::string_view order = v.substr(0, plus);
  Dense16Kernel k;
  if (order == "one-row") {
    k.order = Dense16Order::kOneRow;
  } else if (order == "two-streams") {
    k.order = Dense16Order::kTwoStreams;
  } else {
    return false;
  }
  k.bf16 = bf16_product_for(k.order, features);
  if (plus != std::string_view::npos) {
    const std::string_view product = v.substr(plus + 1);
    if (product == "fma") {
      k.bf16 = Bf16Product::kFma;
    } else if (product == "vdpbf16ps" && features.avx512bf16) {
      k.bf16 = Bf16Product::kDot;
    } else {
      return false;
    }
  }
  *kernel = k;
  return true;
}

std::string dense16_kernel_name(Dense16Kernel kernel) {
  return std::string(kernel.order == Dense16Order::kOneRow ? "one-row" : "two-streams") +
         (kernel.bf16 == Bf16Product::kDot ? "+vdpbf16ps" : "+fma");
}

const char* dense16_env(Dense16Kernel* kernel) {
  const char* env = std::getenv(kDense16Env);
  if (parse_dense16(env, cpu_features(), kernel)) return nullptr;
  *kernel = dense16_kernel_for(cpu_features());
  return env;
}

}  // namespace kakeya::engine
