#include "engine/requantize.h"

#include <algorithm>
#include <filesystem>
#include <optional>
#include <regex>

#include "engine/cpu/quant.h"
#include "engine/quantize.h"

namespace kakeya::engine {
namespace {

// Copies metadata `key` of `f` into `w`, keeping the value (integer widths folded to u32/i32/u64).
Status copy_kv(const GgufFile& f, const std::string& key, GgufWriter& w) {
  switch (f.value_type(key)) {
    case GgufValueType::STRING: {
      KAKEYA_ASSIGN_OR_RETURN(std::string s, f.get_string(key));
      w.add_kv(key, std::move(s));
      return ok_status();
    }
    case GgufValueType::BOOL: {
      KAKEYA_ASSIGN_OR_RETURN(bool b, f.get_bool(key));
      w.add_kv(key, b);
      return ok_status();
    }
    case GgufValueType::F32:
    case GgufValueType::F64: {
      KAKEYA_ASSIGN_OR_RETURN(double d, f.get_float(key));
      w.add_kv(key, static_cast<float>(d));
      return ok_status();
    }
    case GgufValueType::U32: {
      KAKEYA_ASSIGN_OR_RETURN(int64_t v, f.get_int(key));
      w.add_kv(key, static_cast<uint32_t>(v));
      return ok_status();
    }
    case GgufValueType::U64:
    case GgufValueType::I64: {
      KAKEYA_ASSIGN_OR_RETURN(int64_t v, f.get_int(key));
      w.add_kv(key, static_cast<uint64_t>(v));
      return ok_status();
    }
    case GgufValueType::ARRAY: {
      KAKEYA_ASSIGN_OR_RETURN(GgufValueType et, f.get_array_type(key));
      if (et == GgufValueType::STRING) {
        KAKEYA_ASSIGN_OR_RETURN(std::vector<std::string> v, f.get_string_array(key));
        w.add_kv(key, std::move(v));
        return ok_status();
      }
      if (et == GgufValueType::F32 || et == GgufValueType::F64) {
        KAKEYA_ASSIGN_OR_RETURN(std::vector<double> v, f.get_float_array(key));
        w.add_kv(key, std::vector<float>(v.begin(), v.end()));
        return ok_status();
      }
      KAKEYA_ASSIGN_OR_RETURN(std::vector<int64_t> v, f.get_int_array(key));
      std::vector<int32_t> out(v.size());
      for (size_t i = 0; i < v.size(); ++i) out[i] = static_cast<int32_t>(v[i]);
      w.add_kv(key, std::move(out));
      return ok_status();
    }
    default: {
      KAKEYA_ASSIGN_OR_RETURN(int64_t v, f.get_int(key));
      w.add_kv(key, static_cast<int32_t>(v));
      return ok_status();
    }
  }
}

// The llama role of a tensor name, with its block index; nullopt for other tensors.
std::optional<std::pair<TensorRole, int>> tensor_role(const std::string& name) {
  if (name == "token_embd.weight") return std::pair{TensorRole::kTokenEmbd, 0};
  if (name == "output.weight") return std::pair{TensorRole::kOutput, 0};
  static const std::regex blk(R"(blk\.(\d+)\.(attn_q|attn_k|attn_v|attn_output|ffn_gate|ffn_up|ffn_down)\.weight)");
  std::smatch m;
  if (!std::regex_match(name, m, blk)) return std::nullopt;
  const int layer = std::stoi(m[1].str());
  const std::string r = m[2].str();
  const TensorRole role = r == "attn_q"        ? TensorRole::kAttnQ
                          : r == "attn_k"      ? TensorRole::kAttnK
                          : r == "attn_v"      ? TensorRole::kAttnV
                          : r == "attn_output" ? TensorRole::kAttnOutput
                          : r == "ffn_gate"    ? TensorRole::kFfnGate
                          : r == "ffn_up"      ? TensorRole::kFfnUp
                                               : TensorRole::kFfnDown;
  return std::pair{role, layer};
}

}  // namespace

Result<RequantizeSummary> write_requantized(const LlamaModel& model, const RequantizeOptions& o,
                                            const std::string& path) {
  const GgufFile& f = model.gguf();
  const LlamaHparams& hp = model.hparams();
  const GgmlType base = llama_file_type_default(o.ftype);
  GgufWriter w;
  for (const std::string& key : f.keys()) {
    if (key == "general.alignment" || key == "general.file_type") continue;  // the writer's / ours
    if (std::any_of(o.extra_kvs.begin(), o.extra_kvs.end(), [&](const auto& kv) { return kv.first == key; })) continue;
    KAKEYA_TRY(copy_kv(f, key, w));
  }
  w.add_kv("general.file_type", static_cast<uint32_t>(o.ftype));
  for (const auto& [key, value] : o.extra_kvs) w.add_kv(key, value);

  RequantizeSummary summary;
  const int n_gqa = static_cast<int>(hp.n_head / std::max<int64_t>(1, hp.n_head_kv));
  for (const TensorInfo& t : f.tensors()) {
    GgmlType out_type = t.type;
    if (t.ne.size() == 2) {
      if (o.pure) {
        out_type = base;
      } else if (const auto role = tensor_role(t.name)) {
        auto chosen = llama_mix_tensor_type(o.ftype, MixTensor{role->first, role->second,
                                                               static_cast<int>(hp.n_layer), n_gqa, t.ne[0]});
        if (!chosen.ok()) {  // llama-quantize: "Unsupported tensor size encountered"
          return make_error(chosen.error().code, "tensor " + t.name + ": " + chosen.error().message +
                                                     " (--pure keeps such tensors as they are)");
        }
        out_type = *chosen;
      }
      if (t.ne[0] % ggml_block_size(out_type) != 0) out_type = t.type;
    }
    const bool retype = out_type != t.type;
    ++(retype ? summary.retyped : summary.kept);
    const TensorInfo* src = &t;
    w.add_tensor(t.name, out_type, t.ne, [src, retype, out_type](uint8_t* dst, size_t nbytes) -> Status {
      if (!retype) {
        std::copy(src->data, src->data + std::min(nbytes, src->nbytes), dst);
        return ok_status();
      }
      const int64_t n = src->ne[0];
      const size_t out_row = ggml_row_bytes(out_type, n);
      std::vector<float> row(static_cast<size_t>(n));
      for (int64_t r = 0; r < src->rows(); ++r) {
        dequantize_row(src->type, src->data + static_cast<size_t>(r) * src->row_bytes(), row.data(), n);
        KAKEYA_TRY(convert_row(out_type, row.data(), dst + static_cast<size_t>(r) * out_row, n));
      }
      return ok_status();
    });
  }
  KAKEYA_TRY(w.write(path));
  std::error_code ec;
  summary.bytes = std::filesystem::file_size(path, ec);
  return summary;
}

}  // namespace kakeya::engine
