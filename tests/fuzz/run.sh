#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (-fsanitize=fuzzer,address,undefined) in their own build
# directory and fuzzes each for FUZZ_SECONDS (default 60): gguf_fuzz seeded with models/*.gguf and
# tests/data/reference/*.gguf; catalog_fuzz and runner_config_fuzz (the strict YAML readers)
# seeded with manifests/presets.yaml, deploy/runner.example.yaml and tests/fuzz/seeds/<target>/.
# Exits non-zero on a crash, a sanitizer report or a build failure. Crash reproducers are left in
# $BUILD_DIR/artifacts/<target>/.
#   usage: tests/fuzz/run.sh [extra libFuzzer flags...]     FUZZ_TARGETS="catalog_fuzz" to pick
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BUILD_DIR="${BUILD_DIR:-$ROOT/build-fuzz}"
FUZZ_SECONDS="${FUZZ_SECONDS:-60}"
JOBS="${JOBS:-2}"
TARGETS=(${FUZZ_TARGETS:-gguf_fuzz catalog_fuzz runner_config_fuzz})

command -v clang >/dev/null || { echo "run.sh: clang not found" >&2; exit 2; }
command -v clang++ >/dev/null || { echo "run.sh: clang++ not found" >&2; exit 2; }

generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
cmake -S "$ROOT" -B "$BUILD_DIR" "${generator[@]}" \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DKAKEYA_FUZZ=ON -DKAKEYA_TESTS=ON -DKAKEYA_BENCH=OFF >/dev/null
cmake --build "$BUILD_DIR" --target "${TARGETS[@]}" -j "$JOBS"

shopt -s nullglob
# seeds_of TARGET DIR: copies the target's seed files into DIR.
seeds_of() {
  case "$1" in
    gguf_fuzz) cp -f "$ROOT"/models/*.gguf "$ROOT"/tests/data/reference/*.gguf "$2/" ;;
    catalog_fuzz) cp -f "$ROOT/manifests/presets.yaml" "$ROOT"/tests/fuzz/seeds/catalog_fuzz/* "$2/" ;;
    runner_config_fuzz) cp -f "$ROOT/deploy/runner.example.yaml" "$ROOT"/tests/fuzz/seeds/runner_config_fuzz/* "$2/" ;;
    *) echo "run.sh: no seeds for $1" >&2; exit 2 ;;
  esac
}
# Extra flags per target (the YAML readers share a dictionary of syntax and keys).
flags_of() {
  case "$1" in
    catalog_fuzz | runner_config_fuzz) echo "-dict=$ROOT/tests/fuzz/yaml.dict -max_len=65536" ;;
    *) echo "" ;;
  esac
}

for target in "${TARGETS[@]}"; do
  seeds="$BUILD_DIR/fuzz-seeds/$target"
  corpus="$BUILD_DIR/fuzz-corpus/$target"
  artifacts="$BUILD_DIR/artifacts/$target"
  mkdir -p "$seeds" "$corpus" "$artifacts"
  seeds_of "$target" "$seeds"
  fuzzer="$(find "$BUILD_DIR" -type f -name "$target" -perm -u+x | head -n 1)"
  [[ -n "$fuzzer" ]] || { echo "run.sh: $target binary not found under $BUILD_DIR" >&2; exit 2; }
  echo "run.sh: fuzzing $fuzzer for ${FUZZ_SECONDS}s"
  # shellcheck disable=SC2046  # flags_of prints separate flags
  "$fuzzer" -max_total_time="$FUZZ_SECONDS" -rss_limit_mb=2048 -timeout=20 \
    -artifact_prefix="$artifacts/" -print_final_stats=1 $(flags_of "$target") "$@" "$corpus" "$seeds"
done
