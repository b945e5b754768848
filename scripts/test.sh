#!/usr/bin/env bash
# The test suite: deps, a warnings-as-errors build, every test (unit, engine, integration against
# real git servers on loopback), then the AddressSanitizer/UBSan build of the suite and a short
# libFuzzer run of every fuzz target (tests/fuzz/run.sh; KAKEYA_FUZZ_SECONDS is the run's total).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bash "$root/scripts/deps.sh"
jobs="$(nproc)"

echo "== build (Release, -Werror)"
KAKEYA_BUILD_TYPE=Release bash "$root/scripts/build.sh" "$root/build-test" -DKAKEYA_WERROR=ON -DKAKEYA_TESTS=ON -DKAKEYA_BENCH=ON
echo "== tests"
(cd "$root/build-test" && ctest --output-on-failure -j "$jobs" --timeout 900)

if [ "${KAKEYA_SKIP_SANITIZE:-0}" != 1 ]; then
  echo "== tests under AddressSanitizer + UBSan"
  KAKEYA_BUILD_TYPE=Debug bash "$root/scripts/build.sh" "$root/build-asan" -DKAKEYA_WERROR=ON \
    -DKAKEYA_SANITIZE=ON -DKAKEYA_TESTS=ON -DKAKEYA_BENCH=OFF
  (cd "$root/build-asan" && ASAN_OPTIONS=detect_leaks=0 ctest --output-on-failure -j "$jobs" --timeout 1800 \
    -LE slow)
fi

if [ -x "$root/tests/fuzz/run.sh" ] && [ "${KAKEYA_SKIP_FUZZ:-0}" != 1 ]; then
  echo "== fuzz every target (tests/fuzz: GGUF reader, bus documents, branch view, log redactor, catalog and runner-config YAML; short run)"
  FUZZ_SECONDS="${KAKEYA_FUZZ_SECONDS:-60}" bash "$root/tests/fuzz/run.sh"
fi
echo "== all tests passed"
