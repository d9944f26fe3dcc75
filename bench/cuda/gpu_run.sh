#!/bin/bash
# Builds the CUDA backend, its tests and benchmarks on the GPU machine and runs the stages named
# on the command line (tests, tune, repeat), logging to $OUT. The machine has no Qt and no
# muparser: muparser comes from the carried .deps/muparser.
#   bench/cuda/gpu_run.sh tests tune repeat qmatmul cli registry failures [-- extra tune arguments]
set -o pipefail
OUT=${OUT:-/tmp/ktune_out}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=$PWD/.deps/muparser/lib:$LD_LIBRARY_PATH
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv | tee "$OUT/gpu.txt"
cmake -S . -B build-gpu -G Ninja -DMUPARSER_ROOT=$PWD/.deps/muparser -DKTUNE_WITH_GUI=OFF -DKTUNE_BUILD_TESTS=ON \
  >"$OUT/configure.log" 2>&1 || { tail -40 "$OUT/configure.log"; exit 1; }
cmake --build build-gpu --target cuda_test_kernel_spec cuda_test_gemm_gpu cuda_test_failures_gpu cuda_test_resume_gpu cuda_bench_gemm \
  >"$OUT/build.log" 2>&1 || { grep -E "error|FAILED" -A5 "$OUT/build.log" | head -60; exit 1; }
echo "built in ${SECONDS}s"
stages=()
extra=()
while [ $# -gt 0 ]; do
  if [ "$1" = "--" ]; then shift; extra=("$@"); break; fi
  stages+=("$1"); shift
done
bench=build-gpu/bench/cuda/cuda_bench_gemm
for s in "${stages[@]}"; do
  case $s in
    tests) ctest --test-dir build-gpu -R '^cuda/' --timeout 240 --output-on-failure 2>&1 | tee "$OUT/tests.log" ;;
    tune) timeout 300 $bench tune --cache /tmp/ktune_bench_cache --best "$OUT/gemm_best.json" "${extra[@]}" 2>&1 | tee "$OUT/tune.log" ;;
    repeat) timeout 200 $bench repeat --cache /tmp/ktune_bench_cache --best "$OUT/gemm_best.json" 2>&1 | tee "$OUT/repeat.log" ;;
    qmatmul) timeout 200 $bench tune --dtype w8a16 --shapes 16x4096x4096,16x14336x4096,128x4096x4096 --cache /tmp/ktune_bench_cache_q --best "$OUT/qmatmul_best.json" 2>&1 | tee "$OUT/qmatmul.log" ;;
    cli)  # the ktune CLI on this backend: a user spec, a built-in family with tensor parallelism
      cmake --build build-gpu --target ktune >"$OUT/build_cli.log" 2>&1 || { tail -20 "$OUT/build_cli.log"; exit 1; }
      { build-gpu/app/cli/ktune devices &&
        timeout 120 build-gpu/app/cli/ktune tune --backend cuda --kernel-spec resources/kernels/cuda/examples/axpy.json \
          --shape "n=16777216" --no-save &&
        timeout 120 build-gpu/app/cli/ktune tune --backend cuda qmatmul --shape "batch=16 out=28672 in=4096" \
          --tp-size 2 --tp-split-dim out --no-save; } 2>&1 | tee "$OUT/cli.log" ;;
    registry)  # refresh the shipped H100 registry: tune its keys, apply what is new or faster
      cmake --build build-gpu --target ktune >"$OUT/build_cli.log" 2>&1 || { tail -20 "$OUT/build_cli.log"; exit 1; }
      rm -rf /tmp/ktune_reg && mkdir -p /tmp/ktune_reg/cuda && cp tuned_data/cuda/*.json /tmp/ktune_reg/cuda/
      { timeout 200 build-gpu/app/cli/ktune tune gemm --backend cuda --shape "M=1,16,128,1024,4096 N=4096 K=4096" \
          --shape "M=16 N=14336 K=4096" --registry /tmp/ktune_reg --update-registry --output-dir /tmp/ktune_runs --run-name h100_gemm &&
        timeout 200 build-gpu/app/cli/ktune tune qmatmul --backend cuda --shape "batch=16,128 out=4096,14336 in=4096" \
          --registry /tmp/ktune_reg --update-registry --output-dir /tmp/ktune_runs --run-name h100_qmatmul; } 2>&1 | tail -40 | tee "$OUT/registry.log"
      cp /tmp/ktune_reg/cuda/nvidia-h100-80gb-hbm3.json "$OUT/" ;;
    failures) timeout 120 build-gpu/tests/cuda/cuda_test_failures_gpu 2>&1 | tee "$OUT/failures.log" ;;
    *) echo "unknown stage $s"; exit 2 ;;
  esac
  echo "stage $s done at ${SECONDS}s"
done
