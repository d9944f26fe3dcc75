#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, ASan + UBSan) in build-fuzz and runs each one for
# SECONDS (default 60) from its seed corpus in tests/fuzz/corpus/<target>. Fails on the first
# crash, sanitizer report, leak or raw library exception; the input that did it is left in
# build-fuzz/artifacts/ (make it a case in tests/core/test_bad_input.cpp).
#   tests/fuzz/run.sh [SECONDS] [TARGET...]
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
CC=${CC:-clang} CXX=${CXX:-clang++} cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DKTUNE_BUILD_FUZZERS=ON -DKTUNE_WITH_GUI=OFF -DKTUNE_WITH_CUDA=OFF -DKTUNE_WITH_HIP=OFF \
  -DKTUNE_BUILD_TESTS=OFF -DKTUNE_BUILD_BENCH=OFF "${launcher[@]}"
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  for src in tests/fuzz/fuzz_*.cpp; do targets+=("$(basename "$src" .cpp)"); done
fi
cmake --build build-fuzz --parallel "$(nproc)" --target "${targets[@]}"

mkdir -p build-fuzz/artifacts
for t in "${targets[@]}"; do
  seeds=tests/fuzz/corpus/${t#fuzz_}
  work=build-fuzz/corpus/${t#fuzz_}  # grows as coverage grows; the seeds in git stay as they are
  mkdir -p "$work"
  echo "== $t: ${seconds} s from $seeds"
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    "build-fuzz/tests/fuzz/$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
    -print_final_stats=1 -artifact_prefix="build-fuzz/artifacts/$t-" "$work" "$seeds"
done
echo "fuzzing passed: ${#targets[@]} targets, ${seconds} s each"
