#!/usr/bin/env bash
# The test suite: deps, a warnings-as-errors build, every test (unit, engine, integration against
# real git servers on loopback), then the AddressSanitizer/UBSan build of the suite and a short
# libFuzzer run of every fuzz target (tests/fuzz/run.sh; KAKEYA_FUZZ_SECONDS is the run's total).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"

# Each stage's wall time, printed as it ends and listed again when the script exits, passing or
# not: CI runs this on a 2-core machine and must stay well under 45 minutes, and this says where
# the time goes.
stage_times=""
stage_start=$SECONDS
stage_done() {  # $1: the stage that just ended
  local took=$((SECONDS - stage_start))
  stage_times+="$1 ${took} s, "
  echo "== $1: ${took} s"
  stage_start=$SECONDS
}
trap 'echo "== stage times: ${stage_times:-none yet, }${SECONDS} s in all"' EXIT

bash "$root/scripts/deps.sh"
stage_done deps
jobs="$(nproc)"

# ctest in build dir $1 with the remaining args; when a test fails, the failing tests run once
# more, alone, and their output (gtest's failure lines) ends the log, where a CI page shows it. The
# stage still fails whatever the second run says (a pass there marks the test as flaky, not fixed).
run_ctest() {
  local dir="$1"; shift
  if (cd "$dir" && ctest --output-on-failure "$@"); then return 0; fi
  echo "== the failing tests again, alone (the stage fails either way)"
  (cd "$dir" && ctest --rerun-failed --output-on-failure --timeout 1800 2>&1 | tail -n 120) || true
  echo "== tests failed in $dir"
  return 8
}

echo "== build (Release, -Werror)"
KAKEYA_BUILD_TYPE=Release bash "$root/scripts/build.sh" "$root/build-test" -DKAKEYA_WERROR=ON -DKAKEYA_TESTS=ON -DKAKEYA_BENCH=ON
stage_done build
echo "== tests"
run_ctest "$root/build-test" -j "$jobs" --timeout 900
stage_done tests

if [ "${KAKEYA_SKIP_SANITIZE:-0}" != 1 ]; then
  echo "== tests under AddressSanitizer + UBSan"
  # -g1: the line tables a sanitizer report's stack needs, without full debug info; it compiles
  # the heaviest files about a tenth faster than -g (-O1 would compile them 30-60% slower).
  # A unity build (CMake batches of 8 .cpp files per translation unit, headers and template code
  # compiled once a batch): the same sources as the Release build above, which compiles each
  # library and program file alone (the test suites are unity batches in both: tests/CMakeLists.txt).
  KAKEYA_BUILD_TYPE=Debug bash "$root/scripts/build.sh" "$root/build-asan" -DKAKEYA_WERROR=ON \
    -DKAKEYA_SANITIZE=ON -DKAKEYA_TESTS=ON -DKAKEYA_BENCH=OFF -DCMAKE_C_FLAGS_DEBUG=-g1 -DCMAKE_CXX_FLAGS_DEBUG=-g1 \
    -DCMAKE_UNITY_BUILD=ON
  stage_done "sanitized build"
  ASAN_OPTIONS=detect_leaks=0 run_ctest "$root/build-asan" -j "$jobs" --timeout 1800
  stage_done "sanitized tests"
fi

if [ -x "$root/tests/fuzz/run.sh" ] && [ "${KAKEYA_SKIP_FUZZ:-0}" != 1 ]; then
  echo "== fuzz every target (tests/fuzz: GGUF reader, bus documents, branch view, log redactor, catalog and runner-config YAML, SSH signatures; short run)"
  FUZZ_SECONDS="${KAKEYA_FUZZ_SECONDS:-60}" bash "$root/tests/fuzz/run.sh"
  stage_done "fuzz build and run"
fi
echo "== all tests passed"
