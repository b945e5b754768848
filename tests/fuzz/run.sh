#!/usr/bin/env bash
# Builds every libFuzzer target (tests/fuzz/CMakeLists.txt, kakeya_fuzz_target) with clang
# (-fsanitize=fuzzer,address,undefined) in its own build directory and fuzzes each in turn,
# seeded with real inputs (bundled GGUF files, bus documents, request trees, log streams, the
# shipped catalog and runner config), with a dictionary where the target declares one.
# FUZZ_SECONDS (default 60) is the fuzzing time of the whole run, shared evenly by the targets
# (at least 8 s each); up to JOBS targets run at once (default 2). Exits non-zero on a crash, a
# sanitizer report, a violated invariant or a build failure. Crash reproducers are left in
# $BUILD_DIR/artifacts/<target>/.
#   usage: tests/fuzz/run.sh [extra libFuzzer flags...]
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BUILD_DIR="${BUILD_DIR:-$ROOT/build-fuzz}"
FUZZ_SECONDS="${FUZZ_SECONDS:-60}"
JOBS="${JOBS:-2}"

command -v clang >/dev/null || { echo "run.sh: clang not found" >&2; exit 2; }
command -v clang++ >/dev/null || { echo "run.sh: clang++ not found" >&2; exit 2; }

generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
cmake -S "$ROOT" -B "$BUILD_DIR" "${generator[@]}" \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DKAKEYA_FUZZ=ON -DKAKEYA_TESTS=ON -DKAKEYA_BENCH=OFF >/dev/null

list="$BUILD_DIR/fuzz_targets.txt"
[[ -s "$list" ]] || { echo "run.sh: no fuzz targets in $list" >&2; exit 2; }
mapfile -t targets < <(cut -d' ' -f1 "$list")
cmake --build "$BUILD_DIR" --target "${targets[@]}" -j "$JOBS"

per_target=$(( FUZZ_SECONDS / ${#targets[@]} ))
(( per_target < 8 )) && per_target=8
echo "run.sh: fuzzing ${#targets[@]} targets for ${per_target}s each, $JOBS at a time"

status=0
pids=()
names=()
wait_one() {
  local pid="${pids[0]}" name="${names[0]}"
  pids=("${pids[@]:1}")
  names=("${names[@]:1}")
  if wait "$pid"; then
    echo "run.sh: $name: ok ($(grep -E '^stat::number_of_executed_units' "$BUILD_DIR/artifacts/$name/log" | awk '{print $2}') runs)"
  else
    echo "run.sh: $name FAILED; log and reproducers in $BUILD_DIR/artifacts/$name/" >&2
    tail -n 40 "$BUILD_DIR/artifacts/$name/log" >&2
    status=1
  fi
}

while read -r name binary seeds dict; do
  corpus="$BUILD_DIR/fuzz-corpus/$name"
  artifacts="$BUILD_DIR/artifacts/$name"
  mkdir -p "$corpus" "$artifacts"
  "$binary" -max_total_time="$per_target" -rss_limit_mb=2048 -timeout=20 \
    -artifact_prefix="$artifacts/" -print_final_stats=1 ${dict:+"$dict"} "$@" "$corpus" "$seeds" >"$artifacts/log" 2>&1 &
  pids+=("$!")
  names+=("$name")
  (( ${#pids[@]} >= JOBS )) && wait_one
done <"$list"
while (( ${#pids[@]} > 0 )); do wait_one; done
exit "$status"
