#!/bin/bash
# Builds the CUDA backend, the CLI, its tests and benchmarks on the GPU machine and runs the
# stages named on the command line, logging to one folder that ends up as $OUT/logs.tgz (the
# device tool brings back at most 8 files). The machine has no Qt, muparser, nlohmann_json or
# CLI11: they come from the carried .deps (see bench/cuda/RESULTS.md for how to make it).
#   bench/cuda/gpu_run.sh tests tune repeat qmatmul cli registry failures isolate landscapes triton kt kt_examples live
#     remeasure winner paged paged_triton grouped grouped_triton a8w8_triton a8w8_native
#     [-- extra tune arguments]
set -o pipefail
OUT=${OUT:-/tmp/ktune_out}
LOG=/tmp/ktune_logs
mkdir -p "$OUT" "$LOG"
pack_logs() { tar czf "$OUT/logs.tgz" -C "$LOG" . || echo "could not pack the logs into $OUT/logs.tgz"; }
trap pack_logs EXIT
trap 'exit 130' INT TERM  # a timeout still brings the logs back
export LD_LIBRARY_PATH=$PWD/.deps/muparser/lib:$LD_LIBRARY_PATH
# zlib's headers where the machine lacks them: .deps/zlib (include/, lib/libz.a) from a Debian zlib1g-dev.
[ -f /usr/include/zlib.h ] || KTUNE_ZLIB=$PWD/.deps/zlib
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv | tee "$LOG/gpu.txt"
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DMUPARSER_ROOT=$PWD/.deps/muparser \
  -DCMAKE_PREFIX_PATH=$PWD/.deps/nl -DCLI11_INCLUDE_DIR=$PWD/.deps/nl/include \
  ${KTUNE_ZLIB:+-DZLIB_ROOT=$KTUNE_ZLIB} -DKTUNE_WITH_GUI=OFF -DKTUNE_WITH_CUDA=ON -DKTUNE_BUILD_BENCH=ON -DKTUNE_BUILD_TESTS=ON \
  >"$LOG/configure.log" 2>&1 || { tail -40 "$LOG/configure.log"; exit 1; }
# KTUNE_GPU_TARGETS="ktune": build only those targets (a stage that needs the CLI alone).
cmake --build build-gpu ${KTUNE_GPU_TARGETS:+--target $KTUNE_GPU_TARGETS} >"$LOG/build.log" 2>&1 ||
  { grep -E "error|FAILED" -A5 "$LOG/build.log" | head -60; exit 1; }
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
    tests) ctest --test-dir build-gpu -R "${KTUNE_GPU_TESTS:-^cuda/}" --timeout 240 --output-on-failure 2>&1 | tee "$LOG/tests.log" ;;
    tune) timeout 300 $bench tune --cache /tmp/ktune_bench_cache --best "$LOG/gemm_best.json" "${extra[@]}" 2>&1 | tee "$LOG/tune.log" ;;
    repeat) timeout 200 $bench repeat --cache /tmp/ktune_bench_cache --best "$LOG/gemm_best.json" 2>&1 | tee "$LOG/repeat.log" ;;
    qmatmul) timeout 200 $bench tune --dtype w8a16 --shapes 16x4096x4096,16x14336x4096,128x4096x4096 --cache /tmp/ktune_bench_cache_q --best "$LOG/qmatmul_best.json" 2>&1 | tee "$LOG/qmatmul.log" ;;
    cli)  # the ktune CLI on this backend: a user spec, a built-in family with tensor parallelism
      cmake --build build-gpu --target ktune >"$LOG/build_cli.log" 2>&1 || { tail -20 "$LOG/build_cli.log"; exit 1; }
      { build-gpu/app/cli/ktune devices &&
        timeout 120 build-gpu/app/cli/ktune tune --backend cuda --kernel-spec resources/kernels/cuda/examples/axpy.json \
          --shape "n=16777216" --no-save &&
        timeout 120 build-gpu/app/cli/ktune tune --backend cuda qmatmul --shape "batch=16 out=28672 in=4096" \
          --tp-size 2 --tp-split-dim out --no-save; } 2>&1 | tee "$LOG/cli.log" ;;
    registry)  # refresh the shipped registry of this GPU: tune its keys, apply what is new or faster (every device file to the logs)
      cmake --build build-gpu --target ktune >"$LOG/build_cli.log" 2>&1 || { tail -20 "$LOG/build_cli.log"; exit 1; }
      rm -rf /tmp/ktune_reg && mkdir -p /tmp/ktune_reg/cuda && cp tuned_data/cuda/*.json /tmp/ktune_reg/cuda/
      { timeout 200 build-gpu/app/cli/ktune tune gemm --backend cuda --shape "M=1,16,128,1024,4096 N=4096 K=4096" \
          --shape "M=16 N=14336 K=4096" --registry /tmp/ktune_reg --update-registry --output-dir /tmp/ktune_runs --run-name registry_gemm &&
        timeout 200 build-gpu/app/cli/ktune tune qmatmul --backend cuda --shape "batch=16,128 out=4096,14336 in=4096" \
          --registry /tmp/ktune_reg --update-registry --output-dir /tmp/ktune_runs --run-name registry_qmatmul; } 2>&1 | tee "$LOG/registry.log" | tail -40
      cp /tmp/ktune_reg/cuda/*.json "$LOG/" ;;
    failures) timeout 120 build-gpu/tests/cuda/cuda_test_failures_gpu 2>&1 | tee "$LOG/failures.log" ;;
    isolate)  # issue 11: the faults spec in a worker child (the default), gemm isolated vs in process
      k=build-gpu/app/cli/ktune
      { timeout 120 $k tune --backend cuda --kernel-spec tests/cuda/data/faults.json --shape n=1048576 \
          --max-ms-per-config 200 --output-dir /tmp/ktune_runs --run-name faults_isolated
        echo "faults exit=$?"; cut -d, -f1-5,24 /tmp/ktune_runs/faults_isolated/trials.csv
        for mode in isolate no-isolate; do
          timeout 150 $k tune gemm --backend cuda --shape "M=16,1024,4096 N=4096 K=4096" --$mode \
            --output-dir /tmp/ktune_runs --run-name gemm_$mode -q; echo "gemm --$mode exit=$? wall=${SECONDS}s"
        done
        python3 bench/cuda/compare_runs.py /tmp/ktune_runs/gemm_isolate /tmp/ktune_runs/gemm_no-isolate; } 2>&1 | tee "$LOG/isolate.log"
      cp -r /tmp/ktune_runs "$LOG/" ;;
    landscapes)  # exhaustive H100 runs for bench/strategies (one problem each), as $OUT/landscapes.tgz
      k=build-gpu/app/cli/ktune; L=/tmp/landscapes; rm -rf $L
      { timeout 150 $k tune gemm --backend cuda --shape "M=128 N=4096 K=4096" --max-samples 20 \
          --run-name h100_gemm --output-dir $L -q
        timeout 150 $k tune qmatmul --backend cuda --shape "batch=16 out=14336 in=4096" --max-samples 20 \
          --run-name h100_qmatmul --output-dir $L -q; ls -la $L/*; } 2>&1 | tee "$LOG/landscapes.log"
      tar czf "$OUT/landscapes.tgz" --exclude=.ktune.lock -C $L . ;;
    live)  # issue 15: strategies searching Kernel Tuner's convolution live (7,296 configs, ~6 s of NVRTC each:
      # too large for an exhaustive run here); LIVE_SEEDS, LIVE_STRATEGIES, LIVE_BUDGET; runs in $OUT/live_runs.tgz
      k=build-gpu/app/cli/ktune; L=/tmp/live_runs; d=resources/kernels/cuda/examples/kernel_tuner; mkdir -p $L
      for seed in ${LIVE_SEEDS:-1}; do for st in ${LIVE_STRATEGIES:-bayes genetic random}; do
        timeout 190 $k tune --backend cuda --kernel-spec $d/convolution.json --shape "image_width=4096 image_height=4096" \
          --warmup-ms 5 --strategy $st --budget ${LIVE_BUDGET:-100} --seed $seed --run-name conv_${st}_s$seed --output-dir $L -q \
          2>&1 | grep -E "^trials:|^  \*"
        echo "live $st seed $seed exit=${PIPESTATUS[0]} at ${SECONDS}s"
      done; done 2>&1 | tee -a "$LOG/live.log"
      tar czf "$OUT/live_runs.tgz" --exclude=.ktune.lock -C $L . ;;
    remeasure)  # issue 15: `ktune apply --remeasure` on this GPU: a short gemm run judged against the shipped registry
      k=build-gpu/app/cli/ktune; rm -rf /tmp/rm_reg /tmp/rm_runs && mkdir -p /tmp/rm_reg/cuda && cp tuned_data/cuda/*.json /tmp/rm_reg/cuda/
      { timeout 120 $k tune gemm --backend cuda --shape "M=16,128 N=4096 K=4096" --strategy random --budget 12 --seed 3 \
          --run-name g --output-dir /tmp/rm_runs --registry /tmp/rm_reg -q | tail -8
        timeout 120 $k apply /tmp/rm_runs/g --registry /tmp/rm_reg --remeasure --dry-run; echo "apply exit=$?"; } 2>&1 | tee "$LOG/remeasure.log" ;;
    kt_examples)  # issue 22: Kernel Tuner's stencil tuned exhaustively (48 configs, 31 valid) and pnpoly (5,456) by
      # a seeded random search of KT_PNPOLY_BUDGET configs (default 1000; "all": exhaustive, as pnpoly.py does, resumed
      # by the same stage again when its KT_TIMEOUT cuts it), then kt_examples_compare.py times their re-measured
      # winners with Kernel Tuner's method re-implemented in CuPy, in this call; runs in $OUT/kt_examples.tgz
      k=build-gpu/app/cli/ktune; L=/tmp/kt_examples; d=resources/kernels/cuda/examples/kernel_tuner; mkdir -p $L
      budget=${KT_PNPOLY_BUDGET:-1000}; pn=(--strategy random --budget $budget --seed 1); rm -rf $L/h100_kt_stencil
      if [ "$budget" = all ]; then pn=(); [ -d $L/h100_kt_pnpoly ] && pn=(--resume); else rm -rf $L/h100_kt_pnpoly; fi
      { timeout 120 $k tune --backend cuda --kernel-spec $d/stencil.json --shape "domain_width=4096 domain_height=2048" \
          --warmup-ms 5 --run-name h100_kt_stencil --output-dir $L -q 2>&1 | tail -15
        echo "stencil exit=${PIPESTATUS[0]} at ${SECONDS}s"
        timeout ${KT_TIMEOUT:-300} $k tune --backend cuda --kernel-spec $d/pnpoly.json --shape "n=20000000 vertices=600" \
          --max-mismatch 1e-5 --warmup-ms 5 "${pn[@]}" --run-name h100_kt_pnpoly --output-dir $L -q 2>&1 | tail -15
        echo "pnpoly (budget $budget) exit=${PIPESTATUS[0]} at ${SECONDS}s"
        for ex in stencil pnpoly; do python3 -c 'import csv, collections, sys
rows = list(csv.DictReader(open(sys.argv[1])))
print(sys.argv[1], collections.Counter(r["status"] for r in rows))' $L/h100_kt_$ex/trials.csv; done
        PYTHONUNBUFFERED=1 timeout 200 python3 bench/cuda/kt_examples_compare.py --stencil $L/h100_kt_stencil --pnpoly $L/h100_kt_pnpoly
        echo "compare exit=$? at ${SECONDS}s"; } 2>&1 | tee "$LOG/kt_examples.log"
      tar czf "$OUT/kt_examples.tgz" --exclude=.ktune.lock -C $L . ;;
    kt*)  # issue 15: Kernel Tuner's examples tuned exhaustively here, kept as landscapes ($OUT/kt_runs.tgz);
      # kt runs all three, kt_matmul|kt_convolution|kt_reduction one. A run cut by its timeout is journaled:
      # the same stage again resumes it.
      k=build-gpu/app/cli/ktune; L=/tmp/kt_runs; d=resources/kernels/cuda/examples/kernel_tuner; mkdir -p $L
      for ex in matmul convolution reduction; do
        [ "$s" = kt ] || [ "$s" = "kt_$ex" ] || continue
        resume=(); [ -d $L/h100_kt_$ex ] && resume=(--resume)
        case $ex in matmul) shape=(--shape WIDTH=4096) ;; convolution) shape=(--shape "image_width=4096 image_height=4096") ;; reduction) shape=(--shape n=80000000) ;; esac
        timeout ${KT_TIMEOUT:-280} $k tune --backend cuda --kernel-spec $d/$ex.json "${shape[@]}" --warmup-ms 5 \
          --run-name h100_kt_$ex --output-dir $L "${resume[@]}" -q 2>&1 | tail -15
        echo "kt $ex exit=${PIPESTATUS[0]} at ${SECONDS}s"; python3 -c 'import csv, collections, sys
rows = list(csv.DictReader(open(sys.argv[1])))
ok = [r for r in rows if r["status"] == "ok"]
print(collections.Counter(r["status"] for r in rows), "best", min((float(r["median_ns"]), r["id"]) for r in ok) if ok else None)' $L/h100_kt_$ex/trials.csv
      done 2>&1 | tee -a "$LOG/kt.log"
      tar czf "$OUT/kt_runs.tgz" --exclude=.ktune.lock -C $L . ;;
    triton)  # issue 11: examples/workers/triton_matmul.py against triton.autotune, same configs and shapes
      PYTHONUNBUFFERED=1 timeout $(( ${TRITON_DEADLINE:-575} - SECONDS )) python3 bench/triton/compare_autotune.py --ktune build-gpu/app/cli/ktune \
        --keep /tmp/ktune_triton ${TRITON_VARIANTS:-} 2>&1 | tee "$LOG/triton.log"
      tar czf "$OUT/triton_runs.tgz" -C /tmp/ktune_triton runs ;;
    winner)  # issue 19: a Triton worker run of three shapes: one winner and one number per shape in the
      # summary, results.json, the registry and diff; the run and registry come back as $OUT/winner.tgz
      k=build-gpu/app/cli/ktune; W=/tmp/winner; rm -rf $W && mkdir -p $W
      { timeout 400 $k tune --worker "python3 examples/workers/triton_matmul.py" --shape "M=16,1024,4096 N=4096 K=4096" \
          --run-name triton3 --output-dir $W/runs --registry $W/reg --update-registry
        echo "tune exit=$?"
        $k diff $W/runs/triton3 --registry $W/reg
        python3 -c 'import json, sys
for r in json.load(open(sys.argv[1]))["results"]:
    print("results.json", r["key"], r["config"], r["stats"]["latency_median_ns"], r["chosen_by"], r["search"]["latency_median_ns"], r["flags"])' \
          $W/runs/triton3/results.json
        python3 -c 'import json, sys, glob
for f in glob.glob(sys.argv[1] + "/*/*.json"):
    for fam, keys in json.load(open(f))["entries"].items():
        for k, e in keys.items():
            m = e["metadata"]
            print("registry", k, e["config"], e["stats"]["latency_median_ns"], m.get("chosen_by"), m.get("search_median_ns"), m.get("flags", []))' \
          $W/reg; } 2>&1 | tee "$LOG/winner.log"
      tar czf "$OUT/winner.tgz" --exclude=.ktune.lock -C $W . ;;
    paged)  # issue 25: paged_attention against its read ceiling (bench/cuda/paged_read.json, same pages) cold and
      # warm, and SDPA on the dense layout (sdpa_decode.py); PAGED_FULL, PAGED_RAGGED (shapes), PAGED_ARGS (default:
      # --space bench/cuda/paged_space.json: the values that won a search of 255 configs a shape, with L2HINT)
      k=build-gpu/app/cli/ktune; P=/tmp/paged_runs; rm -rf $P; mkdir -p $P
      shapes=(--shape "${PAGED_FULL:-num_sequences=16,64 num_q_heads=32 num_kv_heads=8 head_dim=128 page_size=16,64 max_model_len=4096 min_len=4096}"
              --shape "${PAGED_RAGGED:-num_sequences=35 num_q_heads=32 num_kv_heads=8 head_dim=128 page_size=16,64 max_model_len=8192 min_len=1}")
      { for mode in cold warm; do
          method=$([ $mode = cold ] && echo per_launch || echo amortized)
          timeout 280 $k tune --backend cuda paged_attention "${shapes[@]}" --method $method ${PAGED_ARGS:---space bench/cuda/paged_space.json} \
            --run-name attn_$mode --output-dir $P -q; echo "attention $mode exit=$? at ${SECONDS}s"
          timeout 120 $k tune --backend cuda --kernel-spec bench/cuda/paged_read.json "${shapes[@]}" --method $method \
            --run-name read_$mode --output-dir $P -q; echo "read $mode exit=$? at ${SECONDS}s"
        done
        python3 bench/cuda/sdpa_decode.py | tee $P/sdpa.jsonl
        python3 bench/cuda/paged_report.py $P/attn_cold $P/attn_warm $P/read_cold $P/read_warm $P/sdpa.jsonl; } 2>&1 | tee "$LOG/paged.log"
      tar czf "$OUT/paged_runs.tgz" --exclude=.ktune.lock -C $P . ;;
    paged_triton)  # issue 25: the Triton paged decode worker checked, then tuned beside the paged stage's native runs
      k=build-gpu/app/cli/ktune
      { PYTHONUNBUFFERED=1 timeout 200 python3 bench/triton/paged_decode_check.py --quick
        PYTHONUNBUFFERED=1 timeout 300 python3 bench/triton/paged_compare.py --ktune $k --native /tmp/paged_runs/attn_cold \
          --native /tmp/paged_runs/attn_warm --seconds ${PAGED_TRITON_SECONDS:-140} --output-dir /tmp/paged_triton; } 2>&1 | tee "$LOG/paged_triton.log"
      tar czf "$OUT/paged_triton.tgz" --exclude=.ktune.lock -C /tmp/paged_triton . ;;
    grouped)  # issue 24: grouped_gemm (fwd, dX, dW) on issue 24's three shapes, warm, beside torch._grouped_mm,
      # a per-expert torch.mm loop and cuBLAS's grouped GEMM (cublasGemmGroupedBatchedEx through ctypes, checked against
      # the loop first) on the same routing (grouped_torch.py); GROUPED_SECONDS of search per problem,
      # over bench/cuda/grouped_space.json (the default space with the Hopper kernel, WGMMA=1, beside mma.sync); the
      # decode shape's fwd and dX beside the read ceiling of its routed experts' weights (grouped_read.json);
      # GROUPED_SPACE, GROUPED_PASSES (e.g. fwd,dX) narrow the search, GROUPED_TEST=0 skips the GPU test (run by `tests`);
      # GROUPED_SEED (default 0) is the workload seed of the tunes, the baselines and the read ceiling alike: the routing
      # follows from it (at decode even which experts are read), and grouped_report.py refuses runs of different seeds;
      # GROUPED_SHAPES (default mixtral,deepseek,decode: grouped_torch.py's names) picks the shapes
      k=build-gpu/app/cli/ktune; G=/tmp/grouped_runs; rm -rf $G; mkdir -p $G
      declare -A grouped_shape=([mixtral]="experts=8 tokens=4096 topk=2 hidden=4096 intermediate=14336"
                                [deepseek]="experts=64 tokens=4096 topk=6 hidden=2048 intermediate=1408"
                                [decode]="experts=8 tokens=16 topk=2 hidden=4096 intermediate=14336")
      grouped_names=${GROUPED_SHAPES:-mixtral,deepseek,decode}
      # The SM clock, power and throttle reasons through the stage (clocks.csv beside the runs): an H100 lowers its
      # clocks within seconds of sustained load, so when each thing was timed matters (RESULTS.md section 12)
      nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active \
        --format=csv -lms 250 > $G/clocks.csv 2>&1 & smi=$!
      { [ "${GROUPED_TEST:-1}" = 1 ] && timeout 300 stdbuf -oL build-gpu/tests/cuda/cuda_test_grouped_gemm_gpu
        for name in ${grouped_names//,/ }; do
          shape=${grouped_shape[$name]:?"GROUPED_SHAPES: '$name' is not mixtral, deepseek or decode"}
          timeout 400 $k tune --backend cuda grouped_gemm --shape "$shape pass=${GROUPED_PASSES:-fwd,dX,dW}" --strategy random \
            --seed 1 --workload-seed ${GROUPED_SEED:-0} --space ${GROUPED_SPACE:-bench/cuda/grouped_space.json} \
            --time-budget ${GROUPED_SECONDS:-25}s --output-dir $G --run-name "g$(echo $shape | cut -d' ' -f1-3 | tr ' =' '_-')" -q
          echo "grouped $shape exit=$? at ${SECONDS}s"
        done
        python3 bench/cuda/grouped_torch.py --samples 20 --seed ${GROUPED_SEED:-0} --shapes $grouped_names | tee $G/torch.jsonl
        timeout 120 $k tune --backend cuda --kernel-spec bench/cuda/grouped_read.json --output-dir $G --run-name read_decode \
          --workload-seed ${GROUPED_SEED:-0} \
          --shape "experts=8 tokens=16 topk=2 hidden=4096 intermediate=14336 pass=fwd,dX" -q | tail -3
        python3 bench/cuda/grouped_report.py $G; } 2>&1 | tee "$LOG/grouped.log"
      kill $smi 2>/dev/null
      tar czf "$OUT/grouped_runs.tgz" --exclude=.ktune.lock -C $G . ;;
    grouped_triton)  # issue 24: the Triton grouped GEMM worker checked on a GPU, then tuned on the three shapes in all
      # passes (GROUPED_TRITON_SECONDS of search a problem), with top-N tables and the grouped stage's runs beside it
      rm -rf /tmp/grouped_triton
      { PYTHONUNBUFFERED=1 timeout 200 python3 bench/triton/grouped_check.py --quick
        PYTHONUNBUFFERED=1 timeout 480 python3 bench/triton/grouped_compare.py --ktune build-gpu/app/cli/ktune --workload-seed ${GROUPED_SEED:-0} \
          --seconds ${GROUPED_TRITON_SECONDS:-25} --native /tmp/grouped_runs --output-dir /tmp/grouped_triton; } 2>&1 |
        tee "$LOG/grouped_triton.log"
      tar czf "$OUT/grouped_triton.tgz" --exclude=.ktune.lock -C /tmp/grouped_triton . ;;
    a8w8_triton)  # issue 23: aiter's block-scaled fp8 GEMM as a Triton worker, M = 16, 128, 1024 at N = K = 4096 tuned
      # (A8W8_SECONDS of search), its winners beside torch._scaled_mm (blockwise, per-tensor), then exported for aiter
      rm -rf /tmp/a8w8_triton
      { PYTHONUNBUFFERED=1 timeout 480 build-gpu/app/cli/ktune tune --worker "python3 examples/workers/triton_a8w8_blockscale.py" \
          --shape "M=16,128,1024 N=4096 K=4096 q_dtype=fp8_e4m3" --strategy random --seed 1 \
          --time-budget ${A8W8_SECONDS:-90}s --output-dir /tmp/a8w8_triton --run-name a8w8 -q
        echo "a8w8_triton exit=$? at ${SECONDS}s"
        python3 bench/triton/a8w8_report.py /tmp/a8w8_triton/a8w8 --markdown
        build-gpu/app/cli/ktune apply /tmp/a8w8_triton/a8w8 --registry /tmp/a8w8_triton/reg --accept-flagged &&
          build-gpu/app/cli/ktune registry export --format aiter --family-from /tmp/a8w8_triton/a8w8 \
            --registry /tmp/a8w8_triton/reg --arch gfx942 -o /tmp/a8w8_triton/aiter; } 2>&1 | tee "$LOG/a8w8_triton.log"
      tar czf "$OUT/a8w8_triton.tgz" --exclude=.ktune.lock -C /tmp/a8w8_triton . ;;
    a8w8_native)  # issue 23: the native CUDA gemm_a8w8_blockscale (fp8 wgmma, scales promoted per K block; int8) validated
      # (A8W8_TEST=0 skips its GPU test), tuned at M = A8W8_M (default 16, 128, 1024, 4096) on each N x K of A8W8_NK
      # (default 4096 x 4096 and DeepSeek-V3's four) with A8W8_NATIVE_SECONDS of random search a shape
      # (--max-mismatch 0.01: fp8 wgmma's accumulation, RESULTS.md section 14; each winner paired with the family's
      # baseline, cuBLASLt block-scaled, in the run itself), then torch._scaled_mm blockwise and per-tensor timed
      # on the same shapes beside the winners (a8w8_torch.py: settled, with both clocks). Then int8 (mma.sync, exact int32 sums a K
      # block: the default tolerance), unless A8W8_INT8=0: tuned at M = A8W8_INT8_M (default 16, 128, 1024) on
      # A8W8_INT8_NK (default 4096 x 4096) with A8W8_INT8_SECONDS (default 10) a shape, its winners beside
      # torch._int_mm (int8 -> int32, unscaled: a lower bound on the work, not the same op). A8W8_SPACE: a space
      # file for the fp8 tune (default the family's)
      N8=/tmp/a8w8_native; rm -rf $N8
      a8w8_m=${A8W8_M:-16,128,1024,4096}
      a8w8_nk=${A8W8_NK:-4096x4096,2112x7168,7168x2048,24576x1536,7168x16384}
      a8w8_shapes=()
      for nk in ${a8w8_nk//,/ }; do a8w8_shapes+=(--shape "M=$a8w8_m N=${nk%x*} K=${nk#*x} q_dtype=fp8_e4m3"); done
      int8_m=${A8W8_INT8_M:-16,128,1024} int8_nk=${A8W8_INT8_NK:-4096x4096} int8_shapes=() int8_args=()
      for nk in ${int8_nk//,/ }; do int8_shapes+=(--shape "M=$int8_m N=${nk%x*} K=${nk#*x} q_dtype=int8"); done
      { [ "${A8W8_TEST:-1}" = 1 ] && timeout 480 build-gpu/tests/cuda/cuda_test_a8w8_blockscale_gpu
        timeout 540 build-gpu/app/cli/ktune tune --backend cuda gemm_a8w8_blockscale "${a8w8_shapes[@]}" \
          --strategy random --seed 1 --max-mismatch 0.01 --time-budget ${A8W8_NATIVE_SECONDS:-10}s \
          ${A8W8_SPACE:+--space "$A8W8_SPACE"} --output-dir $N8 --run-name native -q
        echo "a8w8_native exit=$? at ${SECONDS}s"
        if [ "${A8W8_INT8:-1}" = 1 ]; then
          timeout 300 build-gpu/app/cli/ktune tune --backend cuda gemm_a8w8_blockscale "${int8_shapes[@]}" \
            --strategy random --seed 1 --time-budget ${A8W8_INT8_SECONDS:-10}s --output-dir $N8 --run-name int8 -q
          echo "a8w8_native int8 exit=$? at ${SECONDS}s"
          int8_args=(--int8 $N8/int8 --int8-m "$int8_m" --int8-nk "$int8_nk")
        fi
        python3 bench/cuda/a8w8_torch.py --native $N8/native --m "$a8w8_m" --nk "$a8w8_nk" "${int8_args[@]}"; } 2>&1 |
        tee "$LOG/a8w8_native.log"
      tar czf "$OUT/a8w8_native.tgz" --exclude=.ktune.lock -C $N8 . ;;
    *) echo "unknown stage $s"; exit 2 ;;
  esac
  echo "stage $s done at ${SECONDS}s"
done
