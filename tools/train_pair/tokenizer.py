#!/usr/bin/env python3
"""Train the pair's SentencePiece BPE tokenizer on the corpus (corpus.py's OUTDIR) and encode the
train / held-out documents into uint16 token files.

  tokenizer.py train CORPUS_DIR OUT_PREFIX      writes OUT_PREFIX.model and OUT_PREFIX.vocab
  tokenizer.py encode MODEL CORPUS_DIR OUTDIR   writes OUTDIR/{train,heldout}.u16 and tokens.json
  tokenizer.py ids MODEL FILE...                prints one JSON line per file: {"path", "ids"},
                                                sentencepiece's ids of the file's UTF-8 text
                                                (the engine's tokenizer test reads them)

Token files: little-endian uint16 ids; each document is BOS (id 1) followed by
sentencepiece's ids for the document text (`encode(text)`; no dummy-prefix space),
documents in corpus order. The engine's `llama` tokenizer must give the same ids for a document
with add_bos (tests/engine/trained_pair_test.cpp checks it).

Settings (SPM_SETTINGS below) are the ones the GGUF tokenizer keys describe (export_gguf.py):
BPE, 4096 pieces, byte fallback, identity normalisation, whitespace runs kept (indentation
survives as ▁ runs), no dummy prefix, unk 0 / bos 1 / eos 2, no pad.
Works with sentencepiece 0.1.97 (Debian 12) and 0.2.
"""
import json
import os
import random
import sys

import sentencepiece as spm

SPM_SETTINGS = dict(
    model_type="bpe",
    vocab_size=4096,
    byte_fallback=True,
    normalization_rule_name="identity",
    remove_extra_whitespaces=False,
    allow_whitespace_only_pieces=True,
    split_digits=True,
    add_dummy_prefix=False,  # lines of code start at column 0: no invented leading space
    character_coverage=0.9995,  # 1.0 needs 4,448 pieces for characters alone; rare ones go to bytes
    max_sentence_length=4192,
    input_sentence_size=400000,
    shuffle_input_sentence=True,
    num_threads=2,
    unk_id=0,
    bos_id=1,
    eos_id=2,
    pad_id=-1,
    hard_vocab_limit=True,
)
SEED = 17
BOS_ID = 1


def read_documents(path):
    with open(path, encoding="utf-8") as f:
        for line in f:
            yield json.loads(line)


def train(corpus_dir, out_prefix):
    """Trains on the train split's lines (sentencepiece's sentences): a seeded sample of at most
    input_sentence_size non-blank lines, so training takes minutes on 2 cores."""
    lines = []
    for doc in read_documents(os.path.join(corpus_dir, "train.jsonl")):
        lines.extend(l for l in doc.split("\n") if l.strip())
    rng = random.Random(SEED)
    rng.shuffle(lines)
    lines = lines[: SPM_SETTINGS["input_sentence_size"]]
    if hasattr(spm, "set_random_generator_seed"):
        spm.set_random_generator_seed(SEED)
    os.makedirs(os.path.dirname(out_prefix) or ".", exist_ok=True)
    print("tokenizer: training on %d lines" % len(lines), flush=True)
    spm.SentencePieceTrainer.train(sentence_iterator=iter(lines), model_prefix=out_prefix,
                                   minloglevel=1, **SPM_SETTINGS)
    print("tokenizer: wrote %s.model" % out_prefix, flush=True)


def encode(model, corpus_dir, outdir):
    import array
    sp = spm.SentencePieceProcessor(model_file=model)
    os.makedirs(outdir, exist_ok=True)
    stats = {}
    for split in ("train", "heldout"):
        ids = array.array("H")
        docs = 0
        for doc in read_documents(os.path.join(corpus_dir, split + ".jsonl")):
            ids.append(BOS_ID)
            ids.extend(sp.encode(doc))
            docs += 1
        if sys.byteorder != "little":
            ids.byteswap()
        with open(os.path.join(outdir, split + ".u16"), "wb") as f:
            ids.tofile(f)
        stats[split] = {"documents": docs, "tokens": len(ids)}
        print("tokenizer: %s %d documents, %d tokens" % (split, docs, len(ids)), flush=True)
    stats["settings"] = SPM_SETTINGS
    stats["seed"] = SEED
    with open(os.path.join(outdir, "tokens.json"), "w") as f:
        json.dump(stats, f, indent=2)


def ids(model, paths):
    sp = spm.SentencePieceProcessor(model_file=model)
    for path in paths:
        with open(path, encoding="utf-8") as f:
            text = f.read()
        sys.stdout.write(json.dumps({"path": path, "ids": sp.encode(text)}) + "\n")


def main(argv):
    if len(argv) >= 4 and argv[1] == "ids":
        ids(argv[2], argv[3:])
    elif len(argv) == 4 and argv[1] == "train":
        train(argv[2], argv[3])
    elif len(argv) == 5 and argv[1] == "encode":
        encode(argv[2], argv[3], argv[4])
    else:
        sys.stderr.write(__doc__)
        return 64
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
