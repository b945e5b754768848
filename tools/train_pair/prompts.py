#!/usr/bin/env python3
"""Cut the specdecode-bench prompts of the pycode pair from held-out corpus files.

  prompts.py FILES_TXT OUT.json [--n 16] [--lines 30] [--root /usr/lib/python3.11/]

FILES_TXT is corpus.py's files.txt. Only held-out files under --root are used (the CPython
standard library, PSF licence; the models never trained on them). Per file, in sorted-path
order: the first line at or after the middle of the file that starts a top-level or method
`def`/`class` (no decorator above it), and the --lines lines from there, ended after the last
whole line. Files with fewer lines are skipped. The first n files give the timed prompts, the
next one the warm-up. Writes {"source", "rule", "prompts": [...], "warmup", "files": [...]},
the format `kakeya-engine specdecode-bench --workload file --prompts-file` reads.
"""
import argparse
import json
import re
import sys

START = re.compile(r"^\s*(def|class|async def) ")


def cut(text, n_lines):
    lines = text.split("\n")
    for i in range(len(lines) // 2, len(lines) - n_lines):
        if START.match(lines[i]) and not lines[i - 1].lstrip().startswith("@"):
            return "\n".join(lines[i:i + n_lines]) + "\n"
    return None


def main():
    ap = argparse.ArgumentParser(description="specdecode-bench prompts from held-out files")
    ap.add_argument("files_txt")
    ap.add_argument("out")
    ap.add_argument("--n", type=int, default=16)
    ap.add_argument("--lines", type=int, default=30)
    ap.add_argument("--root", default="/usr/lib/python3.11/")
    a = ap.parse_args()
    paths = []
    with open(a.files_txt, encoding="utf-8") as f:
        for line in f:
            split, path = line.rstrip("\n").split("\t", 1)
            if split == "heldout" and path.startswith(a.root):
                paths.append(path)
    chunks, used = [], []
    for path in sorted(paths):
        with open(path, encoding="utf-8") as f:
            c = cut(f.read(), a.lines)
        if c is not None and c not in chunks:
            chunks.append(c)
            used.append(path)
        if len(chunks) == a.n + 1:
            break
    if len(chunks) < a.n + 1:
        sys.exit("only %d usable held-out files under %s; need %d" % (len(chunks), a.root, a.n + 1))
    doc = {"source": "held-out files of the pycode corpus (tools/train_pair/corpus.py) under " + a.root,
           "rule": "from the first def/class line at or after the middle of each file, %d lines" % a.lines,
           "prompts": chunks[:a.n], "warmup": chunks[a.n], "files": used}
    with open(a.out, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1, ensure_ascii=False)
        f.write("\n")
    print("prompts: %d + warm-up from %s .. %s" % (a.n, used[0], used[-1]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
