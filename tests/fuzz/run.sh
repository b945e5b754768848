#!/usr/bin/env bash
# Builds the GGUF fuzzer with clang (-fsanitize=fuzzer,address,undefined) in its own build
# directory and fuzzes for FUZZ_SECONDS (default 60), seeded with models/*.gguf and
# tests/data/reference/*.gguf. Exits non-zero on a crash, a sanitizer report or a build failure.
# Crash reproducers are left in $BUILD_DIR/artifacts/.
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
cmake --build "$BUILD_DIR" --target gguf_fuzz -j "$JOBS"

seeds="$BUILD_DIR/fuzz-seeds"
corpus="$BUILD_DIR/fuzz-corpus"
artifacts="$BUILD_DIR/artifacts"
mkdir -p "$seeds" "$corpus" "$artifacts"
shopt -s nullglob
for f in "$ROOT"/models/*.gguf "$ROOT"/tests/data/reference/*.gguf; do cp -f "$f" "$seeds/"; done

fuzzer="$(find "$BUILD_DIR" -type f -name gguf_fuzz -perm -u+x | head -n 1)"
[[ -n "$fuzzer" ]] || { echo "run.sh: gguf_fuzz binary not found under $BUILD_DIR" >&2; exit 2; }

echo "run.sh: fuzzing $fuzzer for ${FUZZ_SECONDS}s"
exec "$fuzzer" -max_total_time="$FUZZ_SECONDS" -rss_limit_mb=2048 -timeout=20 \
  -artifact_prefix="$artifacts/" -print_final_stats=1 "$@" "$corpus" "$seeds"
