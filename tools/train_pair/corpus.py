#!/usr/bin/env python3
"""Build the training corpus of the trained draft/target pair (issue 17): Python source that ships
with Debian 12, split into train / held-out by a hash of each file's path.

Selection (stable on any Debian 12 host with the same packages):
  * every `*.py` file under the roots (default /usr/lib/python3.11 and /usr/lib/python3/dist-packages),
    found by a sorted walk that does not follow symlinks;
  * excluded: a path with a `test`, `tests` or `idle_test` directory component, a `test_*.py` name,
    and the top-level dist-packages entries of the training toolchain itself (--exclude-top: torch,
    numpy, sentencepiece and what they pull in), so installing the trainer does not change the corpus;
  * files that are not valid UTF-8 are skipped (and counted).
Split: a file is held out when sha256(path)[0] < HOLDOUT_BYTE (13/256, about 5 %).
Documents are the files' texts in sorted-path order, joined by DOC_SEPARATOR in the text files;
the tokenizer step encodes each document separately (BOS between them), so the separator never
reaches the model.

Writes into OUTDIR (keep it outside the repository):
  files.txt          the selected paths, one per line, "train\tPATH" or "heldout\tPATH"
  train.jsonl, heldout.jsonl   one JSON string (the document text) per line, in path order
  corpus.json        counts, bytes, the sha256 of files.txt and of each .jsonl, the settings
Stdlib only. Usage: corpus.py OUTDIR [--root DIR]... [--exclude-top NAME]...
"""
import argparse
import hashlib
import json
import os
import sys

DEFAULT_ROOTS = ["/usr/lib/python3.11", "/usr/lib/python3/dist-packages"]
# Top-level dist-packages entries of `apt-get install python3-torch python3-numpy
# python3-sentencepiece` on Debian 12 (those packages and the python3-* they pull in), never part
# of the corpus, so the corpus is the same before and after the trainer is installed.
DEFAULT_EXCLUDE_TOP = [
    "PIL", "_hypothesis_ftz_detector.py", "_hypothesis_pytestplugin.py", "astunparse", "attr", "attrs",
    "certifi", "chardet", "charset_normalizer", "click", "colorama", "dateutil", "functorch", "future",
    "hypothesis", "idna", "isympy.py", "libfuturize", "libpasteurize", "mpmath", "numpy", "olefile",
    "past", "psutil", "requests", "sentencepiece", "sortedcontainers", "sympy", "torch", "torchgen",
    "typing_extensions.py", "urllib3"]
TEST_DIRS = {"test", "tests", "idle_test"}
HOLDOUT_BYTE = 13


def is_excluded(rel_parts, exclude_top, in_dist_packages):
    if any(p in TEST_DIRS for p in rel_parts[:-1]):
        return True
    if rel_parts[-1].startswith("test_"):
        return True
    if in_dist_packages and rel_parts[0] in exclude_top:
        return True
    return False


def select_files(roots, exclude_top):
    """Sorted list of absolute paths of the corpus files."""
    out = []
    for root in roots:
        in_dist = os.path.basename(root.rstrip("/")) == "dist-packages"
        for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
            dirnames.sort()
            for name in sorted(filenames):
                if not name.endswith(".py"):
                    continue
                path = os.path.join(dirpath, name)
                if os.path.islink(path) or not os.path.isfile(path):
                    continue
                rel = os.path.relpath(path, root).split(os.sep)
                if is_excluded(rel, exclude_top, in_dist):
                    continue
                out.append(path)
    return sorted(set(out))


def is_heldout(path):
    return hashlib.sha256(path.encode("utf-8")).digest()[0] < HOLDOUT_BYTE


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("outdir")
    ap.add_argument("--root", action="append", help="source root (repeatable; default: %s)" % DEFAULT_ROOTS)
    ap.add_argument("--exclude-top", action="append",
                    help="top-level dist-packages entry to leave out (repeatable; default: the trainer's packages)")
    ap.add_argument("--max-files", type=int, default=0, help="keep only the first N files (micro tests)")
    a = ap.parse_args()
    roots = a.root or DEFAULT_ROOTS
    exclude_top = set(a.exclude_top if a.exclude_top is not None else DEFAULT_EXCLUDE_TOP)
    os.makedirs(a.outdir, exist_ok=True)

    paths = select_files(roots, exclude_top)
    if a.max_files:
        paths = paths[: a.max_files]
    stats = {"train": {"files": 0, "bytes": 0}, "heldout": {"files": 0, "bytes": 0},
             "skipped_not_utf8": 0}
    listing = []
    outs = {s: open(os.path.join(a.outdir, s + ".jsonl"), "w", encoding="utf-8") for s in ("train", "heldout")}
    for path in paths:
        with open(path, "rb") as f:
            raw = f.read()
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            stats["skipped_not_utf8"] += 1
            continue
        if not text.strip():
            continue
        split = "heldout" if is_heldout(path) else "train"
        listing.append(split + "\t" + path)
        outs[split].write(json.dumps(text, ensure_ascii=False) + "\n")
        stats[split]["files"] += 1
        stats[split]["bytes"] += len(raw)
    for f in outs.values():
        f.close()
    files_txt = os.path.join(a.outdir, "files.txt")
    with open(files_txt, "w", encoding="utf-8") as f:
        f.write("\n".join(listing) + "\n")
    meta = {
        "roots": roots,
        "exclude_top": sorted(exclude_top),
        "excluded_dirs": sorted(TEST_DIRS),
        "excluded_names": "test_*.py",
        "holdout_rule": "sha256(path)[0] < %d" % HOLDOUT_BYTE,
        "max_files": a.max_files,
        "files_txt_sha256": sha256_file(files_txt),
        "train_jsonl_sha256": sha256_file(os.path.join(a.outdir, "train.jsonl")),
        "heldout_jsonl_sha256": sha256_file(os.path.join(a.outdir, "heldout.jsonl")),
        **stats,
    }
    with open(os.path.join(a.outdir, "corpus.json"), "w") as f:
        json.dump(meta, f, indent=2)
    print("corpus: train %d files %d bytes, heldout %d files %d bytes, skipped %d (not UTF-8); files.txt sha256 %s"
          % (stats["train"]["files"], stats["train"]["bytes"], stats["heldout"]["files"], stats["heldout"]["bytes"],
             stats["skipped_not_utf8"], meta["files_txt_sha256"]), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
