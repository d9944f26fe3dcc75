#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, ASan + UBSan) in build-fuzz and runs each one for
# SECONDS (default 60) from its seed corpus in tests/fuzz/corpus/<target>. A target stops at its
# first crash, sanitizer report, leak or raw library exception, and the script then fails naming
# it; the input that did it is left in build-fuzz/artifacts/ (make it a case in
# tests/core/test_bad_input.cpp).
#   tests/fuzz/run.sh [SECONDS] [TARGET...]
#   KTUNE_FUZZ_JOBS=N    targets run N at a time (default: one per core)
#   KTUNE_FUZZ_TESTS=ON  builds the core and CLI test suites in build-fuzz too, under the same
#                        sanitizers (run them with `ctest --test-dir build-fuzz -R '^(core|cli)/'`):
#                        CI's sanitizer tests and fuzzing share this one instrumented build
#   KTUNE_FUZZ_BUILD_ONLY=1  configures and builds, runs nothing (CI builds while other tests run)
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds=${1:-60}
shift || true

if ! command -v "${CXX:-clang++}" > /dev/null; then
  echo "run.sh: ${CXX:-clang++} not found; install clang and its libFuzzer runtime:" \
    "apt-get install --no-install-recommends clang libclang-rt-14-dev" >&2
  exit 2
fi
launcher=()
if command -v ccache > /dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
tests=${KTUNE_FUZZ_TESTS:-OFF}
# Line tables only, as OSS-Fuzz builds: reports keep their file:line stacks, and the compile of
# everything the suites link is a tenth shorter than with full debug information.
CC=${CC:-clang} CXX=${CXX:-clang++} cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -gline-tables-only -DNDEBUG" -DKTUNE_BUILD_FUZZERS=ON \
  -DKTUNE_WITH_GUI=OFF -DKTUNE_WITH_CUDA=OFF -DKTUNE_WITH_HIP=OFF -DKTUNE_BUILD_TESTS="$tests" -DKTUNE_BUILD_BENCH=OFF "${launcher[@]}"
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  for src in tests/fuzz/fuzz_*.cpp; do targets+=("$(basename "$src" .cpp)"); done
fi
if [ "$tests" = ON ]; then
  cmake --build build-fuzz --parallel "$(nproc)"  # the suites, the ktune they run, the fuzz targets
else
  cmake --build build-fuzz --parallel "$(nproc)" --target "${targets[@]}"
fi
echo "run.sh: build-fuzz configured and built in ${SECONDS} s"
if [ "${KTUNE_FUZZ_BUILD_ONLY:-0}" = 1 ]; then exit 0; fi

# Each target runs on a core of its own, KTUNE_FUZZ_JOBS (default: all cores) at a time; its
# output is shown when it ends, not interleaved with the others'.
fuzz() {
  local t=$1 seeds=tests/fuzz/corpus/${1#fuzz_}
  local work=build-fuzz/corpus/${1#fuzz_}  # grows as coverage grows; the seeds in git stay as they are
  mkdir -p "$work"
  echo "== $t: ${seconds} s from $seeds"
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    "build-fuzz/tests/fuzz/$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
    -print_final_stats=1 -artifact_prefix="build-fuzz/artifacts/$t-" "$work" "$seeds"
}
mkdir -p build-fuzz/artifacts build-fuzz/logs
jobs=${KTUNE_FUZZ_JOBS:-$(nproc)}
running=() failed=()
finish_oldest() {
  local t=${running[0]%%:*} pid=${running[0]#*:}
  running=("${running[@]:1}")
  wait "$pid" || failed+=("$t")
  cat "build-fuzz/logs/$t.log"
}
for t in "${targets[@]}"; do
  [ ${#running[@]} -lt "$jobs" ] || finish_oldest
  fuzz "$t" > "build-fuzz/logs/$t.log" 2>&1 &
  running+=("$t:$!")
done
while [ ${#running[@]} -gt 0 ]; do finish_oldest; done
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzzing FAILED: ${failed[*]} (their inputs are in build-fuzz/artifacts/)" >&2
  exit 1
fi
echo "fuzzing passed: ${#targets[@]} targets, ${seconds} s each"
