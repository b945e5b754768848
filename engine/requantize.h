#pragma once
// A GGUF model re-typed into a new file, as llama-quantize does without an importance matrix:
// `kakeya-engine quantize IN OUT TYPE` and the quantized-copy draft (draft.h) both write through
// write_requantized().
//
// Which tensors change: every 2-D tensor whose name has a llama role (token_embd, output,
// blk.N.attn_{q,k,v,output}, blk.N.ffn_{gate,up,down}) gets the file type's type for that role
// (presets/synth_mix.h: llama-quant.cpp's llama_tensor_get_type); with `pure` (llama-quantize
// --pure) every 2-D tensor gets the file type's default type. Rows that are not whole blocks of
// the chosen type: the role rules' fallbacks apply, and where none fits the copy is refused, as
// llama-quantize refuses it; with `pure` such tensors keep their type and bytes (llama-quantize
// --pure would abort). 1-D tensors (norms, rope_freqs) keep their type and bytes. Each
// re-typed row is dequantized to f32 (engine/cpu/quant.h) and converted by convert_row
// (quantize.h: byte-identical to llama-quantize's reference quantizers).
// Metadata is copied (integer widths folded to u32/i32/u64, as GgufWriter holds them) with
// general.file_type set to the file type, plus `extra_kvs`.
#include <string>
#include <utility>
#include <vector>

#include "bridge/result.h"
#include "engine/gguf_writer.h"
#include "engine/model.h"
#include "engine/presets/synth_mix.h"

namespace kakeya::engine {

struct RequantizeOptions {
  LlamaFileType ftype = LlamaFileType::Q8_0;
  bool pure = false;
  std::vector<std::pair<std::string, GgufValue>> extra_kvs;
};

// What write_requantized() changed: tensors re-typed / kept, and the output size in bytes.
struct RequantizeSummary {
  size_t retyped = 0;
  size_t kept = 0;
  uint64_t bytes = 0;
};

// Writes `model`'s GGUF re-typed to `path`. Errors: "bad_shape" (not pure: a role's type and its
// fallbacks do not fit the tensor's row length; the message names the tensor), "io".
Result<RequantizeSummary> write_requantized(const LlamaModel& model, const RequantizeOptions& options,
                                            const std::string& path);

}  // namespace kakeya::engine
