#pragma once
// The per-op backend table (ggml's test-backend-ops habit): every op of the Backend interface
// (backend.h), for every weight/storage type and a set of shapes chosen to hit edge cases (odd
// sizes, a token count that is not a multiple of the packed group, rows of one block and of
// several, GQA and MQA, positions far past a bounded window, quantized KV storage), run on one
// backend and compared with the scalar reference (presets/reference_ops.h) on the same inputs.
//
// Metrics per case: normalized MSE = Σ(got − want)² / Σ want² and max |got − want|. A case
// passes when both are within its stated tolerance:
//   embed, add, kv_store/kv_copy (f32), argmax, read        exact (0, 0)
//   accept_greedy (against greedy_acceptance over the rows' argmax; ties, all/none accepted)
//                                                            exact (0, 0)
//   add_bias                                                 exact (0, 0)
//   rms_norm, rope, swiglu                                   NMSE 1e-10, max |Δ| 1e-4
//     (rope: normal and NEOX pairs × plain, frequency factors, linear and YaRN scaling, whole
//     and partial rotation; its "type" names the variant, e.g. "neox_yarn")
//   attention (any KV storage; references read its KV)      NMSE 1e-10, max |Δ| 1e-4
//   kv_store of affine 8/4-bit storage                       exact against the host codec
//   matmul vs f32 activations, double accumulation: the activation conversion of a backend's
//   decode path is part of the error, and so is a batched path's own summation order (the CPU
//   backend's GEMM kernels, cpu/gemm.h, for 33 tokens: same activations, f32 sums in the
//   micro-kernel's order) — F32 NMSE 1e-10 / max 1e-3; F16 1e-6 / 1e-2;
//   BF16 1e-4 / 5e-2; Q8_0, Q4_0, Q4_K, Q6_K (8-bit activations) 1e-3 / 0.25 (inputs of unit
//   scale: outputs up to ~10; a one-row output is normalized by its own small energy, which is
//   why the NMSE bound is twice ggml's 5e-4).
// The inputs are deterministic (fixed seeds), so a table is reproducible on one backend. The
// CPU backend's worst cases are well inside these bounds (tests/engine/backend_ops_test.cpp prints
// them); another backend states its own where its arithmetic differs, and says why.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/backend.h"

namespace kakeya::engine {

struct BackendOpResult {
  std::string op;     // "matmul", "attention", ...
  std::string type;   // weight or storage type: "f32", "q4_0", "kv_q8", ...
  std::string shape;  // e.g. "n_in=96 n_out=33 tokens=5"
  double nmse = 0;
  double max_abs = 0;
  double tol_nmse = 0;
  double tol_abs = 0;
  bool passed = false;
};

// Every case of the table on `backend`. Errors: the backend's allocation or upload errors.
Result<std::vector<BackendOpResult>> run_backend_ops(Backend& backend);

// Normalized MSE and max |Δ| of `got` against `want` (sizes must match; a size mismatch gives
// infinity for both). NMSE of an all-zero `want` is Σ got² (0 only when both are zero).
struct OpError {
  double nmse = 0;
  double max_abs = 0;
};
OpError op_error(const std::vector<float>& got, const std::vector<float>& want);

// {backend: to_json(info), cases: [{op, type, shape, nmse, max_abs, tol_nmse, tol_abs, passed}],
//  passed: bool, failed: count}.
nlohmann::json backend_ops_json(const Backend& backend, const std::vector<BackendOpResult>& results);

}  // namespace kakeya::engine
