#!/usr/bin/env bash
# The main job, end to end on this machine:
#   deps (apt) -> build -> a throwaway bare repository served by a real `git daemon` on 127.0.0.1
#   -> a kakeya-runner serving it -> `kakeya run env-probe --wait` and `kakeya run generate --wait`
#   through the git server -> results fetched back and printed.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bash "$root/scripts/deps.sh"
bash "$root/scripts/build.sh" "$root/build" -DKAKEYA_TESTS=OFF -DKAKEYA_BENCH=OFF
bin="$root/build"

work="$(mktemp -d "${TMPDIR:-/tmp}/kakeya-demo-XXXXXX")"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  [ -n "${KAKEYA_KEEP_DEMO:-}" ] || rm -rf "$work"
}
trap cleanup EXIT

# A bare repository with one commit on main, served read/write by git daemon on loopback.
git init -q --bare -b main "$work/srv/bus.git"
git -C "$work/srv/bus.git" config receive.denyNonFastForwards true
tmpclone="$work/seed"; git init -q -b main "$tmpclone"
echo "Kakeya demo bus" > "$tmpclone/README"
git -C "$tmpclone" add README
git -C "$tmpclone" -c user.name=demo -c user.email=demo@kakeya.invalid commit -qm "seed"
git -C "$tmpclone" push -q "$work/srv/bus.git" main
port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
git daemon --reuseaddr --listen=127.0.0.1 --port="$port" --base-path="$work/srv" --export-all \
  --enable=receive-pack "$work/srv" >"$work/daemon.log" 2>&1 &
pids+=($!)
for _ in $(seq 50); do (echo >/dev/tcp/127.0.0.1/"$port") 2>/dev/null && break; sleep 0.1; done
remote="git://127.0.0.1:$port/bus.git"

cat >"$work/runner.yaml" <<YAML
remote_url: $remote
branch_patterns: ["kakeya/req/**"]
runner_id: demo-runner
labels: [cpu]
work_dir: $work/runner
catalog_path: $root/manifests/presets.yaml
tool_dirs: [$bin]
models:
  target: $root/models/stories260K-f32.gguf
poll_interval_s: 1
heartbeat_s: 5
lease_s: 60
YAML
"$bin/kakeya-runner" run --config "$work/runner.yaml" >"$work/runner.log" 2>&1 &
pids+=($!)

export KAKEYA_REMOTE="$remote"
echo "== kakeya run env-probe (remote $remote)"
"$bin/kakeya" run env-probe --wait 600 --fetch "$work/results/env-probe"
echo "== env-probe report (fetched back through the git server)"
cat "$work/results/env-probe/results/report.json"
if "$bin/kakeya" presets generate >/dev/null 2>&1; then
  echo "== kakeya run generate on the bundled stories260K model"
  "$bin/kakeya" run generate -p prompt="Once upon a time" -p max_new_tokens=120 --wait 600 \
    --fetch "$work/results/generate"
  echo "== story (prompt + generated text)"
  python3 -c 'import json,sys; print("Once upon a time" + json.load(open(sys.argv[1]))["text"])' \
    "$work/results/generate/results/report.json"
fi
echo "== done: the runner log is $work/runner.log (kept with KAKEYA_KEEP_DEMO=1)"
