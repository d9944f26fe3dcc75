#!/usr/bin/env python3
"""The Triton paged decode worker (examples/workers/triton_paged_decode.py) beside the native CUDA
`paged_attention` family, on the same shapes and with the same measurement method: tunes the worker
over the shapes of each native run given (its results.json), within a time budget, and prints per
shape and method the native winner's µs, the worker's, native / worker and both configs.

    python3 bench/triton/paged_compare.py --ktune build-gpu/app/cli/ktune \\
        --native /tmp/paged_runs/attn_cold --native /tmp/paged_runs/attn_warm [--seconds 140]

A native run is one of gpu_run.sh's paged stage (attn_cold: --method per_launch, attn_warm:
amortized); each needs a tune of the worker with its method. --seconds is the search time of all
of them together, split evenly over the (shape, method) problems (ktune's --time-budget per
problem, a random search; Triton compiles about 1 s a config, on every core at once); start-up,
workloads and the re-measure of the best few come on top (15 to 25 s a run): about 3 minutes for
the paged stage's 6 shapes, cold and warm, on an H100.
"""
import argparse
import os
import shlex
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
WORKER = os.path.join(ROOT, "examples", "workers", "triton_paged_decode.py")
sys.path.insert(0, os.path.join(ROOT, "bench"))
from ktune_results import one_seed, winners  # noqa: E402


def shape_arg(key):
    return " ".join(f"{k}={v}" for k, v in key)


def tune_worker(args, method, keys, seconds, seed):
    """Runs ktune on the worker over `keys` with `method`, `seconds` of search per problem and the
    native runs' workload `seed` (the same page tables); the run's folder."""
    name = f"triton_paged_{method}"
    cmd = [args.ktune, "tune", "--worker", f"{shlex.quote(sys.executable)} {shlex.quote(WORKER)} {args.worker_flags}",
           "--method", method, "--strategy", args.strategy, "--seed", "1", "--workload-seed", str(seed), "--time-budget", f"{seconds:.0f}s",
           "--output-dir", args.output_dir, "--run-name", name, "-q"]
    for key in keys:
        cmd += ["--shape", shape_arg(key)]
    print("$ " + " ".join(shlex.quote(c) for c in cmd), flush=True)
    t0 = time.monotonic()
    code = subprocess.call(cmd)
    print(f"worker tune ({method}) exit={code} in {time.monotonic() - t0:.0f} s", flush=True)
    return os.path.join(args.output_dir, name)


def config_text(cfg):
    return " ".join(f"{k}={v}" for k, v in sorted(cfg.items()))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--ktune", required=True, help="the ktune CLI")
    ap.add_argument("--native", action="append", required=True, help="a native paged_attention run folder")
    ap.add_argument("--seconds", type=float, default=140, help="search time of the worker's tunes together")
    ap.add_argument("--strategy", default="random", help="ktune's --strategy for the worker's tunes")
    ap.add_argument("--worker-flags", default="", help="flags narrowing the worker's space, e.g. '--kv-splits 1,4'")
    ap.add_argument("--output-dir", default="/tmp/ktune_paged_triton", help="where the worker's runs go")
    args = ap.parse_args()

    native = {}  # method -> winners
    seeds = {}
    for run in args.native:
        w = winners(run)
        native.setdefault(w.method, {}).update(w.by_shape)
        seeds[run] = w.seed
    seed = one_seed(seeds, "the native runs")
    problems = sum(len(w) for w in native.values())
    worker = {}
    for method, won in native.items():
        run = tune_worker(args, method, sorted(won), args.seconds / max(1, problems), seed)
        worker[method] = winners(run).by_shape if os.path.exists(os.path.join(run, "results.json")) else {}

    print("| shape | method | native µs | Triton µs | native / Triton | native config | Triton config |")
    print("|---|---|---|---|---|---|---|")
    for method, won in native.items():
        for key, (us, cfg) in sorted(won.items()):
            t_us, t_cfg = worker[method].get(key, (float("nan"), {}))
            print(f"| {shape_arg(key)} | {method} | {us:.1f} | {t_us:.1f} | {us / t_us:.3f} | {config_text(cfg)} | "
                  f"{config_text(t_cfg) or 'no result'} |")


if __name__ == "__main__":
    main()
