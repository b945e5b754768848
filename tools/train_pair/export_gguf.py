#!/usr/bin/env python3
"""Export a train.py checkpoint to a llama GGUF the engine (and llama.cpp) reads, and write the
PyTorch reference logits of the exported weights.

  export_gguf.py CKPT.pt SPM.model OUT.gguf --type f16|f32 --name NAME
                 [--logits OUT.npy --tokens heldout.u16 --positions 64]

GGUF v3 (github.com/ggml-org/ggml docs/gguf.md), little-endian, alignment 32, written here with
numpy (no `gguf` package): the llama keys engine/presets/synth.cpp writes, and the tokenizer keys
of the SentencePiece model (tokenizer.ggml.model "llama", tokens, scores, token_type 1 normal /
2 unknown / 3 control / 5 unused / 6 byte, bos 1 / eos 2 / unk 0, add_bos true, add_eos false,
add_space_prefix false: tokenizer.py trains without a dummy prefix). Matrices are stored as
trained, [ne0 = in, ne1 = out], with no Q/K permutation (the model was trained in the
interleaved RoPE layout, GGML rope mode 0). With --type f16 the matrices are F16 and the norms
F32 (general.file_type 1, MOSTLY_F16); with f32 everything is F32 (file_type 0).

Reference logits: the float32 forward pass (CPU, no autocast) of the weights as exported (the F16
matrices rounded to F16 and back) on the first --positions tokens of --tokens, written as a NumPy
.npy float32 [positions, vocab], the same format as `kakeya-engine generate --logits-out`.
"""
import argparse
import hashlib
import os
import struct
import sys

import numpy as np
import sentencepiece as spm
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from model import Config, Llama  # noqa: E402

ALIGN = 32
GGUF_UINT32, GGUF_INT32, GGUF_FLOAT32, GGUF_BOOL, GGUF_STRING, GGUF_ARRAY, GGUF_UINT64 = 4, 5, 6, 7, 8, 9, 10
GGML_F32, GGML_F16 = 0, 1
TOKEN_NORMAL, TOKEN_UNKNOWN, TOKEN_CONTROL, TOKEN_UNUSED, TOKEN_BYTE = 1, 2, 3, 5, 6


def _str(s):
    b = s.encode("utf-8")
    return struct.pack("<Q", len(b)) + b


def _value(v):
    """(type, payload) of a metadata value: str, bool, int (u32), float (f32), ("u64", n), or a
    list of str / float / int (i32)."""
    if isinstance(v, str):
        return GGUF_STRING, _str(v)
    if isinstance(v, bool):
        return GGUF_BOOL, struct.pack("<?", v)
    if isinstance(v, tuple) and v[0] == "u64":
        return GGUF_UINT64, struct.pack("<Q", v[1])
    if isinstance(v, int):
        return GGUF_UINT32, struct.pack("<I", v)
    if isinstance(v, float):
        return GGUF_FLOAT32, struct.pack("<f", v)
    if isinstance(v, list):
        if all(isinstance(x, str) for x in v):
            return GGUF_ARRAY, struct.pack("<IQ", GGUF_STRING, len(v)) + b"".join(_str(x) for x in v)
        if all(isinstance(x, float) for x in v):
            return GGUF_ARRAY, struct.pack("<IQ", GGUF_FLOAT32, len(v)) + np.asarray(v, "<f4").tobytes()
        if all(isinstance(x, int) for x in v):
            return GGUF_ARRAY, struct.pack("<IQ", GGUF_INT32, len(v)) + np.asarray(v, "<i4").tobytes()
    raise TypeError("unsupported GGUF value %r" % (v,))


def write_gguf(path, kvs, tensors):
    """kvs: [(key, value)]; tensors: [(name, ggml type, numpy array [out, in] or [n])]."""
    out = bytearray(b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kvs)))
    for k, v in kvs:
        t, payload = _value(v)
        out += _str(k) + struct.pack("<I", t) + payload
    datas, offset = [], 0
    for name, gtype, arr in tensors:
        data = np.ascontiguousarray(arr, dtype="<f2" if gtype == GGML_F16 else "<f4").tobytes()
        ne = list(reversed(arr.shape))  # GGUF ne0 is the contiguous (last numpy) axis
        out += _str(name) + struct.pack("<I", len(ne)) + struct.pack("<%dQ" % len(ne), *ne)
        out += struct.pack("<IQ", gtype, offset)
        datas.append(data)
        offset += (len(data) + ALIGN - 1) // ALIGN * ALIGN
    out += b"\0" * ((-len(out)) % ALIGN)
    with open(path, "wb") as f:
        f.write(out)
        for data in datas:
            f.write(data)
            f.write(b"\0" * ((-len(data)) % ALIGN))


def tokenizer_kvs(model_file):
    sp = spm.SentencePieceProcessor(model_file=model_file)
    tokens, scores, types = [], [], []
    for i in range(sp.get_piece_size()):
        tokens.append(sp.id_to_piece(i))
        scores.append(float(sp.get_score(i)))
        if sp.is_unknown(i):
            types.append(TOKEN_UNKNOWN)
        elif sp.is_control(i):
            types.append(TOKEN_CONTROL)
        elif sp.is_byte(i):
            types.append(TOKEN_BYTE)
        elif sp.is_unused(i):
            types.append(TOKEN_UNUSED)
        else:
            types.append(TOKEN_NORMAL)
    return [("tokenizer.ggml.model", "llama"), ("tokenizer.ggml.tokens", tokens),
            ("tokenizer.ggml.scores", scores), ("tokenizer.ggml.token_type", types),
            ("tokenizer.ggml.bos_token_id", sp.bos_id()), ("tokenizer.ggml.eos_token_id", sp.eos_id()),
            ("tokenizer.ggml.unknown_token_id", sp.unk_id()), ("tokenizer.ggml.add_bos_token", True),
            ("tokenizer.ggml.add_eos_token", False), ("tokenizer.ggml.add_space_prefix", False)]


def load_model(ckpt_path):
    ck = torch.load(ckpt_path, map_location="cpu")
    model = Llama(Config(**ck["config"]))
    model.load_state_dict(ck["state_dict"])
    return model, ck


def export(model, ck, spm_model, path, gtype_name, name):
    c = model.c
    f16 = gtype_name == "f16"
    kvs = [("general.architecture", "llama"), ("general.name", name),
           ("general.file_type", 1 if f16 else 0),
           ("llama.context_length", c.ctx), ("llama.embedding_length", c.dim),
           ("llama.block_count", c.n_layers), ("llama.feed_forward_length", c.ffn_dim),
           ("llama.attention.head_count", c.n_heads), ("llama.attention.head_count_kv", c.n_kv_heads),
           ("llama.attention.layer_norm_rms_epsilon", float(c.norm_eps)),
           ("llama.rope.dimension_count", c.dim // c.n_heads), ("llama.rope.freq_base", float(c.rope_base)),
           ("llama.vocab_size", c.vocab),
           ("kakeya.train.preset", ck["preset"]), ("kakeya.train.seed", ("u64", ck["seed"])),
           ("kakeya.train.steps", ("u64", ck["steps"])), ("kakeya.train.best_step", ("u64", ck["best_step"]))]
    kvs += tokenizer_kvs(spm_model)
    tensors = []
    for tname, w in model.gguf_tensors():
        gtype = GGML_F16 if (f16 and w.ndim == 2) else GGML_F32
        tensors.append((tname, gtype, w))
    write_gguf(path, kvs, tensors)
    # The weights as exported, back into the model (F16-rounded matrices).
    with torch.no_grad():
        for p in model.parameters():
            if f16 and p.dim() == 2:
                p.copy_(p.half().float())


def reference_logits(model, tokens_file, positions, out_path):
    toks = np.fromfile(tokens_file, dtype="<u2")[:positions].astype(np.int64)
    model.eval()
    with torch.no_grad():
        logits = model(torch.from_numpy(toks)[None, :])[0].float().numpy()
    np.save(out_path, logits.astype("<f4"))
    return toks


def main():
    ap = argparse.ArgumentParser(description="export a checkpoint to GGUF + reference logits")
    ap.add_argument("ckpt")
    ap.add_argument("spm_model")
    ap.add_argument("out")
    ap.add_argument("--type", choices=["f16", "f32"], required=True)
    ap.add_argument("--name", required=True)
    ap.add_argument("--logits", default="")
    ap.add_argument("--tokens", default="")
    ap.add_argument("--positions", type=int, default=64)
    a = ap.parse_args()
    torch.set_num_threads(max(1, min(8, os.cpu_count() or 1)))
    model, ck = load_model(a.ckpt)
    export(model, ck, a.spm_model, a.out, a.type, a.name)
    h = hashlib.sha256(open(a.out, "rb").read()).hexdigest()
    print("export: %s %d bytes sha256 %s" % (a.out, os.path.getsize(a.out), h), flush=True)
    if a.logits:
        toks = reference_logits(model, a.tokens, a.positions, a.logits)
        print("export: %s logits [%d, %d] on tokens %s" % (a.logits, len(toks), model.c.vocab,
                                                         " ".join(map(str, toks.tolist()))), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
