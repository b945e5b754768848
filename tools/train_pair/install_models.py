#!/usr/bin/env python3
"""Install the files of a run_train.sh OUTDIR into models/ (what the repository commits).

  install_models.py OUTDIR CORPUS_DIR SPM_MODEL ENGINE [--models models/] [--keep-f16 DIR]

Checks every file's sha256 against OUTDIR/train-report.json (the target rejoined from its
parts first), then writes into --models:
  pycode-target-q8_0.gguf     `ENGINE quantize target-f16.gguf ... q8_0` (the engine's writer)
  pycode-draft-f32.gguf       the draft as trained
  pycode-target.logits.npy, pycode-draft.logits.npy   the PyTorch reference logits
  pycode.reference.json       {"tokens": the 64 reference token ids, "source"}
  pycode.heldout.txt          the held-out corpus paths (CORPUS_DIR/files.txt "heldout" rows)
  pycode.model                the SentencePiece model
and, with --keep-f16 DIR, the rejoined F16 target as DIR/pycode-target-f16.gguf (not committed).
Prints the size and sha256 of each file written.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

from corpus import sha256_file  # beside this script


def main():
    ap = argparse.ArgumentParser(description="install run_train.sh results into models/")
    ap.add_argument("outdir")
    ap.add_argument("corpus_dir")
    ap.add_argument("spm_model")
    ap.add_argument("engine")
    ap.add_argument("--models", default="models")
    ap.add_argument("--keep-f16", default="")
    a = ap.parse_args()
    rep = json.load(open(os.path.join(a.outdir, "train-report.json")))
    tmp = tempfile.mkdtemp()
    try:
        if a.keep_f16:
            os.makedirs(a.keep_f16, exist_ok=True)
        f16 = os.path.join(a.keep_f16 or tmp, "pycode-target-f16.gguf")
        parts = sorted(p for p in os.listdir(a.outdir) if p.startswith("target-f16.gguf.part-"))
        with open(f16, "wb") as out:
            for p in parts:
                with open(os.path.join(a.outdir, p), "rb") as f:
                    shutil.copyfileobj(f, out)
        checks = [("target-f16.gguf", f16)] + [(n, os.path.join(a.outdir, n)) for n in
                                               ("draft-f32.gguf", "target.logits.npy", "draft.logits.npy")]
        for name, path in checks:
            want = rep["files"][name]["sha256"]
            if sha256_file(path) != want:
                sys.exit("%s: sha256 %s, train-report.json says %s" % (path, sha256_file(path), want))
        os.makedirs(a.models, exist_ok=True)
        m = lambda n: os.path.join(a.models, n)  # noqa: E731
        subprocess.run([a.engine, "quantize", f16, m("pycode-target-q8_0.gguf"), "q8_0"], check=True)
        shutil.copyfile(os.path.join(a.outdir, "draft-f32.gguf"), m("pycode-draft-f32.gguf"))
        shutil.copyfile(os.path.join(a.outdir, "target.logits.npy"), m("pycode-target.logits.npy"))
        shutil.copyfile(os.path.join(a.outdir, "draft.logits.npy"), m("pycode-draft.logits.npy"))
        shutil.copyfile(a.spm_model, m("pycode.model"))
        with open(m("pycode.reference.json"), "w") as f:
            json.dump({"tokens": rep["reference_tokens"],
                       "source": "the first %d ids of heldout.u16 (tokenizer.py encode)" % len(rep["reference_tokens"])},
                      f)
            f.write("\n")
        with open(os.path.join(a.corpus_dir, "files.txt"), encoding="utf-8") as f, \
                open(m("pycode.heldout.txt"), "w", encoding="utf-8") as out:
            for line in f:
                split, path = line.rstrip("\n").split("\t", 1)
                if split == "heldout":
                    out.write(path + "\n")
        written = [f16] + [m(n) for n in ("pycode-target-q8_0.gguf", "pycode-draft-f32.gguf", "pycode-target.logits.npy",
                                          "pycode-draft.logits.npy", "pycode.model", "pycode.reference.json",
                                          "pycode.heldout.txt")]
        for p in written:
            print("%-40s %10d  %s" % (os.path.basename(p), os.path.getsize(p), sha256_file(p)))
    finally:
        shutil.rmtree(tmp)
    return 0


if __name__ == "__main__":
    sys.exit(main())
