#!/bin/bash
# Profiles one config of a built-in CUDA family with Nsight Compute on the GPU machine (after
# gpu_run.sh has built build-gpu): speed of light, memory, warp stalls and the scheduler, in
# text on stdout and as $OUT/<name>.ncu-rep (ktune's output and ncu's in $OUT/<name>.tune.log).
# The tune runs in this process (--no-isolate) and per launch, so that ncu sees plain launches,
# not graph replays.
#   bench/cuda/ncu_config.sh NAME FAMILY SHAPE CONFIG_JSON [KERNEL_REGEX] [-- extra tune arguments]
#   e.g. bench/cuda/ncu_config.sh a8w8_m4096 gemm_a8w8_blockscale "M=4096 N=7168 K=2048" \
#          '{"BLOCK_M":128,"BLOCK_N":256,"num_stages":3,"SPLITK":1,"PROMOTE_K":128,"OVERLAP":0,"PERSISTENT":1}'
set -eo pipefail
name=$1 family=$2 shape=$3 config=$4 kernel=$2
shift 4
if [ $# -gt 0 ] && [ "$1" != "--" ]; then kernel=$1; shift; fi
[ "${1:-}" = "--" ] && shift
OUT=${OUT:-/tmp/ktune_out}
mkdir -p "$OUT"
space=$(mktemp --suffix=.json)
echo "{\"configs\": [$config]}" > "$space"
rm -f "$OUT/$name.ncu-rep"  # an earlier report of that name must not pass for this one
ncu --target-processes all --kernel-name "regex:^${kernel}\$" --launch-skip 5 --launch-count 1 \
  --section SpeedOfLight --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis \
  --section WarpStateStats --section SchedulerStats --section LaunchStats --section Occupancy \
  -o "$OUT/$name" -f \
  build-gpu/app/cli/ktune tune --backend cuda "$family" --shape "$shape" --space "$space" --no-isolate \
    --method per_launch --no-save -q "$@" > "$OUT/$name.tune.log" 2>&1 || true
# A config that fails validation (fp8 needs --max-mismatch 0.01) is never timed, so ncu profiles
# nothing: say so, with ktune's own words, instead of printing nothing.
if [ ! -f "$OUT/$name.ncu-rep" ]; then
  echo "ncu_config.sh: no launch of $kernel was profiled; ktune said:" >&2
  tail -n 15 "$OUT/$name.tune.log" >&2
  exit 1
fi
ncu --import "$OUT/$name.ncu-rep" --print-summary none
