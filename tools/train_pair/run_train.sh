#!/usr/bin/env bash
# Train the draft/target pair on one GPU, export both to GGUF, write reference logits.
#
#   run_train.sh OUTDIR            (run from the bundle directory or anywhere: paths are ours)
#
# The bundle directory holds this script, corpus.py, tokenizer.py, model.py, train.py,
# export_gguf.py, pycode.model and the token files train.u16 / heldout.u16 (tokenizer.py encode).
# Environment: PYTHON (default python3), TARGET_BUDGET_S (default 230), DRAFT_BUDGET_S (default 80),
# SEED (default 17), MICRO=1 (CPU test sizes: micro presets, a few steps each).
#
# OUTDIR receives 7 files (each <= 15 MiB) plus the report and the log:
#   target-f16.gguf.part-aa .. -ad   the F16 target, split -b 15M; rejoin with
#                                    `cat target-f16.gguf.part-* > target-f16.gguf`
#   draft-f32.gguf                   the F32 draft
#   target.logits.npy, draft.logits.npy   PyTorch float32 logits [64, 4096] of the weights as
#                                    exported, on the first 64 tokens of heldout.u16
#   train-report.json                both loss curves, step counts, device, wall times, sha256 of
#                                    every whole file (the target before splitting)
#   train.log                        everything printed
set -euo pipefail
if [[ $# -ne 1 ]]; then
  echo "usage: run_train.sh OUTDIR" >&2
  exit 64
fi
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
OUT=$1
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
PY=${PYTHON:-python3}
SEED=${SEED:-17}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
exec > >(tee "$OUT/train.log") 2>&1
T0=$(date +%s)
echo "run_train: start $(date -u +%FT%TZ), out $OUT, python $($PY -c 'import sys; print(sys.version.split()[0])')"
if command -v nvidia-smi >/dev/null; then nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true; fi

if [[ ${MICRO:-0} == 1 ]]; then
  TARGET=(--preset micro-target --max-steps ${MICRO_STEPS:-60} --eval-every 20 --eval-windows 8)
  DRAFT=(--preset micro-draft --max-steps ${MICRO_STEPS:-60} --eval-every 20 --eval-windows 8)
else
  TARGET=(--preset target --budget-s "${TARGET_BUDGET_S:-230}")
  DRAFT=(--preset draft --budget-s "${DRAFT_BUDGET_S:-80}")
fi

$PY "$HERE/train.py" --data "$HERE" --out "$WORK/target.pt" --seed "$SEED" --curve "$WORK/target.curve.json" "${TARGET[@]}"
T1=$(date +%s)
$PY "$HERE/train.py" --data "$HERE" --out "$WORK/draft.pt" --seed "$SEED" --curve "$WORK/draft.curve.json" "${DRAFT[@]}"
T2=$(date +%s)
$PY "$HERE/export_gguf.py" "$WORK/target.pt" "$HERE/pycode.model" "$WORK/target-f16.gguf" --type f16 \
  --name kakeya-pycode-target --logits "$OUT/target.logits.npy" --tokens "$HERE/heldout.u16" --positions 64
$PY "$HERE/export_gguf.py" "$WORK/draft.pt" "$HERE/pycode.model" "$OUT/draft-f32.gguf" --type f32 \
  --name kakeya-pycode-draft --logits "$OUT/draft.logits.npy" --tokens "$HERE/heldout.u16" --positions 64
(cd "$WORK" && split -b 15M target-f16.gguf "$OUT/target-f16.gguf.part-")
T3=$(date +%s)

$PY - "$WORK" "$OUT" "$T0" "$T1" "$T2" "$T3" "$SEED" "$HERE" <<'PYEOF'
import hashlib, json, os, platform, sys
work, out, t0, t1, t2, t3, seed, here = sys.argv[1:]
t0, t1, t2, t3 = map(int, (t0, t1, t2, t3))
def sha(p):
    return hashlib.sha256(open(p, "rb").read()).hexdigest()
files = {}
for name in ["target-f16.gguf"]:
    files[name] = {"bytes": os.path.getsize(os.path.join(work, name)), "sha256": sha(os.path.join(work, name))}
for name in sorted(os.listdir(out)):
    if name not in ("train.log", "train-report.json"):
        files[name] = {"bytes": os.path.getsize(os.path.join(out, name)), "sha256": sha(os.path.join(out, name))}
inputs = {n: sha(os.path.join(here, n)) for n in ("train.u16", "heldout.u16", "pycode.model", "train.py",
                                                  "model.py", "export_gguf.py", "run_train.sh")}
import numpy as np
ref_tokens = np.fromfile(os.path.join(here, "heldout.u16"), dtype="<u2")[:64].tolist()
rep = {"target": json.load(open(os.path.join(work, "target.curve.json"))),
       "draft": json.load(open(os.path.join(work, "draft.curve.json"))),
       "seed": int(seed), "reference_tokens": ref_tokens, "files": files, "inputs_sha256": inputs,
       "wall_s": {"target": t1 - t0, "draft": t2 - t1, "export": t3 - t2, "total": t3 - t0},
       "host": platform.node(), "platform": platform.platform(),
       "command": "run_train.sh OUTDIR with TARGET_BUDGET_S=%s DRAFT_BUDGET_S=%s MICRO=%s" % (
           os.environ.get("TARGET_BUDGET_S", "230"), os.environ.get("DRAFT_BUDGET_S", "80"), os.environ.get("MICRO", "0"))}
json.dump(rep, open(os.path.join(out, "train-report.json"), "w"), indent=1)
for n, f in files.items():
    print("run_train: %-26s %10d bytes  sha256 %s" % (n, f["bytes"], f["sha256"]))
PYEOF
echo "run_train: done in $(( $(date +%s) - T0 )) s; rejoin the target with: cat target-f16.gguf.part-* > target-f16.gguf"
ls -l "$OUT"
